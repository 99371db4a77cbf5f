"""Which periodic checkpoints a run keeps, and whether the disk has room for the next one.

Periodic checkpoints are those the trainer writes every --epochs-per-checkpoint epochs, every --save-interval-updates
steps, when it is stopped (a signal, --epochs-this-job) and at the end; each becomes the target of the `last` link.
By default every one is kept. With --keep-last-checkpoints N the newest N are kept and an older one is deleted,
unless it is a milestone: a checkpoint written at a multiple of --keep-every-updates steps or, at the end of an
epoch, of --keep-every-epochs epochs. A milestone is never deleted, and neither is checkpoint_<model>_best.pt (not a
periodic checkpoint). Deletion comes only after the new checkpoint is written and the `last` link points at it, so
a crash in between leaves one checkpoint too many, never one too few.

The newest N travel in every checkpoint (`retained_checkpoints`), so a resumed run goes on deleting that run's
files, and never a file it did not write: checkpoints of an earlier run in the same folder, or written before N was
set, are left alone. HiFi-GAN's --fine-tuning goes on from the base run's checkpoint in the base run's folder with an
empty list, so the base checkpoints are never deleted (NVIDIA's rotation deletes them).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # whose flags set the policy
    from common.training_settings import TrainingSettings


@dataclass(frozen=True)
class RetentionPolicy:
    keep_last: int = 0  # periodic checkpoints kept besides the milestones; 0: all of them
    every_updates: int = 0  # milestones every this many optimizer steps (0: none)
    every_epochs: int = 0  # milestones at the end of every this many epochs (0: none)

    @classmethod
    def of(cls, settings: TrainingSettings) -> RetentionPolicy:
        """The policy of --keep-last-checkpoints, --keep-every-updates and --keep-every-epochs."""
        return cls(settings.keep_last_checkpoints, settings.keep_every_updates, settings.keep_every_epochs)

    def is_milestone(self, iteration: int, completed_epochs: int | None) -> bool:
        """`completed_epochs`: the epochs done, for a checkpoint written at the end of an epoch; None inside one."""
        return bool((self.every_updates and iteration % self.every_updates == 0)
                    or (self.every_epochs and completed_epochs is not None
                        and completed_epochs % self.every_epochs == 0))

    def after_writing(self, retained: list[list], name: str, milestone: bool) -> tuple[list[list], list[str]]:
        """`retained`: [file name, is milestone] of the newest periodic checkpoints, oldest first, before `name` was
        written. Returns the newest ones with `name` (what the new checkpoint records) and the files to delete now."""
        if not self.keep_last:
            return [], []
        newest = [entry for entry in retained if entry[0] != name] + [[name, milestone]]  # a rewritten name: once
        dropped = newest[:-self.keep_last]
        return newest[-self.keep_last:], [dropped_name for dropped_name, is_milestone in dropped if not is_milestone]


@dataclass(frozen=True)
class DiskSpace:
    checkpoint_bytes: int  # of the checkpoint just written
    free_bytes: int  # left on its disk, for this user

    @property
    def next_checkpoint_fits(self) -> bool:
        """The next checkpoint, about as large, is written in full before older ones are deleted."""
        return self.free_bytes >= self.checkpoint_bytes


def disk_space_after_writing(checkpoint: Path) -> DiskSpace:
    return DiskSpace(checkpoint.stat().st_size, shutil.disk_usage(checkpoint.parent).free)
