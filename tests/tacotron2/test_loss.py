import math

import pytest
import torch

from tacotron2.loss_function import Tacotron2Loss, gate_targets_per_step, guided_attention_weights
from tacotron2.model import Tacotron2Output


def bce_with_logits(x: float, y: float) -> float:
    return -(y * math.log(1 / (1 + math.exp(-x))) + (1 - y) * math.log(1 - 1 / (1 + math.exp(-x))))


@pytest.fixture
def small_case():
    """Two utterances, 2 mel channels, 3 frames; utterance 1 is 2 frames long (frame 2 is padding)."""
    mel = torch.ones(2, 2, 3)
    mel[1, :, 2] = 3.0  # padding predictions far off: squared error 9
    mel_postnet = torch.full((2, 2, 3), 0.5)
    mel_postnet[1, :, 2] = 0.0
    gate = torch.tensor([[0.0, 1.0, 2.0], [-1.0, 3.0, 5.0]])
    outputs = Tacotron2Output(mel, mel_postnet, gate, torch.full((2, 3, 4), 0.25))
    batch = {"mel": torch.zeros(2, 2, 3), "gate": torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0]]),
             "mel_lengths": torch.tensor([3, 2]), "text_lengths": torch.tensor([4, 3])}
    gate_terms = [bce_with_logits(0, 0), bce_with_logits(1, 0), bce_with_logits(2, 1),
                  bce_with_logits(-1, 0), bce_with_logits(3, 1), bce_with_logits(5, 1)]
    return outputs, batch, gate_terms


def test_reference_reduction_counts_padding_like_nvidia(small_case):
    outputs, batch, gate_terms = small_case
    expected = {"mel_loss": (10 * 1 + 2 * 9) / 12, "mel_postnet_loss": (10 * 0.25 + 2 * 0.0) / 12,
                "gate_loss": sum(gate_terms) / 6}
    for losses in (Tacotron2Loss(mask_padding_in_loss=False)(outputs, batch),
                   Tacotron2Loss()(outputs, {"mel": batch["mel"], "gate": batch["gate"]})):  # no lengths
        for name, value in expected.items():
            assert losses[name].item() == pytest.approx(value, rel=1e-6)
        assert losses["loss"].item() == pytest.approx(sum(expected.values()), rel=1e-6)


def test_masked_reduction_ignores_padding(small_case):
    outputs, batch, gate_terms = small_case
    losses = Tacotron2Loss()(outputs, batch)
    assert losses["mel_loss"].item() == pytest.approx(1.0)
    assert losses["mel_postnet_loss"].item() == pytest.approx(0.25)
    assert losses["gate_loss"].item() == pytest.approx(sum(gate_terms[:5]) / 5, rel=1e-6)
    assert losses["loss"].item() == pytest.approx(1.25 + sum(gate_terms[:5]) / 5, rel=1e-6)

    changed = Tacotron2Output(outputs.mel.clone(), outputs.mel_postnet, outputs.gate.clone(), outputs.alignments)
    changed.mel[1, :, 2] = -50.0
    changed.gate[1, 2] = -7.0
    assert Tacotron2Loss()(changed, batch)["loss"].item() == pytest.approx(losses["loss"].item(), rel=1e-6)


def test_l1_mel_loss_is_the_mean_absolute_error_over_valid_frames(small_case):
    outputs, batch, gate_terms = small_case
    outputs.mel[0, 0, 0] = -2.0  # one miss of 2 among 10 valid values of 1: absolute 2, squared 4
    l1, mse = Tacotron2Loss(mel_loss="l1")(outputs, batch), Tacotron2Loss()(outputs, batch)
    assert l1["mel_loss"].item() == pytest.approx((9 * 1 + 2) / 10)
    assert mse["mel_loss"].item() == pytest.approx((9 * 1 + 4) / 10)
    assert l1["mel_postnet_loss"].item() == pytest.approx(0.5)
    assert l1["gate_loss"].item() == pytest.approx(mse["gate_loss"].item())
    with pytest.raises(ValueError, match="mel_loss must be one of"):
        Tacotron2Loss(mel_loss="l2")


def test_gate_targets_per_step_take_the_last_frame_of_each_group():
    frames = torch.tensor([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])  # last real frame: 3
    assert gate_targets_per_step(frames, 1).tolist() == frames.tolist()
    assert gate_targets_per_step(frames, 2).tolist() == [[0.0, 1.0, 1.0]]  # step 1 holds frames 2-3
    assert gate_targets_per_step(frames, 3).tolist() == [[0.0, 1.0]]  # step 1 holds frames 3-5
    assert gate_targets_per_step(frames, 4).tolist() == [[1.0, 1.0]]  # step 0 holds frames 0-3
    odd = torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0]])  # 5 frames, r = 2: the last group has one frame
    assert gate_targets_per_step(odd, 2).tolist() == [[0.0, 0.0, 1.0]]


