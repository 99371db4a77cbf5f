import argparse

import pytest
import torch

from common.arguments import add_audio_args
from common.checkpoint import remap_legacy_state_dict
from common.layers import remove_weight_norm
from tests.waveglow.tiny_waveglow import TINY, mel_and_audio, tiny_model
from waveglow import arg_parser
from waveglow.loss_function import WaveGlowLoss
from waveglow.model import WaveGlow


# ---------------------------------------------------------------------------------------------------------------
# Shapes and sizes


@pytest.mark.slow
def test_forward_and_infer_shapes():
    model = tiny_model()
    mel, audio = mel_and_audio()
    z, log_s, log_det_w = model(mel, audio)
    assert z.shape == (2, 8, 2048 // 8)
    assert len(log_s) == len(log_det_w) == 4
    # Flows 0-1 transform 8 channels (log s on 4), flows 2-3 transform 6 (log s on 3).
    assert [tuple(s.shape) for s in log_s] == [(2, 4, 256), (2, 4, 256), (2, 3, 256), (2, 3, 256)]
    assert all(d.dim() == 0 for d in log_det_w)
    for frames in (1, 5, 13):
        generated = model.infer(torch.randn(3, 8, frames), sigma=0.7)
        assert generated.shape == (3, 256 * frames)


def test_upsampler_follows_hop_and_window():
    model = tiny_model(hop_length=128, win_length=512)
    assert model.upsample.kernel_size == (512,) and model.upsample.stride == (128,)
    assert model.infer(torch.randn(1, 8, 7)).shape == (1, 7 * 128)


def test_parameter_counts_match_reference():
    for wn_channels, expected in ((512, 268_294_760), (256, 87_879_272)):
        with torch.device("meta"):  # counts without allocating a gigabyte
            model = WaveGlow(wn_channels=wn_channels)
        assert sum(p.numel() for p in model.parameters()) == expected


def test_flags_defaults_and_model_config():
    parser = argparse.ArgumentParser()
    add_audio_args(parser)
    arg_parser.add_args(parser)
    args = parser.parse_args([])
    assert (args.flows, args.groups, args.early_every, args.early_size, args.wn_kernel_size, args.wn_channels,
            args.wn_layers) == (12, 8, 4, 2, 3, 512, 8)
    settings = arg_parser.WaveGlowTrainingSettings(output="unused", learning_rate=1e-4)
    assert (settings.sigma, settings.segment_length) == (1.0, 4000)
    config = arg_parser.model_config(parser.parse_args(["--wn-channels", "16", "--wn-layers", "2", "--flows", "4"]))
    assert config["wn_channels"] == 16 and config["n_mel_channels"] == 80 and config["hop_length"] == 256
    model = WaveGlow(**config)
    assert len(model.WN) == 4 and model.upsample.kernel_size == (1024,)
    with pytest.raises(SystemExit):
        parser.parse_args(["--n-flows", "4"])


@pytest.mark.parametrize("overrides, message", [
    (dict(groups=8, early_every=1, early_size=2, flows=5), "flow 4 would have 0 channels"),
    (dict(early_size=1), "flow 2 would have 7 channels"),
    (dict(groups=6), "groups \\(6\\) must divide hop_length"),
    (dict(wn_kernel_size=4), "wn_kernel_size must be odd"),
    (dict(flows=0), "flows must be at least 1"),
])


def test_bad_configurations_are_named(overrides, message):
    with pytest.raises(ValueError, match=message):
        WaveGlow(**{**TINY, **overrides})


@pytest.mark.slow
def test_bad_inputs_are_named():
    model = tiny_model()
    mel, audio = mel_and_audio()
    with pytest.raises(ValueError, match="not a multiple of groups"):
        model(mel, audio[:, :-3])
    with pytest.raises(ValueError, match="fewer than the"):
        model(mel[:, :, :2], audio)
    with pytest.raises(ValueError, match="noise has shape"):
        model.infer(mel, noise=torch.randn(2, 8, 100))


# ---------------------------------------------------------------------------------------------------------------
# The flow is invertible and its log-determinants are right


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-9), (torch.float32, 1e-4)])
def test_infer_inverts_forward(dtype, tolerance):
    model = tiny_model(dtype=dtype)
    mel, audio = mel_and_audio(dtype=dtype)
    with torch.no_grad():
        z = model(mel, audio).z
    assert z.abs().max() > 0.1  # the flow really changed the signal
    rebuilt = model.infer(mel, sigma=1.0, noise=z)
    assert (rebuilt - audio).abs().max() < tolerance
    # sigma scales the given noise: sigma 2 with z / 2 is the same latent
    assert (model.infer(mel, sigma=2.0, noise=z / 2) - audio).abs().max() < tolerance


