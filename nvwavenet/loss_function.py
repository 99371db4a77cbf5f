"""WaveNet's loss: cross-entropy of each sample's logits against the mu-law class that actually came next."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def next_sample_loss(logits: torch.Tensor, audio_classes: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over all samples; logits (B, A, T) from WaveNet.forward, audio_classes (B, T).

    WaveNet.forward already aligns logits[:, :, t] with audio_classes[:, t] (it saw only the classes before t),
    so no shifting happens here. Computed in fp32 even under autocast.
    """
    if logits.shape[0] != audio_classes.shape[0] or logits.shape[2] != audio_classes.shape[1]:
        raise ValueError(f"logits {tuple(logits.shape)} do not match audio classes {tuple(audio_classes.shape)}")
    return F.cross_entropy(logits.float(), audio_classes)


def next_sample_accuracy(logits: torch.Tensor, audio_classes: torch.Tensor) -> torch.Tensor:
    """Fraction of samples whose most likely class is the true one (a readable training signal)."""
    return (logits.argmax(dim=1) == audio_classes).float().mean()
