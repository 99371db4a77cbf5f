"""WaveGlow inference and the denoiser as the reference computes them, written out as plain equations over a state
dict with NVIDIA's key names and legacy weight norm (weight_g, weight_v), following ../shared/reference/
tacotron2_waveglow.md §3.2 (tests/waveglow/test_reference_equations.py and test_vocoder.py compare ours with them)."""
import torch
import torch.nn.functional as F

UPSAMPLE_KERNEL, UPSAMPLE_STRIDE = 1024, 256  # hard-coded in the reference

# Small but with every structural feature: two early splits, a last WN layer without a residual branch.
CONFIG = dict(n_mel_channels=6, flows=6, groups=8, early_every=2, early_size=2, wn_channels=8, wn_layers=3,
              wn_kernel_size=3, hop_length=256, win_length=1024)


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
