"""Launch one training process per visible GPU through torchrun:

    python -m multiproc train.py -m Tacotron2 ...     # = torchrun --standalone --nproc-per-node <GPUs> train.py ...

NPROC_PER_NODE overrides the process count (e.g. for CPU runs with gloo). For several nodes call torchrun itself:
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 train.py ...
"""
from __future__ import annotations

import os
import sys

import torch
from torch.distributed.run import main as torchrun_main


def torchrun_arguments(script_and_args: list[str]) -> list[str]:
    if not script_and_args:
        raise SystemExit("usage: python -m multiproc train.py [train.py flags]")
    count = os.environ.get("NPROC_PER_NODE") or str(max(torch.cuda.device_count(), 1))
    return ["--standalone", f"--nproc-per-node={count}", *script_and_args]


if __name__ == "__main__":
    torchrun_main(torchrun_arguments(sys.argv[1:]))
