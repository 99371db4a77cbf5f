"""WaveGlow inference and the denoiser against the reference's computation written out as plain equations over a state
dict with NVIDIA's key names and legacy weight norm (weight_g, weight_v), following ../shared/reference/
tacotron2_waveglow.md §3.2: the same weights and the same seed must give the same audio. A published checkpoint goes
through exactly this loading path (common.checkpoint.remap_legacy_state_dict)."""
import pytest
import torch

from common.audio import AudioParams
from common.checkpoint import remap_legacy_state_dict
from common.layers import remove_weight_norm
from tests.waveglow.reference_equations import CONFIG, legacy_state_dict, reference_denoise, reference_infer
from waveglow.denoiser import Denoiser
from waveglow.model import WaveGlow


@pytest.fixture(scope="module")
def checkpoint_and_model():
    sd = legacy_state_dict()
    model = WaveGlow(**CONFIG)
    model.load_state_dict(remap_legacy_state_dict(sd), strict=True)
    return sd, model.eval()


def mel(batch_size=2, frames=6):
    return torch.randn(batch_size, CONFIG["n_mel_channels"], frames, generator=torch.Generator().manual_seed(7))


@pytest.mark.slow
def test_sigma_zero_gives_the_reference_audio(checkpoint_and_model):
    sd, model = checkpoint_and_model
    spect = mel()
    with torch.no_grad():
        expected = reference_infer(sd, spect, sigma=0.0)
    audio = model.infer(spect, sigma=0.0)
    assert audio.shape == (2, 6 * 256)
    assert expected.abs().max() > 0.1  # the couplings are not the identity
    torch.testing.assert_close(audio, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sigma", [0.6, 1.0])
def test_the_same_seed_gives_the_reference_audio(checkpoint_and_model, sigma):
    sd, model = checkpoint_and_model
    spect = mel()
    torch.manual_seed(123)
    with torch.no_grad():
        expected = reference_infer(sd, spect, sigma=sigma)
    torch.manual_seed(123)
    audio = model.infer(spect, sigma=sigma)
    torch.testing.assert_close(audio, expected, rtol=1e-5, atol=1e-5)
    # The noise matters: another seed is another waveform.
    torch.manual_seed(124)
    assert (model.infer(spect, sigma=sigma) - expected).abs().max() > 1e-2


def test_after_weight_norm_removal_the_audio_is_unchanged(checkpoint_and_model):
    sd, _ = checkpoint_and_model
    model = WaveGlow(**CONFIG)
    model.load_state_dict(remap_legacy_state_dict(sd), strict=True)
    remove_weight_norm(model)
    torch.testing.assert_close(model.infer(mel(), sigma=0.0), reference_infer(sd, mel(), sigma=0.0),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_denoiser_matches_the_reference(checkpoint_and_model):
    sd, model = checkpoint_and_model
    torch.manual_seed(5)
    audio = model.infer(mel(frames=12), sigma=0.6)
    params = AudioParams(n_mel_channels=CONFIG["n_mel_channels"])
    with torch.no_grad():
        expected = reference_denoise(sd, audio, strength=0.5)
    denoised = Denoiser(model, params, mode="zeros")(audio, strength=0.5)
    assert (expected - audio).abs().max() > 1e-3  # strength 0.5 does change the audio
    torch.testing.assert_close(denoised, expected, rtol=1e-5, atol=1e-5)
