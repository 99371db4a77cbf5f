import argparse
import math

import pytest
import torch

from waveglow.loss_function import WaveGlowLoss
from waveglow.model import FlowOutput, WaveGlow
from waveglow.recipe import RECIPE


def test_loss_matches_a_hand_computation():
    # B=1, groups=2, 2 positions: z^2 sums to 1 + 4 + 9 + 16 = 30
    z = torch.tensor([[[1.0, -2.0], [3.0, 4.0]]])
    log_s = [torch.tensor([[[0.5, -0.25]]]), torch.tensor([[[1.0, 2.0]]])]  # sums 0.25 and 3.0
    log_det_w = [torch.tensor(0.7), torch.tensor(-0.2)]  # sum 0.5
    for sigma in (1.0, 0.5):
        expected = (30 / (2 * sigma ** 2) - (0.25 + 3.0) - 0.5) / 4  # per audio sample: B * groups * positions
        loss = WaveGlowLoss(sigma)(FlowOutput(z, log_s, log_det_w))
        assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_loss_of_an_untrained_flow_is_half_the_mean_square():
    """Zero couplings and rotations keep the energy, so the NLL (without the log 2pi term) is mean(x^2) / 2."""
    torch.manual_seed(0)
    model = WaveGlow(n_mel_channels=8, flows=4, early_every=2, wn_channels=8, wn_layers=2).double()
    audio = 0.3 * torch.randn(2, 1024, dtype=torch.float64)
    loss = WaveGlowLoss()(model(torch.randn(2, 8, 4, dtype=torch.float64), audio))
    assert loss.item() == pytest.approx(0.5 * audio.pow(2).mean().item(), rel=1e-5)  # fp32-built rotations


def test_sigma_must_be_positive():
    with pytest.raises(ValueError, match="sigma must be positive"):
        WaveGlowLoss(0.0)


@pytest.mark.slow
def test_recipe_step_counts_audio_samples_and_keeps_fp32():
    torch.manual_seed(0)
    model = RECIPE.build_model(dict(n_mel_channels=8, flows=4, groups=8, early_every=2, early_size=2,
                                    wn_channels=8, wn_layers=2, wn_kernel_size=3, hop_length=256, win_length=1024))
    args = argparse.Namespace(sigma=1.0)
    batch = RECIPE.batch_to_device((torch.randn(3, 8, 9), 0.1 * torch.randn(3, 2048)), torch.device("cpu"))
    output = RECIPE.compute_loss(model, batch, args)
    assert output.items == 3 * 2048
    assert output.loss.item() == pytest.approx(WaveGlowLoss(1.0)(model(*batch)).item())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = RECIPE.compute_loss(model, batch, args)
    assert output.loss.dtype == torch.float32 and math.isfinite(output.loss.item())
    assert RECIPE.name == "WaveGlow" and RECIPE.items_unit == "samples"
