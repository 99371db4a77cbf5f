import math

import pytest
import torch

from nvwavenet.model import WaveNet, dilation_cycle, mu_law_decode, mu_law_encode, silence_class
from tests.nvwavenet.tiny_wavenet import TINY, conditioning_impulse_response, tiny_inputs, tiny_model


# ---------------------------------------------------------------------------------------------------------------
# Mu-law


def mu_law_encode_by_formula(x: float, mu: int = 255) -> int:
    companded = math.copysign(math.log1p(mu * abs(x)) / math.log1p(mu), x)
    return math.floor((companded + 1) / 2 * mu + 0.5)


def mu_law_decode_by_formula(q: int, mu: int = 255) -> float:
    s = 2 * q / mu - 1
    return math.copysign(((1 + mu) ** abs(s) - 1) / mu, s)


def test_mu_law_encode_matches_formula():
    values = torch.linspace(-1, 1, 2001, dtype=torch.float64)
    expected = torch.tensor([mu_law_encode_by_formula(float(v)) for v in values])
    assert torch.equal(mu_law_encode(values), expected)
    assert mu_law_encode(torch.tensor([-1.0, 0.0, 1.0])).tolist() == [0, 128, 255]
    assert silence_class(256) == 128
    assert mu_law_encode(torch.tensor([-3.0, 2.0])).tolist() == [0, 255]  # clipped, never out of range


def test_mu_law_decode_matches_formula():
    classes = torch.arange(256)
    expected = torch.tensor([mu_law_decode_by_formula(int(q)) for q in classes], dtype=torch.float32)
    torch.testing.assert_close(mu_law_decode(classes), expected, rtol=1e-6, atol=1e-9)
    assert mu_law_decode(torch.tensor([128])).item() == pytest.approx(8.62e-5, rel=1e-2)  # silence is not 0
    assert mu_law_decode(torch.tensor([0, 255])).tolist() == [-1.0, 1.0]


def test_mu_law_round_trip():
    for quantization in (256, 16):
        classes = torch.arange(quantization)
        assert torch.equal(mu_law_encode(mu_law_decode(classes, quantization), quantization), classes)
    audio = torch.linspace(-1, 1, 10001)
    decoded = mu_law_decode(mu_law_encode(audio))
    # Half a class is 1/255 in the companded domain; the expansion's slope there is at most
    # 1.03 * ln(256) * (|x| + 1/255), so the error grows with |x| (fine near silence, coarse when loud).
    bound = 1.03 * math.log(256) / 255 * (audio.abs() + 1 / 255)
    assert torch.all((decoded - audio).abs() <= bound)
    assert (decoded - audio).abs().max() > 0.5 * bound.max()  # and the bound is not loose


def test_dilation_cycle():
    assert dilation_cycle(20, 512) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] * 2
    assert dilation_cycle(5, 2) == [1, 2, 1, 2, 1]
    assert dilation_cycle(3, 1) == [1, 1, 1]
    with pytest.raises(ValueError, match="--max-dilation"):
        dilation_cycle(4, 100)


# ---------------------------------------------------------------------------------------------------------------
# Shapes and parameter layout (the kernel helper reads these names)


def test_forward_shape_and_parameter_layout():
    model = tiny_model()
    mel, classes = tiny_inputs()
    assert model(mel, classes).shape == (2, 16, 512)
    R, S, A, L, n_mel = 8, 16, 16, 4, 8
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    assert shapes["embed_prev.weight"] == shapes["embed_cur.weight"] == (A, R)
    assert shapes["upsample.weight"] == (n_mel, n_mel, 4 * 16)
    assert shapes["conditioning.weight"] == (L * 2 * R, n_mel, 1)
    for layer in range(L):
        assert shapes[f"layers.{layer}.dilated_conv.weight"] == (2 * R, R, 2)
        assert shapes[f"layers.{layer}.dilated_conv.bias"] == (2 * R,)
        assert shapes[f"layers.{layer}.skip_conv.weight"] == (S, R, 1)
        assert (f"layers.{layer}.res_conv.weight" in shapes) == (layer < L - 1)
    assert shapes["skip_to_hidden.weight"] == (A, S, 1)
    assert shapes["hidden_to_logits.weight"] == (A, A, 1)
    assert model.dilations == [1, 2, 4, 1]
    assert [layer.dilated_conv.dilation[0] for layer in model.layers] == model.dilations
    assert "upsample.weight" not in dict(tiny_model(upsampling="repeat").named_parameters())


