"""Alignment health: is Tacotron 2's attention walking along the text? Logged at every validation (tacotron2/recipe.py)
and for every synthesized batch (inference.py), from free-running synthesis, where a model that has not learned to
align shows it."""
import math

from torch import Tensor


def alignment_health(alignments: Tensor, text_lengths: Tensor, mel_lengths: Tensor,
                     n_frames_per_step: int = 1) -> dict:
    """Batch means of how healthy attention alignments are, each a float in [0, 1].

    alignments (B, decoder steps, T_in); text_lengths (B,) symbols; mel_lengths (B,) frames (decoder steps x r).
    Per utterance, over its valid steps and symbols:
    - monotonic: fraction of consecutive decoder steps whose most attended symbol moves forward by 0, 1 or 2,
      rescaled so that a path jumping at random (which lands there 3 / T_in of the time) scores 0.
    - coverage: fraction of the symbols that are the most attended one at some step (out of at most one per step).
      A path stuck on one symbol is monotonic but covers nothing; a scattered path covers but is not monotonic.
    - diagonality = monotonic x coverage: high only for a path that walks through the whole text in order.
    - focus: the largest attention weight of each step, rescaled so flat attention is 0 and one-hot is 1.
    - score = sqrt(diagonality x focus), the one number to watch.
    A model that has learned to align scores above ~0.7 (a sharp diagonal: ~1); one that has not (flat, stuck or
    scattered attention) below ~0.3. It typically jumps from one to the other when alignment "clicks" in training.
    Texts of 3 symbols or fewer cannot tell a path from chance: their monotonic is 1.
    """
    alignments = alignments.detach().float()
    step_lengths = (mel_lengths + n_frames_per_step - 1) // n_frames_per_step
    totals = {"monotonic": 0.0, "coverage": 0.0, "diagonality": 0.0, "focus": 0.0, "score": 0.0}
    for weights, n_text, n_steps in zip(alignments, text_lengths.tolist(), step_lengths.tolist()):
        peak, position = weights[:n_steps, :n_text].max(dim=1)
        moves = position[1:] - position[:-1]
        monotonic = ((moves >= 0) & (moves <= 2)).float().mean().item() if n_steps > 1 else 1.0
        chance = 3.0 / n_text
        monotonic = max(monotonic - chance, 0.0) / (1.0 - chance) if chance < 1.0 else 1.0
        coverage = position.unique().numel() / min(n_text, n_steps)
        flat = 1.0 / n_text
        focus = ((peak.mean().item() - flat) / (1.0 - flat)) if n_text > 1 else 1.0
        focus = min(max(focus, 0.0), 1.0)
        utterance = {"monotonic": monotonic, "coverage": coverage, "diagonality": monotonic * coverage,
                     "focus": focus, "score": math.sqrt(monotonic * coverage * focus)}
        for key, value in utterance.items():
            totals[key] += value
    return {key: value / alignments.size(0) for key, value in totals.items()}
