"""Learning-rate schedules, as multipliers of each parameter group's own base learning rate.

A schedule is a pure function of (epoch, optimizer step) -> multiplier, so a resumed run needs no schedule state,
and per-group rates that a recipe's optimizers set (a fine-tuning factor on a pretrained encoder, a discriminator
with its own rate) keep their ratios: the trainer sets lr = base_lr * multiplier for every group.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from common.errors import UserError

if TYPE_CHECKING:  # whose flags choose the schedule
    from common.training_settings import TrainingSettings

SCHEDULES = ("epoch-anneal", "warmup-polynomial", "tri-stage")


@dataclass
class EpochAnnealSchedule:
    """NVIDIA's Tacotron 2 / WaveGlow schedule: constant, divided at each epoch listed in anneal_steps.

    With factor 0.1 the rate goes x1, x0.1, x0.01...; with factor 0.3 it alternates x0.3 and x0.1 steps
    (x1, x0.3, x0.1, x0.03...), as the reference does.
    """
    anneal_steps: list[int] = field(default_factory=list)
    anneal_factor: float = 0.1

    def __post_init__(self):
        if self.anneal_factor not in (0.1, 0.3):
            raise UserError(f"--anneal-factor must be 0.1 or 0.3, got {self.anneal_factor}")

    def multiplier(self, epoch: int, step: int) -> float:
        passed = sum(1 for boundary in self.anneal_steps if epoch >= boundary)
        if self.anneal_factor == 0.1:
            return 0.1 ** passed
        return 0.1 ** (passed // 2) * (0.3 if passed % 2 else 1.0)

    def state_dict(self) -> dict:
        return {"kind": "epoch_anneal", **asdict(self)}


@dataclass
class WarmupPolynomialSchedule:
    """Step-based: linear warm-up to x1, then polynomial decay to final_scale at total_steps."""
    warmup_steps: int
    total_steps: int
    power: float = 1.0
    final_scale: float = 0.0

    def multiplier(self, epoch: int, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        remaining = max(0.0, 1.0 - (step - self.warmup_steps) / max(1, self.total_steps - self.warmup_steps))
        return self.final_scale + (1.0 - self.final_scale) * remaining ** self.power

    def state_dict(self) -> dict:
        return {"kind": "warmup_polynomial", **asdict(self)}


@dataclass
class TriStageSchedule:
    """wav2vec 2.0's schedule: linear warm-up from init_scale to x1, hold at x1, exponential decay to final_scale,
    then final_scale for the rest of the run."""
    warmup_steps: int
    hold_steps: int
    decay_steps: int
    init_scale: float = 0.01
    final_scale: float = 0.05

    def __post_init__(self):
        if self.decay_steps > 0 and not 0 < self.final_scale <= 1:
            raise UserError(f"--final-lr-scale must be in (0, 1] for an exponential decay, got {self.final_scale}")

    def multiplier(self, epoch: int, step: int) -> float:
        if step < self.warmup_steps:
            return self.init_scale + (1.0 - self.init_scale) * step / self.warmup_steps
        step -= self.warmup_steps
        if step < self.hold_steps:
            return 1.0
        step -= self.hold_steps
        if step < self.decay_steps:
            return math.exp(math.log(self.final_scale) * step / self.decay_steps)
        return self.final_scale

    def state_dict(self) -> dict:
        return {"kind": "tri_stage", **asdict(self)}


def schedule_of(settings: TrainingSettings):
    """The schedule that --lr-schedule names, with its flags' values."""
    if settings.lr_schedule == "epoch-anneal":
        return EpochAnnealSchedule(settings.anneal_steps, settings.anneal_factor)
    if settings.lr_schedule == "warmup-polynomial":
        if not settings.max_updates:
            raise UserError("--lr-schedule warmup-polynomial decays to --max-updates: set --max-updates")
        return WarmupPolynomialSchedule(settings.warmup_updates, settings.max_updates, settings.lr_power,
                                        settings.final_lr_scale)
    return TriStageSchedule(settings.warmup_updates, settings.hold_updates, settings.decay_updates,
                            settings.init_lr_scale, settings.final_lr_scale)