def test_constructor_errors_name_the_setting():
    with pytest.raises(ValueError, match="--upsampling"):
        WaveNet(**{**TINY, "upsampling": "linear"})
    with pytest.raises(ValueError, match="--upsample-window"):
        WaveNet(**{**TINY, "upsample_window": 8})
    with pytest.raises(ValueError, match="--max-dilation"):
        WaveNet(**{**TINY, "max_dilation": 3})


def test_mel_audio_length_mismatch_is_a_clear_error():
    model = tiny_model()
    mel, classes = tiny_inputs()
    with pytest.raises(ValueError, match=r"31 mel frames x hop 16 = 496 samples, but the audio has 512"):
        model(mel[:, :, :-1], classes)
    with pytest.raises(ValueError, match="8 mel channels"):
        model(mel[:, :4], classes)


# ---------------------------------------------------------------------------------------------------------------
# Causality and conditioning alignment


def test_logits_are_causal_in_the_audio():
    model = tiny_model()
    mel, classes = tiny_inputs()
    reference = model(mel, classes)
    for t in (0, 100, 511):
        changed = classes.clone()
        changed[:, t] = (changed[:, t] + 5) % 16
        logits = model(mel, changed)
        torch.testing.assert_close(logits[:, :, :t + 1], reference[:, :, :t + 1], rtol=0, atol=0)
        if t + 1 < 512:  # the very next logit is the first to see sample t (through the embedding)
            assert (logits[:, :, t + 1] - reference[:, :, t + 1]).abs().max() > 1e-3
        if t + 2 < 512:  # and E_prev makes it reach two steps ahead directly too
            assert (logits[:, :, t + 2] - reference[:, :, t + 2]).abs().max() > 1e-3


def test_receptive_field_matches_the_dilations():
    # Sample t reaches logits up to t + 1 (embedding) + sum(dilations) (the dilated taps), and no further.
    model = tiny_model()
    mel, classes = tiny_inputs()
    reference = model(mel, classes)
    changed = classes.clone()
    changed[:, 100] = (changed[:, 100] + 5) % 16
    difference = (model(mel, changed) - reference).abs().amax(dim=(0, 1))
    reached = torch.nonzero(difference > 0).flatten()
    assert reached.min().item() == 101
    assert reached.max().item() == 100 + 2 + sum(model.dilations)  # E_prev looks two back; taps add the dilations


def test_sample_t_conditioning_first_reaches_logit_t():
    model = tiny_model()
    mel, classes = tiny_inputs()
    for t in (0, 37, 511):
        change = conditioning_impulse_response(model, mel, classes, t, lambda m, x, y: m(x, y))
        assert torch.all(change[:t] == 0)
        assert change[t] > 1e-3  # the reference trained with c[t-1] here; inference used c[t]


def test_repeat_upsampling_gives_sample_t_frame_t_over_hop():
    model = tiny_model(upsampling="repeat")
    mel, _ = tiny_inputs()
    upsampled = model.upsample_mel(mel)
    assert upsampled.shape == (2, 8, 512)
    t = torch.arange(512)
    torch.testing.assert_close(upsampled, mel[:, :, t // 16], rtol=0, atol=0)


def test_transposed_conv_upsampling_centres_each_frame_on_its_hop():
    model = tiny_model()  # window 64 = 4 hops
    mel, _ = tiny_inputs()
    upsampled = model.upsample_mel(mel)
    assert upsampled.shape == (2, 8, 512)
    frame = 10
    bumped = mel.clone()
    bumped[:, :, frame] += 1
    reached = torch.nonzero((model.upsample_mel(bumped) - upsampled).abs().amax(dim=(0, 1)) > 0).flatten()
    # Frame f reaches [f*hop - (window - hop)/2, f*hop + (window + hop)/2), centred on its hop [f*hop, (f+1)*hop).
    assert (reached.min().item(), reached.max().item()) == (160 - 24, 160 + 40 - 1)


def test_model_trains_under_gradients():
    model = tiny_model(dtype=torch.float32).train()
    mel, classes = tiny_inputs(dtype=torch.float32)
    torch.nn.functional.cross_entropy(model(mel, classes), classes).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
