"""WaveGlow inference and the denoiser against the reference's computation written out as plain equations over a state
dict with NVIDIA's key names and legacy weight norm (weight_g, weight_v), following ../shared/reference/
tacotron2_waveglow.md §3.2: the same weights and the same seed must give the same audio. A published checkpoint goes
through exactly this loading path (common.checkpoint.remap_legacy_state_dict)."""
import pytest
import torch
import torch.nn.functional as F

from common.audio import AudioParams
from common.checkpoint import remap_legacy_state_dict
from common.layers import remove_weight_norm
from waveglow.denoiser import Denoiser
from waveglow.model import WaveGlow

# Small but with every structural feature: two early splits, a last WN layer without a residual branch.
CONFIG = dict(n_mel_channels=6, flows=6, groups=8, early_every=2, early_size=2, wn_channels=8, wn_layers=3,
              wn_kernel_size=3, hop_length=256, win_length=1024)
UPSAMPLE_KERNEL, UPSAMPLE_STRIDE = 1024, 256  # hard-coded in the reference


def legacy_state_dict(config: dict = CONFIG, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights under NVIDIA's names, as saved from DDP with torch.nn.utils.weight_norm."""
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=0.3):
        return scale * torch.randn(*shape, generator=generator)

    n_mel, c, n_layers = config["n_mel_channels"], config["wn_channels"], config["wn_layers"]
    sd = {"upsample.weight": randn(n_mel, n_mel, UPSAMPLE_KERNEL, scale=0.05), "upsample.bias": randn(n_mel)}

    def weight_normed(name, out_channels, in_channels, kernel):
        sd[f"{name}.weight_g"] = 0.5 + torch.rand(out_channels, 1, 1, generator=generator)
        sd[f"{name}.weight_v"] = randn(out_channels, in_channels, kernel)
        sd[f"{name}.bias"] = randn(out_channels, scale=0.1)

    channels = config["groups"]
    for k in range(config["flows"]):
        if k > 0 and k % config["early_every"] == 0:
            channels -= config["early_size"]
        n_half = channels // 2
        # Any invertible matrix will do; the identity plus noise is well conditioned.
        sd[f"convinv.{k}.conv.weight"] = (torch.eye(channels) + randn(channels, channels)).unsqueeze(-1)
        weight_normed(f"WN.{k}.start", c, n_half, 1)
        for i in range(n_layers):
            weight_normed(f"WN.{k}.in_layers.{i}", 2 * c, c, config["wn_kernel_size"])
            weight_normed(f"WN.{k}.cond_layers.{i}", 2 * c, n_mel * config["groups"], 1)
            weight_normed(f"WN.{k}.res_skip_layers.{i}", 2 * c if i < n_layers - 1 else c, c, 1)
        sd[f"WN.{k}.end.weight"] = randn(2 * n_half, c, 1, scale=0.1)
        sd[f"WN.{k}.end.bias"] = randn(2 * n_half, scale=0.1)
    return {f"module.{key}": value for key, value in sd.items()}


# ---------------------------------------------------------------------------------------------------------------
# The reference, as equations


def normed_weight(sd, name):
    """weight_norm over every dimension but the first: w = g * v / ||v||."""
    v, g = sd[f"{name}.weight_v"], sd[f"{name}.weight_g"]
    return g * v / v.flatten(1).norm(dim=1).view(-1, 1, 1)


