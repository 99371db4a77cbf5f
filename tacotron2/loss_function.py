"""Tacotron 2 training loss: mel regression before and after the postnet, stop-gate classification, and optional
guided attention (Tachibana et al. 2017, "Efficiently Trainable Text-to-Speech System Based on Deep Convolutional
Networks with Guided Attention"), which pulls attention towards the diagonal so that alignment is learned sooner.

Reductions. NVIDIA's loss is MSE(mel) + MSE(mel_postnet) + BCE-with-logits(gate), each a mean over *all* elements,
padding included; with their --mask-padding the padded predictions are forced to 0 (mel) and 1e3 (gate logit), so
padding adds ~0 to the sums but still counts in the denominators, and the loss depends on how a batch is padded.
By default (mask_padding_in_loss=True) and whenever mel lengths are given, each term here is instead a mean over
valid positions only. mask_padding_in_loss=False (flag --loss-over-padding) gives NVIDIA's numbers exactly.

mel_loss="l1" (flag --mel-loss l1) takes the mean absolute error of both mel terms instead of the squared one. A log
mel's squared error is dominated by a few large misses (a frame of silence at the spectrogram's floor predicted a
frame early), which pulls a model that is still learning towards the average spectrum; the absolute error weighs
every miss alike.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from common.layers import lengths_to_mask
from tacotron2.model import Tacotron2Output


def guided_attention_weights(text_lengths: Tensor, step_lengths: Tensor, max_text_length: int, max_steps: int,
                             sigma: float) -> tuple[Tensor, Tensor]:
    """Tachibana et al.'s penalty W[t, n] = 1 - exp(-(n/N - t/T)^2 / (2 sigma^2)) for decoder step t < T and
    symbol n < N, as (B, max_steps, max_text_length) with zeros outside each utterance, and the validity mask."""
    device = text_lengths.device
    symbol = torch.arange(max_text_length, device=device).unsqueeze(0) / text_lengths.unsqueeze(1).float()
    step = torch.arange(max_steps, device=device).unsqueeze(0) / step_lengths.unsqueeze(1).float()
    distance = symbol.unsqueeze(1) - step.unsqueeze(2)
    valid = (lengths_to_mask(step_lengths, max_steps).unsqueeze(2)
             & lengths_to_mask(text_lengths, max_text_length).unsqueeze(1))
    weights = (1.0 - torch.exp(-distance.pow(2) / (2.0 * sigma ** 2))) * valid
    return weights, valid


def gate_targets_per_step(gate_target: Tensor, n_frames_per_step: int) -> Tensor:
    """Per-frame gate targets (B, T) -> per-decoder-step ones (B, ceil(T / r)): a step's target is that of the last
    frame of its group, so the step holding an utterance's last real frame is the first with target 1."""
    n_frames = gate_target.size(1)
    last_frame = torch.arange(n_frames_per_step - 1, n_frames + n_frames_per_step - 1, n_frames_per_step,
                              device=gate_target.device).clamp(max=n_frames - 1)
    return gate_target[:, last_frame]


MEL_LOSSES = {"mse": lambda error: error.pow(2), "l1": lambda error: error.abs()}


def _mean(values: Tensor, valid: Tensor | None) -> Tensor:
    if valid is None:
        return values.mean()
    valid = valid.expand_as(values)
    return (values * valid).sum() / valid.sum().clamp(min=1)


