"""HiFi-GAN's loss terms against values computed by hand on small tensors."""
import math

import pytest
import torch

from common.audio import AudioParams, MelSpectrogram
from hifigan.loss_function import (FEATURE_MATCHING_WEIGHT, MEL_WEIGHT, HiFiGANLoss, MelL1, discriminator_loss,
                                   feature_matching_loss, generator_adversarial_loss, loss_mel_params)


def test_the_weights_are_the_papers():
    assert FEATURE_MATCHING_WEIGHT == 2.0 and MEL_WEIGHT == 45.0


def test_discriminator_loss_is_least_squares_summed_over_sub_discriminators():
    real = [torch.tensor([[1.0, 0.0]]), torch.tensor([[0.5]])]
    fake = [torch.tensor([[0.0, 2.0]]), torch.tensor([[-1.0]])]
    # first: mean((1-1)^2, (1-0)^2) = 0.5 and mean(0^2, 2^2) = 2; second: (1-0.5)^2 = 0.25 and (-1)^2 = 1
    assert discriminator_loss(real, fake).item() == pytest.approx(0.5 + 2.0 + 0.25 + 1.0)


def test_generator_adversarial_loss_wants_every_score_at_one():
    fake = [torch.tensor([[0.0, 2.0]]), torch.tensor([[0.5], [1.0]])]
    # mean((1-0)^2, (1-2)^2) = 1; mean((0.5)^2, 0^2) = 0.125
    assert generator_adversarial_loss(fake).item() == pytest.approx(1.125)


def test_feature_matching_is_twice_the_l1_of_every_layer_summed():
    real = [[torch.tensor([1.0, 2.0]), torch.tensor([[0.0]])], [torch.tensor([3.0])]]
    fake = [[torch.tensor([0.0, 4.0]), torch.tensor([[-2.0]])], [torch.tensor([3.5])]]
    # layer means: (1 + 2) / 2 = 1.5, 2, 0.5 -> 2 x 4 = 8
    assert feature_matching_loss(real, fake).item() == pytest.approx(8.0)


def test_feature_matching_passes_no_gradient_to_the_real_maps():
    real = torch.tensor([1.0, 2.0], requires_grad=True)
    fake = torch.tensor([0.0, 4.0], requires_grad=True)
    feature_matching_loss([[real]], [[fake]]).backward()
    assert real.grad is None
    torch.testing.assert_close(fake.grad, torch.tensor([-1.0, 1.0]))  # 2 x sign(fake - real) / 2


def test_the_loss_mel_reaches_nyquist_unless_told_otherwise():
    params = AudioParams()
    assert loss_mel_params(params, None).mel_fmax == 11025.0
    assert loss_mel_params(params, 8000.0) == params


def test_mel_l1_is_the_mean_absolute_log_mel_difference():
    params = loss_mel_params(AudioParams(), None)
    generator = torch.Generator().manual_seed(0)
    real, fake = torch.randn(2, 1, 1024, generator=generator) * 0.1, torch.randn(2, 1, 1024, generator=generator) * 0.1
    mel = MelSpectrogram(params)
    expected = (mel(real.squeeze(1)) - mel(fake.squeeze(1))).abs().mean()
    assert MelL1(params)(real, fake).item() == pytest.approx(expected.item(), rel=1e-6)
    assert MelL1(params)(real, real).item() == 0.0
    # the errors of the real/generated pair of one item do not depend on the rest of the batch
    torch.testing.assert_close(MelL1(params).errors(real, fake)[:1], MelL1(params).errors(real[:1], fake[:1]))


def test_mel_l1_runs_in_fp32_under_autocast():
    params = loss_mel_params(AudioParams(), None)
    real, fake = torch.randn(1, 1024) * 0.1, torch.randn(1, 1024) * 0.1
    with torch.autocast("cpu", dtype=torch.bfloat16):
        errors = MelL1(params).errors(real, fake.bfloat16())
    assert errors.dtype == torch.float32
    torch.testing.assert_close(errors, MelL1(params).errors(real, fake.bfloat16().float()))


def test_the_generators_total_is_adversarial_plus_2_feature_matching_plus_45_mel():
    """Two discriminators (as MPD and MSD), each with one sub-discriminator of one feature map."""
    loss = HiFiGANLoss(loss_mel_params(AudioParams(), None))
    real_audio = torch.zeros(1, 1, 1024)
    fake_audio = torch.full((1, 1, 1024), 0.01)
    real_outputs = [([torch.tensor([[1.0]])], [[torch.tensor([0.0])]]),
                    ([torch.tensor([[1.0]])], [[torch.tensor([1.0])]])]
    fake_outputs = [([torch.tensor([[0.0]])], [[torch.tensor([0.5])]]),
                    ([torch.tensor([[3.0]])], [[torch.tensor([2.0])]])]
    losses = loss.generator(real_outputs, fake_outputs, real_audio, fake_audio)
    assert losses.adversarial.item() == pytest.approx(1.0 + 4.0)
    assert losses.feature_matching.item() == pytest.approx(2 * (0.5 + 1.0))
    # silence's log mel is log(1e-5) everywhere; a constant 0.01 has all its energy in the lowest bins
    mel_l1 = (MelSpectrogram(loss_mel_params(AudioParams(), None))(fake_audio[0]) - math.log(1e-5)).abs().mean()
    assert losses.mel.item() == pytest.approx(45 * mel_l1.item(), rel=1e-6)
    assert losses.total.item() == pytest.approx(5.0 + 3.0 + 45 * mel_l1.item(), rel=1e-6)
    assert loss.discriminator(real_outputs, fake_outputs).item() == pytest.approx((0 + 0) + (0 + 9.0))
