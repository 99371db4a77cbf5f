"""Learning-rate schedules, as multipliers of each parameter group's own base learning rate.

A schedule is a pure function of (epoch, optimizer step) -> multiplier, so a resumed run needs no schedule state,
and per-group rates that a recipe's optimizers set (a fine-tuning factor on a pretrained encoder, a discriminator
with its own rate) keep their ratios: the trainer sets lr = base_lr * multiplier for every group.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import asdict, dataclass, field

from common.errors import UserError
SCHEDULES = ("epoch-anneal", "warmup-polynomial", "tri-stage")


def add_schedule_args(group) -> None:
    group.add_argument("--lr-schedule", default="epoch-anneal", choices=SCHEDULES,
                       help="epoch-anneal: NVIDIA's Tacotron 2/WaveGlow steps at --anneal-steps; warmup-polynomial: "
                            "linear warm-up then polynomial decay to --final-lr-scale at --max-updates; tri-stage: "
                            "warm-up, hold, exponential decay (wav2vec 2.0)")
    group.add_argument("--anneal-steps", nargs="*", type=int, default=[],
                       help="epochs at which the learning rate is annealed (epoch-anneal)")
    group.add_argument("--anneal-factor", type=float, default=0.1, choices=[0.1, 0.3])
    group.add_argument("--warmup-updates", type=int, default=0, help="linear warm-up length in optimizer steps")
    group.add_argument("--hold-updates", type=int, default=0, help="tri-stage: steps at the full rate")
    group.add_argument("--decay-updates", type=int, default=0, help="tri-stage: steps of exponential decay")
    group.add_argument("--init-lr-scale", type=float, default=0.01, help="tri-stage: multiplier at step 0")
    group.add_argument("--final-lr-scale", type=float, default=0.0,
                       help="multiplier at the end of the decay (tri-stage: must be > 0)")
    group.add_argument("--lr-power", type=float, default=1.0, help="warmup-polynomial: the decay's power")


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


def schedule_from_args(args: argparse.Namespace):
    if args.lr_schedule == "epoch-anneal":
        return EpochAnnealSchedule(args.anneal_steps, args.anneal_factor)
    if args.lr_schedule == "warmup-polynomial":
        if not args.max_updates:
            raise UserError("--lr-schedule warmup-polynomial decays to --max-updates: set --max-updates")
        return WarmupPolynomialSchedule(args.warmup_updates, args.max_updates, args.lr_power, args.final_lr_scale)
    return TriStageSchedule(args.warmup_updates, args.hold_updates, args.decay_updates, args.init_lr_scale,
                            args.final_lr_scale)
