"""Tacotron 2's fast paths against the reference decoder.

- The inference loop (preallocated outputs, the stop read on the host every N steps) gives exactly the results of
  the loop it replaced, written out below as it was.
- The fast decoder (--fast-decoder) equals the reference step to rounding, in training (outputs and every gradient)
  and in inference; its StepwiseLinear gives autograd's weight gradient from one product.
- torch.compile'd steps (--compile) equal the eager ones within 1e-5.
- The LSTMs' weights in float16 (--half-lstm-weights, the CPU's default) keep the mel within 1e-3 of float32's, for
  batches of one or two utterances, and leave larger batches exactly as they were.
"""
import argparse
import gc
import weakref

import pytest
import torch

import inference
import train
from common.errors import UserError
from common.text import TextProcessor
from scripts.benchmark_pipeline import random_checkpoint
from tacotron2.api import SynthesisSettings, default_half_lstm_weights
from tacotron2.inference import Synthesizer
from tacotron2.loss_function import Tacotron2Loss
from tacotron2.model import EAGER_STEP_FUNCTIONS, HALF_LSTM_WEIGHTS_MAX_BATCH, StepwiseLinear
from tacotron2.recipe import RECIPE
from tests.tacotron2.tiny_tacotron2 import TINY, iteration_losses, padded_text, tiny_model, train_args, training_batch

TOLERANCE = dict(atol=1e-5, rtol=1e-5)


def loop_before_preallocation(decoder, memory, text_lengths, max_steps, gate_threshold, early_stopping, generator,
                              prenet_masks):
    """Decoder.infer as it was before its outputs were preallocated: lists of steps, the stop read every step."""
    batch = memory.size(0)
    processed_memory = decoder.attention_layer.memory_layer(memory)
    padding = ~torch.arange(memory.size(1)).unsqueeze(0).lt(text_lengths.unsqueeze(1))
    state = decoder.initial_state(memory)
    frame = memory.new_zeros(batch, decoder.n_mel_channels)
    n_steps = torch.zeros(batch, dtype=torch.long)
    stopped = torch.zeros(batch, dtype=torch.bool)
    frames, alignments = [], []
    for s in range(max_steps):
        keep_masks = (prenet_masks[s] if prenet_masks is not None
                      else decoder.prenet.draw_keep_masks([1], memory.device, generator))
        step_frames, gate, state = decoder.step(decoder.prenet(frame, keep_masks), state, memory, processed_memory,
                                                padding)
        frames.append(step_frames)
        alignments.append(state.attention_weights)
        n_steps += (~stopped).long()
        stopped = stopped | (torch.sigmoid(gate.float()) > gate_threshold)
        frame = step_frames[:, -1]
        if early_stopping and bool(stopped.all()):
            break
    mel = torch.cat(frames, dim=1).transpose(1, 2)
    return mel, n_steps, torch.stack(alignments, dim=1), stopped


def stop_on_reaching_the_last_symbol(model, threshold: float = 1.0) -> None:
    """Both decoder steps' gates fire once an utterance has put `threshold` attention on its last symbol, so the
    utterances of a batch stop at different steps, each by its own state (as a trained model's do)."""
    for name in ("step", "fast_step"):
        original = getattr(model.decoder, name)

        def step(prenet_output, state, memory, processed_memory, padding, *weights, original=original):
            frames, _, state = original(prenet_output, state, memory, processed_memory, padding, *weights)
            last = (~padding).sum(1, keepdim=True) - 1
            reached = state.attention_weights_cum.gather(1, last).squeeze(1) > threshold
            return frames, torch.where(reached, 10.0, -10.0), state

        setattr(model.decoder, name, step)


