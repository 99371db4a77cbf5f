"""WaveGlow's fast paths: the conditioning laid out contiguously (the same values), and torch.compile'd coupling
networks (--compile) within 1e-5 of eager, in training's forward pass, in inference and as inference.py's vocoder."""
import argparse
import dataclasses

import pytest
import torch

from common.checkpoint import save_checkpoint
from common.denoise import DenoiserSettings
from common.vocoder import VocoderSettings
from tests.waveglow.tiny_waveglow import TINY, mel_and_audio, tiny_model
from waveglow.recipe import RECIPE
from waveglow.vocoder import WaveGlowSettings, load_vocoder

TOLERANCE = dict(atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_conditioning_is_contiguous_with_the_values_of_the_strided_view():
    model = tiny_model()
    mel, audio = mel_and_audio()
    spect = model._conditioning(mel, audio.size(1))
    upsampled = model.upsample(mel)[:, :, :audio.size(1)]
    # sample g of group p, mel channel c is channel c * groups + g at position p
    expected = upsampled.unfold(2, 8, 8).permute(0, 1, 3, 2).reshape(2, 8 * 8, -1)
    assert spect.is_contiguous()
    assert torch.equal(spect, expected)


@pytest.mark.slow
def test_compiled_couplings_equal_eager_in_training_and_inference():
    eager, compiled = tiny_model(), tiny_model()
    names = list(compiled.state_dict())
    compiled.compile_coupling()
    assert list(compiled.state_dict()) == names  # checkpoints are unchanged
    mel, audio = mel_and_audio()
    expected, got = eager(mel, audio), compiled(mel, audio)
    torch.testing.assert_close(got.z, expected.z, **TOLERANCE)
    for got_log_s, expected_log_s in zip(got.log_s, expected.log_s):
        torch.testing.assert_close(got_log_s, expected_log_s, **TOLERANCE)
    got.z.pow(2).sum().backward()
    expected.z.pow(2).sum().backward()
    for (name, parameter), reference in zip(compiled.named_parameters(), eager.parameters()):
        torch.testing.assert_close(parameter.grad, reference.grad, **TOLERANCE, msg=name)
    with torch.no_grad():
        torch.testing.assert_close(compiled.infer(mel, sigma=0.6, generator=torch.Generator().manual_seed(2)),
                                   eager.infer(mel, sigma=0.6, generator=torch.Generator().manual_seed(2)),
                                   **TOLERANCE)


@pytest.mark.slow
def test_compile_flag_compiles_the_vocoder_and_the_training_model(tmp_path):
    model = tiny_model(n_mel_channels=80)
    path = tmp_path / "waveglow.pt"
    config = {**TINY, "n_mel_channels": 80}
    save_checkpoint({"model_name": "WaveGlow", "model_config": config, "state_dict": model.state_dict()}, path)
    settings = VocoderSettings(name="WaveGlow", checkpoint=str(path), checkpoint_flag="--waveglow",
                               options=WaveGlowSettings(sigma_infer=0.6), denoiser=DenoiserSettings(0.01), seed=11)
    eager = load_vocoder(settings, torch.device("cpu"), torch.float32)
    compiled = load_vocoder(dataclasses.replace(settings, compile=True), torch.device("cpu"), torch.float32)
    assert all(wn._compiled_call_impl is not None for wn in compiled.model.WN)
    mel = torch.randn(1, 80, 6, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(compiled(mel), eager(mel), **TOLERANCE)

    RECIPE.compile_model(model, argparse.Namespace())
    assert all(wn._compiled_call_impl is not None for wn in model.WN)
