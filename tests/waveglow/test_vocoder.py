"""WaveGlow as inference.py's vocoder, loading a checkpoint in the format NVIDIA's train.py writes (reference notes
§3.3): its model config is read from the file, its weights keep their legacy names, and a seed gives the audio NVIDIA's
infer gives after torch.manual_seed with that seed."""

import pytest
import torch

import inference
from common.denoise import DenoiserSettings
from common.registry import get_recipe
from common.trained_model import load_trained_model
from common.vocoder import VocoderSettings
from tests.conftest import NVIDIA_WAVEGLOW_ARCHITECTURE, NVIDIA_WAVEGLOW_CONFIG
from tests.waveglow.reference_equations import legacy_state_dict, reference_infer
from waveglow.vocoder import WaveGlowSettings, load_vocoder


def load(path, wn_channels=None, denoising_strength=0.0):
    """The vocoder inference.py loads with --waveglow path -s 0.6 --seed 11 (and --wn-channels, -d)."""
    return load_vocoder(VocoderSettings(name="WaveGlow", checkpoint=path, checkpoint_flag="--waveglow",
                                        options=WaveGlowSettings(sigma_infer=0.6, wn_channels=wn_channels),
                                        denoiser=DenoiserSettings(denoising_strength), seed=11),
                        torch.device("cpu"), torch.float32)


def test_nvidia_training_checkpoint_builds_from_its_config_and_gives_the_reference_audio(nvidia_checkpoint):
    path, state_dict = nvidia_checkpoint
    vocoder = load(str(path))
    assert len(vocoder.model.WN) == 4 and vocoder.model.WN[0].n_channels == 8
    mel = torch.randn(1, 80, 5, generator=torch.Generator().manual_seed(2))
    audio = vocoder(mel)
    torch.manual_seed(11)
    with torch.no_grad():
        expected = reference_infer(state_dict, mel, sigma=0.6, config=NVIDIA_WAVEGLOW_ARCHITECTURE).clamp(-1.0, 1.0)
    assert audio.shape == (1, 5 * 256)
    torch.testing.assert_close(audio, expected, rtol=1e-5, atol=1e-5)


def test_a_channel_flag_that_contradicts_the_file_is_refused(nvidia_checkpoint):
    path, _ = nvidia_checkpoint
    with pytest.raises(ValueError, match=r"--wn-channels 256 was given, but the WaveGlow in .* has 8 channels"):
        load(str(path), wn_channels=256)
    assert load(str(path), wn_channels=8).model.WN[0].n_channels == 8


@pytest.mark.slow
def test_bare_weights_take_the_architecture_from_the_flags(nvidia_checkpoint, tmp_path):
    _, state_dict = nvidia_checkpoint
    path = tmp_path / "weights_only.pt"
    torch.save({"state_dict": state_dict}, path)
    # Without a config the defaults (8 WN layers, 12 flows) apply and the file does not fit: the error lists what is
    # missing and points at the model flags.
    with pytest.raises(ValueError, match=r"weights_only.pt do not fit the model: missing keys: WN.0.in_layers.2.*"
                                         r"check the model flags, e.g. --wn-channels"):
        load(str(path), wn_channels=8)
    # Weights of the default architecture load with the channel flag alone.
    default_architecture = {**NVIDIA_WAVEGLOW_ARCHITECTURE, "flows": 12, "early_every": 4, "wn_layers": 8}
    torch.save({"state_dict": legacy_state_dict(default_architecture)}, path)
    vocoder = load(str(path), wn_channels=8)
    assert len(vocoder.model.WN) == 12 and vocoder.model.WN[0].n_channels == 8


def test_an_unreadable_nvidia_config_names_the_file(nvidia_checkpoint, tmp_path):
    _, state_dict = nvidia_checkpoint
    path = tmp_path / "odd_config.pt"
    torch.save({"config": {"n_mel_channels": 80}, "state_dict": state_dict}, path)
    with pytest.raises(ValueError, match=r"odd_config.pt: cannot read NVIDIA's model config .*WN_config"):
        load(str(path))


@pytest.mark.slow
def test_weights_saved_after_weight_norm_removal_give_the_same_audio(nvidia_checkpoint, tmp_path):
    """NVIDIA's inference removes weight norm after loading, and users save that model's state dict: one plain
    `weight` per convolution instead of weight_g/weight_v. It loads, and gives the original's audio for a seed."""
    path, _ = nvidia_checkpoint
    original = load(str(path))
    folded_state = original.model.state_dict()  # the vocoder folds weight norm, as NVIDIA's inference does
    assert "WN.0.start.weight" in folded_state and not any("parametrizations" in key for key in folded_state)
    folded = tmp_path / "waveglow_folded.pt"
    torch.save({"state_dict": {f"module.{key}": value for key, value in folded_state.items()},
                "config": NVIDIA_WAVEGLOW_CONFIG}, folded)
    mel = torch.randn(1, 80, 6, generator=torch.Generator().manual_seed(5))
    reloaded = load(str(folded), denoising_strength=0.01)
    original = load(str(path), denoising_strength=0.01)
    assert torch.equal(reloaded(mel), original(mel))

    # load_trained_model (no folding of its own): the same flow as the model with weight norm.
    model, _ = load_trained_model(get_recipe("WaveGlow"), folded, torch.device("cpu"))
    unfolded, _ = load_trained_model(get_recipe("WaveGlow"), path, torch.device("cpu"))
    noise = torch.randn(1, 8, 6 * 256 // 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = unfolded.infer(mel, sigma=0.6, noise=noise)
        torch.testing.assert_close(model.infer(mel, sigma=0.6, noise=noise), expected)

    # And through inference.py --waveglow (here vocoding a mel file): the same wav as the original checkpoint's.
    torch.save(mel[0], tmp_path / "mel.pt")
    for name, checkpoint in (("original", path), ("folded", folded)):
        inference.main(["-m", "WaveGlow", "-i", str(tmp_path / "mel.pt"), "-o", str(tmp_path / name), "--cpu",
                        "--quiet", "--waveglow", str(checkpoint), "-s", "0.6", "--seed", "11"])
    assert (tmp_path / "folded" / "mel.wav").read_bytes() == (tmp_path / "original" / "mel.wav").read_bytes()