@pytest.mark.parametrize("r", [1, 3])
@pytest.mark.parametrize("early_stopping", [True, False])
@pytest.mark.parametrize("max_steps", [3, 40])  # 3: some utterances are cut at max_steps
def test_inference_loop_gives_exactly_the_results_of_the_loop_it_replaced(r, early_stopping, max_steps):
    model = tiny_model(n_frames_per_step=r).eval()
    stop_on_reaching_the_last_symbol(model, threshold=0.6)
    text, lengths = padded_text([3, 8, 5, 6])
    with torch.no_grad():
        memory = model.encode(text, lengths)
        expected = loop_before_preallocation(model.decoder, memory, lengths, max_steps, 0.5, early_stopping,
                                             torch.Generator().manual_seed(2), None)
        if early_stopping and max_steps == 40:
            assert len(set(expected[1].tolist())) > 1 and bool(expected[3].all())  # different stops, all stopped
        if max_steps == 3:
            assert not bool(expected[3].all())
        for interval in (1, 3, 16):
            result = model.decoder.infer(memory, lengths, max_steps, 0.5, early_stopping,
                                         torch.Generator().manual_seed(2), None, stop_check_interval=interval)
            for name, got, want in zip(("mel", "n_steps", "alignments", "stopped"), result, expected):
                assert got.shape == want.shape and torch.equal(got, want), (name, interval)


def test_inference_loop_with_given_prenet_masks_equals_the_old_loop():
    model = tiny_model().eval()
    text, lengths = padded_text([4, 7])
    masks = torch.rand(12, 2, 1, 16, generator=torch.Generator().manual_seed(5)) >= 0.5
    with torch.no_grad():
        memory = model.encode(text, lengths)
        expected = loop_before_preallocation(model.decoder, memory, lengths, 12, 0.5, True, None, masks)
        result = model.decoder.infer(memory, lengths, 12, 0.5, True, None, masks, stop_check_interval=5)
    assert all(torch.equal(got, want) for got, want in zip(result, expected))


def outputs_and_gradients(model, batch, r, fast, prenet_masks=None):
    model.decoder.fast = fast
    torch.manual_seed(3)  # the attention and decoder dropout (and the prenet's masks when not given)
    output = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"], prenet_masks)
    loss = Tacotron2Loss(guided_attn_weight=1.0, n_frames_per_step=r)(output, batch)["loss"]
    model.zero_grad()
    loss.backward()
    return output, {name: parameter.grad.clone() for name, parameter in model.named_parameters()}