def test_log_det_w_is_logdet_times_positions():
    model = tiny_model(dtype=torch.float64)
    with torch.no_grad():  # leave the rotations, so that log|det W| is not 0
        for conv in model.convinv:
            row_scales = torch.linspace(0.5, 2.0, conv.conv.weight.size(0), dtype=torch.float64)
            conv.conv.weight.mul_(row_scales[:, None, None])
    mel, audio = mel_and_audio(batch_size=3, dtype=torch.float64)
    output = model(mel, audio)
    positions = 2048 // 8
    for conv, log_det_w in zip(model.convinv, output.log_det_w):
        expected = 3 * positions * torch.logdet(conv.conv.weight.squeeze(-1))
        assert abs(expected.item()) > 10
        assert torch.allclose(log_det_w, expected, rtol=1e-12)
    # A freshly built 1x1 conv is a rotation: det +1, not -1
    for conv in tiny_model().convinv:
        assert torch.det(conv.conv.weight.squeeze(-1)).item() == pytest.approx(1.0, abs=1e-5)


def test_sigma_zero_is_deterministic():
    model = tiny_model()
    mel, _ = mel_and_audio()
    first = model.infer(mel, sigma=0.0)
    assert torch.equal(first, model.infer(mel, sigma=0.0))
    assert torch.equal(first, model.infer(mel, sigma=1.0, noise=torch.zeros(2, 8, 256)))
    assert not torch.equal(model.infer(mel, sigma=0.5), model.infer(mel, sigma=0.5))


def test_log_det_stays_fp32_under_autocast():
    model = tiny_model()
    mel, audio = mel_and_audio()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = model(mel, audio)
        loss = WaveGlowLoss()(output)
    assert output.z.dtype == torch.bfloat16  # the convolutions did run in bf16
    assert all(d.dtype == torch.float32 for d in output.log_det_w)
    assert loss.dtype == torch.float32


# ---------------------------------------------------------------------------------------------------------------
# The cached inverse 1x1 weights never go stale


def fresh_infer(model: WaveGlow, mel: torch.Tensor) -> torch.Tensor:
    """Inference by a never-used copy of model (so with no cache at all)."""
    twin = WaveGlow(**TINY).to(next(model.parameters()).dtype)
    if not any(torch.nn.utils.parametrize.is_parametrized(m) for m in model.modules()):
        remove_weight_norm(twin)
    twin.load_state_dict(model.state_dict())
    return twin.infer(mel, sigma=0.0)


def test_inverse_is_cached():
    model = tiny_model()
    mel, _ = mel_and_audio()
    model.infer(mel, sigma=0.0)
    cached = model.convinv[0].inverse_weight()
    model.infer(mel, sigma=0.0)
    assert model.convinv[0].inverse_weight() is cached
    assert torch.allclose(cached.squeeze(-1) @ model.convinv[0].conv.weight.squeeze(-1), torch.eye(8), atol=1e-5)


def test_infer_follows_an_optimizer_step():
    model = tiny_model()
    mel, audio = mel_and_audio()
    before = model.infer(mel, sigma=0.0)
    optimizer = torch.optim.SGD(model.convinv.parameters(), lr=0.1)
    WaveGlowLoss()(model(mel, audio)).backward()
    optimizer.step()
    after = model.infer(mel, sigma=0.0)
    assert not torch.allclose(before, after, atol=1e-4)
    assert torch.allclose(after, fresh_infer(model, mel), atol=1e-6)


@pytest.mark.slow
def test_infer_follows_load_state_dict():
    model = tiny_model(seed=0)
    mel, _ = mel_and_audio()
    model.infer(mel, sigma=0.0)
    other = tiny_model(seed=5)
    model.load_state_dict(other.state_dict())
    assert torch.allclose(model.infer(mel, sigma=0.0), other.infer(mel, sigma=0.0), atol=1e-6)
    # assign=True swaps in new tensors, whose version counters start again from 0
    third = tiny_model(seed=6)
    model.load_state_dict({key: value.clone() for key, value in third.state_dict().items()}, assign=True)
    assert torch.allclose(model.infer(mel, sigma=0.0), third.infer(mel, sigma=0.0), atol=1e-6)


def test_infer_follows_dtype_changes():
    model = tiny_model()
    mel, _ = mel_and_audio()
    model.infer(mel, sigma=0.0)
    model.double()
    in_double = model.infer(mel.double(), sigma=0.0)
    assert in_double.dtype == torch.float64
    assert model.convinv[0].inverse_weight().dtype == torch.float64
    assert torch.allclose(in_double, fresh_infer(model, mel.double()), atol=1e-12)
    # Back to fp32: the fp32 weights may even land at the old address; the result must still be fresh.
    with torch.no_grad():
        model.convinv[1].conv.weight.mul_(-1)  # so that a stale fp32 inverse would give a different result
    model.float()
    assert torch.allclose(model.infer(mel, sigma=0.0), fresh_infer(model, mel), atol=1e-6)
    # New storage, same dtype, device and version counter (what `.data =` or a custom _apply does)
    weight = model.convinv[0].conv.weight
    version = weight._version
    weight.data = weight.data.flip(0).clone()
    assert weight._version == version
    assert torch.allclose(model.infer(mel, sigma=0.0), fresh_infer(model, mel), atol=1e-6)


