"""wav2vec 2.0's losses: the pre-training objective (contrastive + diversity + feature penalty) and CTC.

Both return a mean over their items (masked frames; utterances), which is what the shared trainer expects
(Recipe.loss_items says how many items a batch has, and the trainer weighs micro-batches by it). The reference sums
over items and divides the accumulated gradient by the total, which is the same thing.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def contrastive_accuracy(logits: torch.Tensor) -> torch.Tensor:
    """Fraction of masked frames whose true target (column 0) scores highest; a row whose logits are all equal
    (true target both the maximum and the minimum) counts as wrong, as in the reference."""
    if logits.numel() == 0:
        return logits.new_zeros(())
    best, worst = logits.argmax(-1) == 0, logits.argmin(-1) == 0
    return (best & ~worst).float().mean()


def pretraining_loss(output: dict, loss_weights: tuple[float, float]) -> tuple[torch.Tensor, dict]:
    """InfoNCE over the true target and its negatives, + weight[0] x codebook diversity + weight[1] x feature
    penalty, as means per masked frame. `output` is Wav2Vec2Model's forward dict."""
    logits = output["logits"].float()
    targets = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)  # the true target is column 0
    contrastive = F.cross_entropy(logits, targets, reduction="mean")
    num_vars = output["num_vars"]
    diversity = (num_vars - output["prob_perplexity"]) / num_vars  # 0 when every codebook entry is used equally
    features_penalty = output["features_pen"]
    diversity_weight, penalty_weight = loss_weights
    loss = contrastive + diversity_weight * diversity + penalty_weight * features_penalty
    metrics = {
        "loss_contrastive": contrastive.detach(), "loss_diversity": diversity.detach(),
        "loss_features": features_penalty.detach(), "accuracy": contrastive_accuracy(logits.detach()),
        "prob_perplexity": output["prob_perplexity"].detach(), "code_perplexity": output["code_perplexity"].detach(),
        "temperature": torch.tensor(float(output["temperature"])),
    }
    return loss, metrics


def ctc_loss(logits: torch.Tensor, frame_padding_mask: torch.Tensor | None, targets: torch.Tensor,
             target_lengths: torch.Tensor, blank: int = 0) -> torch.Tensor:
    """CTC of (B, T, V) logits against padded targets, summed over each utterance and averaged over utterances
    (the reference's sentence averaging). Utterances too short for their transcript contribute 0, not inf."""
    log_probs = F.log_softmax(logits.float(), dim=-1).transpose(0, 1)  # (T, B, V): what ctc_loss takes
    batch, frames = logits.shape[:2]
    input_lengths = (torch.full((batch,), frames, dtype=torch.long, device=logits.device)
                     if frame_padding_mask is None else (~frame_padding_mask).sum(-1))
    flat_targets = torch.cat([row[:length] for row, length in zip(targets, target_lengths.tolist())])
    total = F.ctc_loss(log_probs, flat_targets, input_lengths, target_lengths, blank=blank, reduction="sum",
                       zero_infinity=True)
    return total / batch
