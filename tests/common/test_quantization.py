"""int8 dynamic quantization (common/quantization.py): Tacotron 2's (`inference.py --quantize int8`, the Synthesizer's
quantize option) and wav2vec 2.0's (the Recognizer's) outputs stay close to float32's, the layers it covers are the
int8 ones, and it is refused where it cannot run (a GPU, bf16/fp16, --compile, TorchScript)."""
import copy

import pytest
import torch
from torch.ao.nn.quantized import dynamic

import inference
from common.errors import UserError
from common.quantization import Int8Conv1d, check_quantize, int8_linear, pack_int8_linear
from scripts.benchmark_pipeline import hold_gate_shut, random_checkpoint
from scripts.wav2vec2.benchmark_wav2vec2 import save_random_ctc_checkpoint, write_batch_inputs
from tacotron2.api import Synthesizer, quantize_tacotron2
from tacotron2.model import max_steps_warnings_silenced
from tests.tacotron2.tiny_tacotron2 import padded_text, tiny_model
from wav2vec2.api import Recognizer

# How far int8's output may be from float32's, as a share of the float32 output's range (max - min). Measured on
# these random tiny models: about 1 % for Tacotron 2's mel and wav2vec 2.0's logits.
TOLERANCE = 0.05


def assert_close_to_fp32(int8: torch.Tensor, fp32: torch.Tensor) -> None:
    spread = float(fp32.max() - fp32.min())
    difference = float((int8 - fp32).abs().max())
    assert 0 < difference <= TOLERANCE * spread, (difference, spread)  # 0: nothing was quantized


@pytest.mark.parametrize("fast_decoder", [False, True])
def test_tacotron2_int8_mel_is_close_to_fp32_and_its_lstms_and_linears_are_int8(fast_decoder):
    model = tiny_model().eval()
    hold_gate_shut(model)
    quantized = copy.deepcopy(model)
    quantize_tacotron2(quantized, fast_decoder)
    assert quantized.decoder.fast == fast_decoder
    assert (quantized.decoder.int8_step_weights is not None) == fast_decoder
    quantized_types = {type(module) for module in quantized.modules()}
    assert {dynamic.LSTM, dynamic.LSTMCell, dynamic.Linear} <= quantized_types
    assert not quantized_types & {torch.nn.LSTM, torch.nn.LSTMCell, torch.nn.Linear}
    text, lengths = padded_text([12])
    with torch.no_grad(), max_steps_warnings_silenced():
        mels = [m.infer(text, lengths, max_decoder_steps=30, generator=torch.Generator().manual_seed(0)).mel
                for m in (model, quantized)]
    assert mels[0].shape == mels[1].shape == (1, 8, 30)
    assert_close_to_fp32(mels[1], mels[0])


@pytest.fixture
def tacotron2_checkpoint(tmp_path):
    """NVIDIA's size, random weights, the gate held shut (every utterance decodes --max-decoder-steps)."""
    return random_checkpoint("Tacotron2", {}, tmp_path, hold_gate_shut)


def synthesizer_args(tmp_path, checkpoint, *extra: str):
    return inference.build_parser().parse_args(["-i", "x.txt", "-o", str(tmp_path), "--tacotron2", str(checkpoint),
                                                "--vocoder", "griffin-lim", "--griffin-lim-iters", "1", "--cpu",
                                                "--max-decoder-steps", "8", *extra])


@pytest.mark.parametrize("decoder", [["--no-fast-decoder"], [], ["--fast-decoder"]])  # []: the CPU's fast decoder
def test_inference_quantize_int8_synthesizes_a_mel_close_to_fp32s(tmp_path, tacotron2_checkpoint, decoder, capsys):
    mels = [Synthesizer.from_args(synthesizer_args(tmp_path, tacotron2_checkpoint, *flags)).synthesize_batch(
                ["Hello."], ["line 1"], seed=0, warn_max_steps=False)["mel"]
            for flags in (["--no-torchscript"], ["--quantize", "int8", *decoder])]  # int8 runs without TorchScript
    assert_close_to_fp32(mels[1], mels[0])
    # Without the fast decoder the per-tensor int8 LSTMs degrade a trained model's speech: said, not refused.
    warned = "warning: --quantize int8 with --no-fast-decoder" in capsys.readouterr().err
    assert warned == (decoder == ["--no-fast-decoder"])


@pytest.mark.parametrize("flag", ["--compile", "--torchscript"])
def test_inference_quantize_int8_is_refused_with_compile_and_torchscript(tmp_path, tacotron2_checkpoint, flag):
    with pytest.raises(UserError, match=f"--quantize int8 runs eagerly; it cannot be combined with {flag}"):
        Synthesizer.from_args(synthesizer_args(tmp_path, tacotron2_checkpoint, "--quantize", "int8", flag))


def test_an_int8_packed_product_is_close_to_the_float_one():
    generator = torch.Generator().manual_seed(0)
    weight, bias = torch.randn(64, 48, generator=generator), torch.randn(64, generator=generator)
    x = torch.randn(3, 48, generator=generator)
    exact = torch.nn.functional.linear(x, weight, bias)
    assert_close_to_fp32(int8_linear(x, pack_int8_linear(weight, bias)), exact)


def test_quantize_is_refused_on_a_gpu_in_one_line():
    assert not check_quantize("none", torch.device("cuda"))
    assert check_quantize("int8", torch.device("cpu"))
    with pytest.raises(UserError) as refused:
        check_quantize("int8", torch.device("cuda"))
    assert str(refused.value) == ("--quantize int8 runs on the CPU only (dynamic quantization has no cuda kernels): "
                                  "add --cpu, or drop the flag")


