"""Ranks of a toy run (tests/common/toy_recipes.py) into which a test injects a fault, to see that every rank stops
promptly when one fails with something other than an error that every rank meets together.

Run as a module (`python -m tests.common.failing_ranks OUTPUT [train.py flags]`) it is one rank of the toy regression
as train.py runs it (common.distributed.run_entry_point), with the fault that the environment variable FAULT names:
    save_on_rank_0        rank 0's checkpoint write raises a RuntimeError (what torch.save raises on a full disk)
    step_on_rank_1        rank 1's training step raises a RuntimeError (a bug)
    user_error_on_rank_1  rank 1's training step raises a UserError that the other rank does not meet
    rank_0_stuck          as step_on_rank_1, while rank 0 is stuck in the same step (no collective to fail)
Each fault strikes at the second optimizer step; the rank it strikes writes the time to OUTPUT/fault_time first.
run_failing_ranks starts one process per rank, as srun does, and returns how each ended and when."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from common.distributed import run_entry_point
from common.errors import UserError
from common.trainer import Trainer
from tests.common.toy_recipes import free_port, toy_args, toy_recipe

FAULT_STEP = 2  # the optimizer step at which the fault strikes: after one step, so the ranks have synchronised
SAVE_FAULT = "unexpected pos 1536 vs 1024 (a fault injected into the checkpoint write)"
STEP_FAULT = "a fault injected into the training step"


class TrainerWithAFault(Trainer):
    fault = ""  # which fault strikes: set before train()

    def note_the_time(self) -> None:
        (Path(self.settings.output) / "fault_time").write_text(repr(time.time()))

    def write_checkpoint(self, *args, **keywords) -> None:
        if self.fault == "save_on_rank_0" and self.context.rank == 0 and self.iteration == FAULT_STEP:
            self.note_the_time()
            raise RuntimeError(SAVE_FAULT)
        super().write_checkpoint(*args, **keywords)

    def train_step(self, micro_batches: list) -> dict:
        if self.iteration + 1 == FAULT_STEP:
            if self.context.rank == 1 and self.fault in ("step_on_rank_1", "user_error_on_rank_1", "rank_0_stuck"):
                self.note_the_time()
                raise (UserError if self.fault == "user_error_on_rank_1" else RuntimeError)(STEP_FAULT)
            if self.context.rank == 0 and self.fault == "rank_0_stuck":
                time.sleep(600)  # a rank stuck outside any collective (a hung file system, a kernel that never ends)
        return super().train_step(micro_batches)


@dataclass
class EndedRank:
    returncode: int
    stdout: str
    stderr: str
    seconds_after_the_fault: float


def run_failing_ranks(fault: str, output: Path, *extra: str, timeout: float = 180) -> list[EndedRank]:
    """Two gloo ranks started independently (no launcher to end one when the other fails) with FAULT=fault; each
    must end within `timeout` seconds of the start (a generous bound: the test asserts on the time after the
    fault). A rank still running then is killed, and the test fails."""
    root = Path(__file__).resolve().parents[2]
    shared = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2",
              "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root), "FAULT": fault}
    processes = [subprocess.Popen([sys.executable, "-m", "tests.common.failing_ranks", str(output),
                                   "--dist-backend", "gloo", *extra],
                                  env={**shared, "RANK": str(rank), "LOCAL_RANK": str(rank)}, cwd=root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for rank in range(2)]
    ended_at: dict[int, float] = {}
    try:
        deadline = time.time() + timeout
        while len(ended_at) < len(processes) and time.time() < deadline:
            for rank, process in enumerate(processes):
                if rank not in ended_at and process.poll() is not None:
                    ended_at[rank] = time.time()
            time.sleep(0.1)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()  # a rank that hangs: the test fails, and leaves no process behind
    fault_time = float((output / "fault_time").read_text()) if (output / "fault_time").exists() else None
    ended = []
    for rank, process in enumerate(processes):
        stdout, stderr = process.communicate()
        assert rank in ended_at, f"rank {rank} still ran {timeout} s after the start: {stderr[-2000:]}"
        assert fault_time is not None, f"the fault never struck; rank {rank}: {stderr[-2000:]}"
        ended.append(EndedRank(process.returncode, stdout, stderr, ended_at[rank] - fault_time))
    return ended


if __name__ == "__main__":
    def main():
        output, *extra = sys.argv[1:]
        torch.set_num_threads(1)
        trainer = TrainerWithAFault.from_args(toy_recipe(), toy_args(output, *extra))
        trainer.fault = os.environ["FAULT"]
        trainer.train()
        sys.exit(trainer.exit_status)

    run_entry_point(main)