class Tacotron2Loss(nn.Module):
    def __init__(self, guided_attn_weight: float = 0.0, guided_attn_sigma: float = 0.2, n_frames_per_step: int = 1,
                 mask_padding_in_loss: bool = True, mel_loss: str = "mse"):
        super().__init__()
        if mel_loss not in MEL_LOSSES:
            raise ValueError(f"mel_loss must be one of {sorted(MEL_LOSSES)}, got {mel_loss!r}")
        if guided_attn_weight < 0:
            raise ValueError(f"guided_attn_weight must be >= 0, got {guided_attn_weight}")
        if guided_attn_sigma <= 0:
            raise ValueError(f"guided_attn_sigma must be > 0, got {guided_attn_sigma}")
        if n_frames_per_step < 1:
            raise ValueError(f"n_frames_per_step must be >= 1, got {n_frames_per_step}")
        self.guided_attn_weight = guided_attn_weight
        self.guided_attn_sigma = guided_attn_sigma
        self.n_frames_per_step = n_frames_per_step
        self.mask_padding_in_loss = mask_padding_in_loss
        self.mel_error = MEL_LOSSES[mel_loss]

    def forward(self, outputs: Tacotron2Output, batch: dict) -> dict[str, Tensor]:
        """outputs: the model's; batch: "mel" (B, n_mel, T) and "gate" (B, T) per-frame targets, and optionally
        "mel_lengths" (B,) frames and "text_lengths" (B,) symbols. Returns "loss" (what to minimise) and its
        parts "mel_loss", "mel_postnet_loss", "gate_loss" and "guided_attn_loss" (before its weight)."""
        mel_target, gate_target = batch["mel"].float(), batch["gate"].float()
        mel_lengths, text_lengths = batch.get("mel_lengths"), batch.get("text_lengths")
        n_frames = mel_target.size(2)
        r = self.n_frames_per_step
        n_steps = (n_frames + r - 1) // r
        if gate_target.shape != (mel_target.size(0), n_frames):
            raise ValueError(f"gate target must be per frame, (B, T) = {(mel_target.size(0), n_frames)}, "
                             f"got {tuple(gate_target.shape)}")
        if outputs.gate.size(1) != n_steps:
            raise ValueError(f"the model gave {outputs.gate.size(1)} gate logits for {n_frames} frames; with "
                             f"Tacotron2Loss(n_frames_per_step={r}) that should be {n_steps}: pass the model's "
                             f"n_frames_per_step")

        frame_valid, step_valid = None, None
        if mel_lengths is not None and self.mask_padding_in_loss:
            frame_valid = lengths_to_mask(mel_lengths, n_frames).unsqueeze(1)
            step_valid = lengths_to_mask((mel_lengths + r - 1) // r, n_steps)
        losses = {
            "mel_loss": _mean(self.mel_error(outputs.mel.float() - mel_target), frame_valid),
            "mel_postnet_loss": _mean(self.mel_error(outputs.mel_postnet.float() - mel_target), frame_valid),
            "gate_loss": _mean(F.binary_cross_entropy_with_logits(
                outputs.gate.float(), gate_targets_per_step(gate_target, r), reduction="none"), step_valid),
        }
        losses["guided_attn_loss"] = self.guided_attention_loss(outputs.alignments, text_lengths, mel_lengths)
        total = losses["mel_loss"] + losses["mel_postnet_loss"] + losses["gate_loss"]
        if self.guided_attn_weight > 0:
            total = total + self.guided_attn_weight * losses["guided_attn_loss"]
        else:
            losses["guided_attn_loss"] = losses["guided_attn_loss"].detach()  # logged only
        return {"loss": total, **losses}

    def guided_attention_loss(self, alignments: Tensor, text_lengths: Tensor | None,
                              mel_lengths: Tensor | None) -> Tensor:
        """The attention mass outside the diagonal band per decoder step: sum over symbols of W * attention,
        averaged over valid decoder steps (whole tensors when lengths are unknown). It lies in [0, 1): near 0 for an
        alignment on the diagonal, ~0.5-0.7 for flat attention, so a weight of ~1-10 is felt beside the mel loss.
        (Tachibana et al. average over symbols too, which shrinks the term by the text length.)"""
        batch, max_steps, max_text_length = alignments.shape
        full = torch.ones(batch, dtype=torch.long, device=alignments.device)
        if text_lengths is None:
            text_lengths = full * max_text_length
        if mel_lengths is None:
            step_lengths = full * max_steps
        else:
            step_lengths = (mel_lengths + self.n_frames_per_step - 1) // self.n_frames_per_step
        weights, valid = guided_attention_weights(text_lengths, step_lengths, max_text_length, max_steps,
                                                  self.guided_attn_sigma)
        return (weights * alignments.float()).sum() / valid.any(dim=2).sum().clamp(min=1)