@pytest.mark.slow
@pytest.mark.parametrize("r, mask_padding, given_masks", [(1, False, False), (1, True, True), (3, True, False)])
def test_fast_decoder_trains_as_the_reference_to_rounding(r, mask_padding, given_masks):
    model = tiny_model(n_frames_per_step=r, mask_padding=mask_padding)
    batch = training_batch([5, 9, 7], [13, 20, 17])
    n_steps = -(-20 // r)
    masks = torch.rand(2, 3, n_steps, 16, generator=torch.Generator().manual_seed(1)) >= 0.5 if given_masks else None
    reference, reference_grads = outputs_and_gradients(model, batch, r, fast=False, prenet_masks=masks)
    fast, fast_grads = outputs_and_gradients(model, batch, r, fast=True, prenet_masks=masks)
    for name, got, want in zip(reference._fields, fast, reference):
        torch.testing.assert_close(got, want, **TOLERANCE, msg=name)
    assert_same_gradients(fast_grads, reference_grads)


def assert_same_gradients(got: dict, expected: dict) -> None:
    """Within 1e-5 of each gradient's largest value."""
    for name, want in expected.items():
        if name.endswith(".0.conv.bias"):  # before a training-mode BatchNorm: no true gradient, rounding noise
            continue
        scale = want.abs().max().item()
        torch.testing.assert_close(got[name] / scale, want / scale, atol=1e-5, rtol=0, msg=name)


def test_fast_decoder_runs_under_bf16_autocast_near_fp32():
    model = tiny_model()
    batch = training_batch([5, 9], [13, 20])
    fp32, _ = outputs_and_gradients(model, batch, 1, fast=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16, gradients = outputs_and_gradients(model, batch, 1, fast=True)
    assert bf16.mel.dtype == torch.bfloat16
    assert all(gradient.dtype == torch.float32 and torch.isfinite(gradient).all() for gradient in gradients.values())
    torch.testing.assert_close(bf16.mel.float(), fp32.mel, atol=0.1, rtol=0.05)


@pytest.mark.parametrize("r", [1, 2])
def test_fast_inference_step_equals_the_reference_to_rounding(r):
    model = tiny_model(n_frames_per_step=r).eval()
    stop_on_reaching_the_last_symbol(model, threshold=0.6)
    text, lengths = padded_text([3, 8, 5, 6])
    results = {}
    for fast in (False, True):
        model.decoder.fast = fast
        results[fast] = model.infer(text, lengths, max_decoder_steps=40, generator=torch.Generator().manual_seed(4))
    assert len(set(results[False].mel_lengths.tolist())) > 1
    assert torch.equal(results[True].mel_lengths, results[False].mel_lengths)
    torch.testing.assert_close(results[True].mel, results[False].mel, **TOLERANCE)
    torch.testing.assert_close(results[True].alignments, results[False].alignments, **TOLERANCE)


HALF_TOLERANCE = dict(atol=1e-3, rtol=0)  # measured: 2e-4 at most on this tiny model (mel values up to 1.4)
BF16_TOLERANCE = dict(atol=1e-2, rtol=0)  # measured: 1.6e-3 at most


@pytest.mark.parametrize("r", [1, 2])
@pytest.mark.parametrize("native_bf16", [False, True])
def test_half_lstm_weights_keep_the_mel_near_float32_at_every_batch(r, native_bf16):
    """float16 weights for one or two utterances; bf16 for more where bf16 is native (set here whatever this CPU
    has: emulated bf16 gives the same numbers, slowly), float32 otherwise."""
    model = tiny_model(n_frames_per_step=r).eval()
    stop_on_reaching_the_last_symbol(model, threshold=0.6)
    model.decoder.fast, model.decoder.native_bf16 = True, native_bf16
    for lengths_of_batch in ([3], [3, 8], [3, 8, 5]):
        text, lengths = padded_text(lengths_of_batch)
        results = {}
        for half in (False, True):
            model.decoder.half_lstm_weights = half
            results[half] = model.infer(text, lengths, max_decoder_steps=40,
                                        generator=torch.Generator().manual_seed(4))
        held = model.decoder.inference_step_weights(len(lengths_of_batch))
        expected = (torch.float16 if len(lengths_of_batch) <= HALF_LSTM_WEIGHTS_MAX_BATCH
                    else torch.bfloat16 if native_bf16 else torch.float32)
        assert held.attention_lstm.dtype == held.decoder_lstm.dtype == expected
        assert held.projection.dtype == torch.float32  # the small products stay float32
        assert torch.equal(results[True].mel_lengths, results[False].mel_lengths)
        if expected == torch.float32:
            assert torch.equal(results[True].mel, results[False].mel)
        else:
            assert not torch.equal(results[True].mel, results[False].mel)  # the 16-bit products did run
            tolerance = HALF_TOLERANCE if expected == torch.float16 else BF16_TOLERANCE
            torch.testing.assert_close(results[True].mel, results[False].mel, **tolerance)
    model.decoder.quantize_fast_step()  # int8 packs the float32 weights, whatever half_lstm_weights says
    assert model.decoder.inference_step_weights(1) is model.decoder.int8_step_weights


CPU, GPU = torch.device("cpu"), torch.device("cuda")


@pytest.mark.parametrize("device, dtype, fast_decoder, compiled, quantized, default", [
    (CPU, torch.float32, True, False, False, True), (GPU, torch.float32, True, False, False, False),
    (CPU, torch.bfloat16, True, False, False, False), (CPU, torch.float32, False, False, False, False),
    (CPU, torch.float32, True, True, False, False), (CPU, torch.float32, True, False, True, False)])
def test_half_lstm_weights_are_the_default_only_on_the_eager_fast_float32_cpu_path(device, dtype, fast_decoder,
                                                                                  compiled, quantized, default,
                                                                                  monkeypatch):
    monkeypatch.setattr("tacotron2.api.vectorized_half_products", lambda: True)
    settings = SynthesisSettings(compile=compiled)
    assert default_half_lstm_weights(settings, device, dtype, fast_decoder, quantized) == default
    asked = SynthesisSettings(compile=compiled, half_lstm_weights=True)
    if default:
        assert default_half_lstm_weights(asked, device, dtype, fast_decoder, quantized)
    else:
        with pytest.raises(UserError, match="--half-lstm-weights cannot be combined with .*: drop one of them"):
            default_half_lstm_weights(asked, device, dtype, fast_decoder, quantized)
    off = SynthesisSettings(compile=compiled, half_lstm_weights=False)
    assert not default_half_lstm_weights(off, device, dtype, fast_decoder, quantized)
    monkeypatch.setattr("tacotron2.api.vectorized_half_products", lambda: False)  # ATen's scalar kernels
    assert not default_half_lstm_weights(settings, device, dtype, fast_decoder, quantized)


def test_the_fast_step_is_for_inference_only():
    """In training mode infer runs the reference step: the fast step has no attention or decoder dropout."""
    model = tiny_model()
    model.decoder.fast = True
    model.decoder.fast_step = None  # would fail if called
    text, lengths = padded_text([4])
    assert model.infer(text, lengths, max_decoder_steps=5).mel.shape[2] <= 5


def recurrence(step_product, weight, inputs):
    hidden = torch.zeros(inputs.size(1), weight.size(0))
    outputs = []
    for x in inputs:
        hidden = torch.tanh(step_product(torch.cat([x, hidden], dim=1), weight))
        outputs.append(hidden)
    return torch.stack(outputs).pow(2).sum()


def test_stepwise_linear_gives_autograds_gradients_and_accumulates():
    torch.manual_seed(0)
    weight = torch.randn(6, 4 + 6, requires_grad=True)
    inputs = torch.randn(5, 3, 4, requires_grad=True)
    for _ in range(2):  # two backward passes accumulate, as with --grad-accumulation
        recurrence(lambda x, w: x @ w.t(), weight, inputs).backward()
    expected = weight.grad.clone(), inputs.grad.clone()
    weight.grad = inputs.grad = None
    for _ in range(2):
        stepwise = StepwiseLinear(weight)  # one per forward pass
        recurrence(lambda x, w: stepwise(x), weight, inputs).backward()
    torch.testing.assert_close(weight.grad, expected[0])
    torch.testing.assert_close(inputs.grad, expected[1])


def test_stepwise_linear_leaves_no_reference_cycle():
    """A pass's tensors are freed as soon as it is dropped, without waiting for the garbage collector."""
    weight = torch.randn(6, 10, requires_grad=True)
    inputs = torch.randn(5, 3, 4, requires_grad=True)

    def weight_as_a_pass_read_it(backward: bool) -> weakref.ref:
        stepwise = StepwiseLinear(weight)
        loss = recurrence(lambda x, w: stepwise(x), weight, inputs)
        if backward:
            loss.backward()
        return weakref.ref(stepwise.weight)

    gc.disable()
    try:
        assert weight_as_a_pass_read_it(backward=False)() is None
        assert weight_as_a_pass_read_it(backward=True)() is None
    finally:
        gc.enable()


def test_stepwise_linear_with_a_frozen_weight_and_under_autocast():
    weight = torch.randn(6, 10)
    inputs = torch.randn(5, 3, 4, requires_grad=True)
    recurrence(lambda x, w: StepwiseLinear(w)(x), weight, inputs).backward()  # the weight needs no gradient
    assert weight.grad is None and inputs.grad is not None
    weight.requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        stepwise = StepwiseLinear(weight)
        assert stepwise(torch.randn(3, 10)).dtype == torch.bfloat16  # a use the loss does not reach
        loss = recurrence(lambda x, w: stepwise(x), weight, inputs)
    loss.backward()
    assert weight.grad.dtype == torch.float32 and torch.isfinite(weight.grad).all()


@pytest.mark.slow
def test_compiled_decoder_equals_eager_in_training_and_inference():
    """torch.compile of the fast decoder's step functions (a tiny model: seconds to compile)."""
    model = tiny_model(n_frames_per_step=2, mask_padding=True)
    batch = training_batch([5, 9, 7], [13, 20, 17])
    eager, eager_grads = outputs_and_gradients(model, batch, 2, fast=True)
    model.decoder.compile_step()
    outputs_and_gradients(model, batch, 2, fast=True)  # compiling may draw random numbers: a first run apart
    compiled, compiled_grads = outputs_and_gradients(model, batch, 2, fast=True)
    for name, got, want in zip(eager._fields, compiled, eager):
        torch.testing.assert_close(got, want, **TOLERANCE, msg=name)
    assert_same_gradients(compiled_grads, eager_grads)

    model.eval()
    text, lengths = padded_text([3, 8, 5])

    def infer():
        return model.infer(text, lengths, max_decoder_steps=15, generator=torch.Generator().manual_seed(1))

    compiled = infer()
    model.decoder.step_functions = EAGER_STEP_FUNCTIONS
    eager = infer()
    assert torch.equal(compiled.mel_lengths, eager.mel_lengths)
    torch.testing.assert_close(compiled.mel, eager.mel, **TOLERANCE)
    torch.testing.assert_close(compiled.alignments, eager.alignments, **TOLERANCE)


def test_the_recipe_chooses_the_decoder_from_the_flags():
    model = tiny_model()
    RECIPE.init_weights(model, argparse.Namespace(fast_decoder=True, disable_uniform_initialize_bn_weight=True))
    assert model.decoder.fast
    RECIPE.init_weights(model, argparse.Namespace(fast_decoder=False, disable_uniform_initialize_bn_weight=True))
    assert not model.decoder.fast
    RECIPE.compile_model(model, argparse.Namespace())
    assert model.decoder.fast and model.decoder.step_functions != EAGER_STEP_FUNCTIONS


@pytest.mark.slow
def test_train_py_with_the_fast_decoder_follows_the_reference_curve(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(train_args(synthetic_corpus, tmp_path / "reference", "--epochs", "1"))
    train.main(train_args(synthetic_corpus, tmp_path / "fast", "--epochs", "1", "--fast-decoder"))
    reference = iteration_losses(tmp_path / "reference" / "nvlog.json")
    fast = iteration_losses(tmp_path / "fast" / "nvlog.json")
    assert [step for step, _ in fast] == [step for step, _ in reference]
    assert [loss for _, loss in fast] == pytest.approx([loss for _, loss in reference], rel=1e-4)


@pytest.mark.slow
def test_inference_py_s_cpu_default_is_the_fast_decoder_near_the_reference_and_refuses_torchscript(tmp_path):
    config = dict(TINY, n_symbols=TextProcessor().n_symbols, n_mel_channels=80)
    checkpoint = random_checkpoint("Tacotron2", config, tmp_path)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("Hello world.\nA longer sentence comes second.\n")

    def synthesize(*flags):
        arguments = inference.build_parser().parse_args(["-i", str(phrases), "-o", str(tmp_path), "--tacotron2",
                                                         str(checkpoint), "--cpu", "--max-decoder-steps", "20",
                                                         "--griffin-lim-iters", "2", *flags])
        synthesizer = Synthesizer.from_args(arguments)
        batch = synthesizer.synthesize_batch(["Hello world.", "A longer sentence comes second."], ["a", "b"], seed=3,
                                             warn_max_steps=False)
        scripted = isinstance(synthesizer.infer, torch._C.ScriptMethod)
        decoder = synthesizer.tacotron2.decoder
        return batch, (decoder.fast, decoder.half_lstm_weights, scripted)

    half = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")  # common/cpu.py's rule
    default, default_path = synthesize()  # the CPU's default: the fast step, its LSTMs in float16 where vectorized
    reference, reference_path = synthesize("--no-fast-decoder")  # the reference step, through TorchScript
    fast, fast_path = synthesize("--no-half-lstm-weights")
    assert default_path == (True, half, False) and fast_path == (True, False, False)
    assert reference_path == (False, False, True)
    assert synthesize("--torchscript")[1] == (False, False, True)  # --torchscript alone asks for the reference step
    assert synthesize("--fast-decoder")[1] == default_path
    for result, tolerance in ((fast, TOLERANCE), (default, HALF_TOLERANCE)):
        assert torch.equal(result["mel_lengths"], reference["mel_lengths"])
        torch.testing.assert_close(result["mel"], reference["mel"], **tolerance)
    with pytest.raises(UserError, match="--half-lstm-weights cannot be combined with --no-fast-decoder"):
        synthesize("--no-fast-decoder", "--half-lstm-weights")
    with pytest.raises(UserError, match="--torchscript .* --fast-decoder"):
        synthesize("--fast-decoder", "--torchscript")
