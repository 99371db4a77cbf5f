"""Learning-rate schedules. Each is a pure function of (epoch, optimizer step), so a resumed run needs no state."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class EpochAnnealSchedule:
    """NVIDIA's Tacotron 2 / WaveGlow schedule: constant, divided at each epoch listed in anneal_steps.

    With factor 0.1 the rate goes x1, x0.1, x0.01...; with factor 0.3 it alternates x0.3 and x0.1 steps
    (x1, x0.3, x0.1, x0.03...), as the reference does.
    """
    base_lr: float
    anneal_steps: list[int] = field(default_factory=list)
    anneal_factor: float = 0.1

    def __post_init__(self):
        if self.anneal_factor not in (0.1, 0.3):
            raise ValueError(f"--anneal-factor must be 0.1 or 0.3, got {self.anneal_factor}")

    def lr_at(self, epoch: int, step: int) -> float:
        passed = sum(1 for boundary in self.anneal_steps if epoch >= boundary)
        if self.anneal_factor == 0.1:
            return self.base_lr * 0.1 ** passed
        return self.base_lr * 0.1 ** (passed // 2) * (0.3 if passed % 2 else 1.0)

    def state_dict(self) -> dict:
        return {"kind": "epoch_anneal", **asdict(self)}


@dataclass
class WarmupPolynomialSchedule:
    """Step-based: linear warm-up to base_lr, then polynomial decay to final_lr at total_steps (wav2vec 2.0)."""
    base_lr: float
    warmup_steps: int
    total_steps: int
    power: float = 1.0
    final_lr: float = 0.0

    def lr_at(self, epoch: int, step: int) -> float:
        if step < self.warmup_steps:
            return self.base_lr * (step + 1) / self.warmup_steps
        remaining = max(0.0, 1.0 - (step - self.warmup_steps) / max(1, self.total_steps - self.warmup_steps))
        return self.final_lr + (self.base_lr - self.final_lr) * remaining ** self.power

    def state_dict(self) -> dict:
        return {"kind": "warmup_polynomial", **asdict(self)}
