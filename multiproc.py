"""Launch one training process per visible GPU through torchrun:

    python -m multiproc train.py -m Tacotron2 ...     # = torchrun --standalone --nproc-per-node <GPUs> train.py ...

NPROC_PER_NODE overrides the process count (e.g. for CPU runs with gloo). For several nodes call torchrun itself:
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 train.py ...

When a rank fails, torchrun itself ends in a traceback of its own and exit status 1. Here the ranks' own messages
stand alone and the exit status is the first failed rank's: 2 for a user's mistake (its one `error:` line already
printed), 75 for a preempted run that a scheduler should requeue (common/preemption.py).
"""
from __future__ import annotations

import logging
import os
import sys

import torch
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.run import main as torchrun_main


def torchrun_arguments(script_and_args: list[str]) -> list[str]:
    if not script_and_args:
        raise SystemExit("usage: python -m multiproc train.py [train.py flags]")
    count = os.environ.get("NPROC_PER_NODE") or str(max(torch.cuda.device_count(), 1))
    return ["--standalone", f"--nproc-per-node={count}", *script_and_args]


def launch(script_and_args: list[str]) -> int:
    """torchrun with these arguments; the exit status of the first rank that failed, or 0."""
    # torchrun's agent logs each rank's exit and the closing signals it sends the others; a rank's own output says
    # what went wrong.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    try:
        torchrun_main(torchrun_arguments(script_and_args))
    except ChildFailedError as error:
        _, failure = error.get_first_failure()
        if failure.exitcode > 0:
            return failure.exitcode
        print(f"multiproc: rank {failure.local_rank} died of signal {-failure.exitcode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]))