def test_gate_loss_with_reduction_factor_is_per_step():
    gate = torch.tensor([[-2.0, 1.0, 4.0]])  # 3 steps of r = 2 for 6 frames; utterance of 3 frames
    outputs = Tacotron2Output(torch.zeros(1, 1, 6), torch.zeros(1, 1, 6), gate, torch.full((1, 3, 2), 0.5))
    batch = {"mel": torch.zeros(1, 1, 6), "gate": torch.tensor([[0.0, 0.0, 1.0, 1.0, 1.0, 1.0]]),
             "mel_lengths": torch.tensor([3])}
    losses = Tacotron2Loss(n_frames_per_step=2)(outputs, batch)
    # step 0 (frames 0-1) is not the last, step 1 (frames 2-3) holds the last frame, step 2 is padding
    assert losses["gate_loss"].item() == pytest.approx((bce_with_logits(-2, 0) + bce_with_logits(1, 1)) / 2)
    reference = Tacotron2Loss(n_frames_per_step=2, mask_padding_in_loss=False)(outputs, batch)
    assert reference["gate_loss"].item() == pytest.approx(
        (bce_with_logits(-2, 0) + bce_with_logits(1, 1) + bce_with_logits(4, 1)) / 3)


def test_guided_attention_weights_are_tachibanas_formula():
    sigma = 0.2
    weights, valid = guided_attention_weights(torch.tensor([4, 2]), torch.tensor([5, 3]), 4, 5, sigma)
    assert weights.shape == valid.shape == (2, 5, 4)
    for b, (n_text, n_steps) in enumerate([(4, 5), (2, 3)]):
        for t in range(5):
            for n in range(4):
                inside = t < n_steps and n < n_text
                expected = 1 - math.exp(-((n / n_text - t / n_steps) ** 2) / (2 * sigma ** 2)) if inside else 0.0
                assert weights[b, t, n].item() == pytest.approx(expected, abs=1e-6)
                assert bool(valid[b, t, n]) == inside
    assert weights[0, 2, 1].item() == pytest.approx(1 - math.exp(-(0.25 - 0.4) ** 2 / 0.08), abs=1e-6)


def test_guided_attention_loss_value_weight_and_logging():
    diagonal = torch.eye(2).unsqueeze(0)
    anti_diagonal = torch.eye(2).flip(1).unsqueeze(0).requires_grad_()
    batch = {"mel": torch.zeros(1, 1, 2), "gate": torch.tensor([[0.0, 1.0]]), "mel_lengths": torch.tensor([2]),
             "text_lengths": torch.tensor([2])}
    zeros = torch.zeros(1, 1, 2)

    def outputs(alignments):
        return Tacotron2Output(zeros, zeros, torch.zeros(1, 2), alignments)

    off = 1 - math.exp(-0.5 ** 2 / (2 * 0.2 ** 2))  # W at (t=0, n=1) and (t=1, n=0)
    assert Tacotron2Loss()(outputs(diagonal), batch)["guided_attn_loss"].item() == pytest.approx(0.0, abs=1e-7)
    unweighted = Tacotron2Loss()(outputs(anti_diagonal), batch)
    assert unweighted["guided_attn_loss"].item() == pytest.approx(2 * off / 2)  # per decoder step
    assert not unweighted["guided_attn_loss"].requires_grad  # logged, not trained on

    weighted = Tacotron2Loss(guided_attn_weight=3.0)(outputs(anti_diagonal), batch)
    base = weighted["mel_loss"] + weighted["mel_postnet_loss"] + weighted["gate_loss"]
    assert weighted["loss"].item() == pytest.approx(base.item() + 3.0 * 2 * off / 2)
    weighted["loss"].backward()
    assert anti_diagonal.grad[0, 0, 1].item() == pytest.approx(3.0 * off / 2)


def test_mismatched_shapes_are_clear_errors(small_case):
    outputs, batch, _ = small_case
    with pytest.raises(ValueError, match="gate target must be per frame"):
        Tacotron2Loss()(outputs, dict(batch, gate=batch["gate"][:, :2]))
    with pytest.raises(ValueError, match="guided_attn_sigma must be > 0"):
        Tacotron2Loss(guided_attn_sigma=0.0)


def test_the_recipe_weighs_a_batch_by_the_mel_frames_its_loss_averages_over():
    import argparse

    from tacotron2.recipe import loss_items

    batch = {"mel": torch.zeros(3, 80, 12), "mel_lengths": torch.tensor([12, 7, 5])}
    assert loss_items(batch, argparse.Namespace(loss_over_padding=False)) == 24
    assert loss_items(batch, argparse.Namespace(loss_over_padding=True)) == 36