def test_remove_weight_norm_keeps_the_output():
    model = tiny_model()
    mel, audio = mel_and_audio()
    before = model.infer(mel, sigma=0.0)
    z_before = model(mel, audio).z.detach()
    remove_weight_norm(model)
    assert not any(torch.nn.utils.parametrize.is_parametrized(m) for m in model.modules())
    assert torch.allclose(model.infer(mel, sigma=0.0), before, atol=1e-5)
    assert torch.allclose(model(mel, audio).z, z_before, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# NVIDIA's published checkpoint layout


def reference_state_dict_shapes(wn_channels: int) -> dict[str, tuple]:
    """Key names and shapes of NVIDIA's WaveGlow state dict, written down from the reference notes (§3.2)."""
    c = wn_channels
    shapes = {"upsample.weight": (80, 80, 1024), "upsample.bias": (80,)}
    for k in range(12):
        channels = 8 - 2 * (k // 4)
        n_half = channels // 2
        prefix = f"WN.{k}"
        for i in range(8):
            shapes.update({
                f"{prefix}.in_layers.{i}.bias": (2 * c,), f"{prefix}.in_layers.{i}.weight_g": (2 * c, 1, 1),
                f"{prefix}.in_layers.{i}.weight_v": (2 * c, c, 3),
                f"{prefix}.cond_layers.{i}.bias": (2 * c,), f"{prefix}.cond_layers.{i}.weight_g": (2 * c, 1, 1),
                f"{prefix}.cond_layers.{i}.weight_v": (2 * c, 640, 1),
            })
            res = 2 * c if i < 7 else c
            shapes.update({f"{prefix}.res_skip_layers.{i}.bias": (res,),
                           f"{prefix}.res_skip_layers.{i}.weight_g": (res, 1, 1),
                           f"{prefix}.res_skip_layers.{i}.weight_v": (res, c, 1)})
        shapes.update({
            f"{prefix}.start.bias": (c,), f"{prefix}.start.weight_g": (c, 1, 1),
            f"{prefix}.start.weight_v": (c, n_half, 1),
            f"{prefix}.end.weight": (2 * n_half, c, 1), f"{prefix}.end.bias": (2 * n_half,),
            f"convinv.{k}.conv.weight": (channels, channels, 1),
        })
    return shapes


def test_nvidia_waveglow256_state_dict_loads_strictly():
    shapes = reference_state_dict_shapes(256)
    assert len(shapes) == 938
    # The published file was saved from DDP: every key starts with module.
    legacy = {f"module.{key}": torch.empty(shape, device="meta") for key, shape in shapes.items()}
    with torch.device("meta"):
        model = WaveGlow(wn_channels=256)
    result = model.load_state_dict(remap_legacy_state_dict(legacy), strict=True)
    assert not result.missing_keys and not result.unexpected_keys


def test_legacy_weight_norm_values_mean_the_same_weights():
    """g and v of torch.nn.utils.weight_norm land in original0/original1 and give the same network."""
    model = tiny_model(seed=3)
    legacy = {}
    for key, value in model.state_dict().items():
        key = key.replace(".parametrizations.weight.original0", ".weight_g")
        key = key.replace(".parametrizations.weight.original1", ".weight_v")
        legacy[f"module.{key}"] = value.clone()
    assert any(key.endswith("weight_g") for key in legacy)
    loaded = WaveGlow(**TINY)
    loaded.load_state_dict(remap_legacy_state_dict(legacy), strict=True)
    mel, _ = mel_and_audio()
    assert torch.equal(loaded.infer(mel, sigma=0.0), model.infer(mel, sigma=0.0))


# ---------------------------------------------------------------------------------------------------------------
# It learns


def test_tiny_waveglow_overfits_one_batch():
    torch.manual_seed(0)
    model = WaveGlow(**TINY)  # zero-initialised end layers, as in training
    mel, _ = mel_and_audio(seed=2)
    time = torch.arange(2048) / 22050.0
    audio = 0.5 * torch.sin(2 * torch.pi * 220 * time).repeat(2, 1) + 0.01 * torch.randn(2, 2048)
    loss_function = WaveGlowLoss(sigma=1.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = loss_function(model(mel, audio))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.5, losses