def test_quantize_is_refused_with_bf16_and_fp16(tmp_path, tacotron2_checkpoint):
    with pytest.raises(UserError, match="--quantize int8 computes between float32 activations; it cannot be "
                                        "combined with --bf16: drop one of them"):
        Synthesizer.from_args(synthesizer_args(tmp_path, tacotron2_checkpoint, "--quantize", "int8", "--bf16"))
    save_random_ctc_checkpoint(tmp_path / "ctc.pt", "tiny", None)
    with pytest.raises(UserError, match="cannot be combined with --amp"):
        Recognizer.from_checkpoint(tmp_path / "ctc.pt", "cpu", "fp16", quantize="int8")


def test_the_quantize_flag_is_tacotron2s_and_wav2vec2s_and_defaults_to_none():
    assert inference.build_parser("Tacotron2").parse_args(["-i", "x", "-o", "y", "--tacotron2", "t.pt"]
                                                          ).quantize == "none"
    assert inference.build_parser("wav2vec2").parse_args(["-i", "x.wav", "-o", "y", "--checkpoint", "c.pt",
                                                          "--quantize", "int8"]).quantize == "int8"


def test_wav2vec2_int8_logits_are_close_to_fp32_and_its_linears_and_extractor_convolutions_are_int8(tmp_path):
    checkpoint = tmp_path / "ctc.pt"
    save_random_ctc_checkpoint(checkpoint, "tiny", None)
    wav = write_batch_inputs(tmp_path / "inputs", 1, 1.0, 1.0)
    recognizers = [Recognizer.from_checkpoint(checkpoint, "cpu", quantize=quantize) for quantize in ("none", "int8")]
    assert any(type(module) is dynamic.Linear for module in recognizers[1].model.modules())
    assert not any(type(module) is torch.nn.Linear for module in recognizers[1].model.modules())
    extractor = recognizers[1].model.w2v_encoder.w2v_model.feature_extractor
    convolutions = [block[0] for block in extractor.conv_layers]
    # The first convolution reads the raw waveform (one channel) and stays float32; every other one is int8.
    assert type(convolutions[0]) is torch.nn.Conv1d and len(convolutions) > 1
    assert all(type(conv) is Int8Conv1d for conv in convolutions[1:])
    logits = [recognizer.logits(recognizer.utterances(wav))[0] for recognizer in recognizers]
    assert_close_to_fp32(logits[1], logits[0])


@pytest.mark.parametrize("stride, dilation, padding, bias", [(2, 1, 0, False), (2, 2, 0, True), (1, 3, 6, True),
                                                             (4, 1, 1, False)])
def test_an_int8_convolution_is_close_to_the_float_one_and_keeps_its_output_length(stride, dilation, padding, bias):
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(24, 40, 5, stride=stride, dilation=dilation, padding=padding, bias=bias).eval()
    x = torch.nn.functional.gelu(torch.randn(2, 24, 300))
    x[1] *= torch.linspace(0.001, 3.0, 300)  # quiet frames beside loud ones: each frame has its own scale
    with torch.no_grad():
        exact, int8 = conv(x), Int8Conv1d(conv)(x)
    assert int8.shape == exact.shape
    assert_close_to_fp32(int8, exact)
    # Per frame, not per call: the quiet start of the second utterance keeps its relative precision (0.5 % of its
    # range here; one scale per call gave 4.8 % in a scratch check).
    quiet_int8, quiet_exact = int8[1, :, :20], exact[1, :, :20]
    assert float((quiet_int8 - quiet_exact).abs().max()) <= 0.01 * float(quiet_exact.max() - quiet_exact.min())


def test_an_int8_convolution_over_long_inputs_goes_in_slices_that_give_the_whole_products_result(monkeypatch):
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(16, 8, 3, stride=2, bias=True).eval()
    x = torch.randn(1, 16, 401)
    with torch.no_grad():
        whole = Int8Conv1d(conv)(x)
        monkeypatch.setattr(Int8Conv1d, "MAX_FIELD_VALUES", 16 * 3 * 7)  # 7 frames per product: 29 slices
        sliced = Int8Conv1d(conv)(x)
    assert sliced.shape == whole.shape == (1, 8, 200)
    # Each frame is quantized on its own scale, so slicing changes at most the rounding of the per-call zero point.
    assert float((sliced - whole).abs().max()) <= 0.01 * float(whole.max() - whole.min())
    assert_close_to_fp32(sliced, conv(x).detach())


def test_an_int8_convolution_names_an_input_shorter_than_its_receptive_field():
    conv = Int8Conv1d(torch.nn.Conv1d(4, 4, 5, dilation=2).eval())
    with pytest.raises(ValueError, match="an input of 8 samples is shorter than the convolution's receptive field "
                                         r"\(9\)"):
        conv(torch.randn(1, 4, 8))


@pytest.mark.slow  # inductor compiles on the CPU
def test_a_compiled_int8_convolution_gives_the_eager_one(monkeypatch):
    """The benchmark's compiled-int8 path (Recognizer(quantize="int8", compile=True)) compiles Int8Conv1d."""
    torch.manual_seed(0)
    monkeypatch.setattr(Int8Conv1d, "MAX_FIELD_VALUES", 8 * 3 * 25)  # two slices: the loop is compiled too
    conv = Int8Conv1d(torch.nn.Conv1d(8, 6, 3, stride=2, bias=True).eval())
    x = torch.nn.functional.gelu(torch.randn(1, 8, 101))
    with torch.no_grad():
        eager, compiled = conv(x), torch.compile(conv)(x)
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)