def reference_wn(sd, k, audio, spect, n_layers):
    p = f"module.WN.{k}"
    x = F.conv1d(audio, normed_weight(sd, f"{p}.start"), sd[f"{p}.start.bias"])
    n_channels = x.size(1)
    output = torch.zeros_like(x)
    for i in range(n_layers):
        dilation = 2 ** i
        in_weight = normed_weight(sd, f"{p}.in_layers.{i}")
        padding = (in_weight.size(2) * dilation - dilation) // 2
        in_act = (F.conv1d(x, in_weight, sd[f"{p}.in_layers.{i}.bias"], dilation=dilation, padding=padding)
                  + F.conv1d(spect, normed_weight(sd, f"{p}.cond_layers.{i}"), sd[f"{p}.cond_layers.{i}.bias"]))
        acts = torch.tanh(in_act[:, :n_channels]) * torch.sigmoid(in_act[:, n_channels:])
        res_skip = F.conv1d(acts, normed_weight(sd, f"{p}.res_skip_layers.{i}"), sd[f"{p}.res_skip_layers.{i}.bias"])
        if i < n_layers - 1:
            x = x + res_skip[:, :n_channels]
            output = output + res_skip[:, n_channels:]
        else:
            output = output + res_skip
    return F.conv1d(output, sd[f"{p}.end.weight"], sd[f"{p}.end.bias"])


def reference_infer(sd, spect, sigma, config=CONFIG):
    """NVIDIA's WaveGlow.infer: noise drawn from the global generator, final channels first."""
    n_group, n_flows = config["groups"], config["flows"]
    early_every, early_size = config["early_every"], config["early_size"]
    spect = F.conv_transpose1d(spect, sd["module.upsample.weight"], sd["module.upsample.bias"], stride=UPSAMPLE_STRIDE)
    spect = spect[:, :, :-(UPSAMPLE_KERNEL - UPSAMPLE_STRIDE)]
    batch_size, n_mel, n_samples = spect.shape
    spect = spect.unfold(2, n_group, n_group).permute(0, 2, 1, 3).contiguous()
    spect = spect.view(batch_size, n_samples // n_group, n_mel * n_group).permute(0, 2, 1)

    n_remaining = n_group - early_size * ((n_flows - 1) // early_every)
    audio = sigma * torch.randn(batch_size, n_remaining, n_samples // n_group, dtype=spect.dtype)
    for k in reversed(range(n_flows)):
        n_half = audio.size(1) // 2
        audio_0, audio_1 = audio[:, :n_half], audio[:, n_half:]
        output = reference_wn(sd, k, audio_0, spect, config["wn_layers"])
        s, b = output[:, n_half:], output[:, :n_half]
        audio_1 = (audio_1 - b) / torch.exp(s)
        audio = torch.cat([audio_0, audio_1], 1)
        w_inverse = sd[f"module.convinv.{k}.conv.weight"].squeeze(-1).float().inverse().unsqueeze(-1)
        audio = F.conv1d(audio, w_inverse.to(audio.dtype))
        if k % early_every == 0 and k > 0:
            z = torch.randn(batch_size, early_size, n_samples // n_group, dtype=spect.dtype)
            audio = torch.cat((sigma * z, audio), 1)
    return audio.permute(0, 2, 1).contiguous().view(batch_size, -1)


def stft(audio):
    window = torch.hann_window(1024)
    return torch.stft(audio, 1024, 256, 1024, window, center=True, pad_mode="reflect", return_complex=True)


def reference_denoise(sd, audio, strength):
    """NVIDIA's Denoiser: bias = first STFT frame of infer(zeros (1, n_mel, 88), sigma 0); |X| - strength * bias."""
    bias_audio = reference_infer(sd, torch.zeros(1, CONFIG["n_mel_channels"], 88), sigma=0.0)
    bias_spectrum = stft(bias_audio).abs()[:, :, 0:1]
    spectrum = stft(audio)
    magnitude = torch.clamp(spectrum.abs() - bias_spectrum * strength, min=0.0)
    return torch.istft(torch.polar(magnitude, spectrum.angle()), 1024, 256, 1024, torch.hann_window(1024),
                       length=audio.size(-1))


# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkpoint_and_model():
    sd = legacy_state_dict()
    model = WaveGlow(**CONFIG)
    model.load_state_dict(remap_legacy_state_dict(sd), strict=True)
    return sd, model.eval()


def mel(batch_size=2, frames=6):
    return torch.randn(batch_size, CONFIG["n_mel_channels"], frames, generator=torch.Generator().manual_seed(7))


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
