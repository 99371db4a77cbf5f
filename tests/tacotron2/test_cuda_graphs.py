"""The decoder loop from CUDA graphs (tacotron2/cuda_graphs.py) against the eager fast decoder: on the CPU its
buffers and stop logic (nothing is recorded there), on a GPU the recorded graphs themselves."""
import pytest
import torch

import inference
from common.errors import UserError
from common.text import TextProcessor
from scripts.benchmark_pipeline import hold_gate_shut, random_checkpoint
from tacotron2.cuda_graphs import TEXT_LENGTH_BUCKET, use_cuda_graphs
from tacotron2.inference import Synthesizer
from tests.tacotron2.tiny_tacotron2 import TINY, padded_text, tiny_model

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def stop_after(model, steps: list[int]) -> None:
    """Makes utterance i's gate fire at its steps[i]-th step. The steps done so far are read off the state (each
    step's attention weights sum to 1), so this works inside a recorded graph too."""
    fast_step = model.decoder.fast_step
    # On the model's device: a copy from the host inside a recording would break it.
    stop_steps = torch.tensor(steps, dtype=torch.float32, device=next(model.parameters()).device)

    def step(*args):
        frames, gate, state = fast_step(*args)
        steps_done = state.attention_weights_cum.float().sum(1)
        return frames, gate + 1e3 * (steps_done - stop_steps + 0.5), state

    model.decoder.fast_step = step


def eager_and_graphed(model, text, text_lengths, **infer_args):
    model.decoder.fast = True
    model.decoder.cuda_graphs = None
    seed = infer_args.pop("seed", 3)
    eager = model.infer(text, text_lengths, generator=torch.Generator(text.device).manual_seed(seed), **infer_args)
    use_cuda_graphs(model.decoder)
    graphed = model.infer(text, text_lengths, generator=torch.Generator(text.device).manual_seed(seed),
                          **infer_args)
    return eager, graphed


def assert_same_inference(eager, graphed, tolerance: float = 1e-5) -> None:
    """Equal lengths and stops; mels and alignments equal to rounding (the text is padded to its bucket)."""
    assert eager.mel.shape == graphed.mel.shape
    assert torch.equal(eager.mel_lengths, graphed.mel_lengths)
    assert torch.equal(eager.hit_max_decoder_steps, graphed.hit_max_decoder_steps)
    torch.testing.assert_close(graphed.mel.float(), eager.mel.float(), rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(graphed.alignments.float(), eager.alignments.float(), rtol=tolerance, atol=tolerance)


def test_stops_where_the_eager_loop_stops_mid_replay():
    """Utterances stop at different steps, neither a multiple of the 16 steps per replay: the same lengths, mels and
    alignments as the eager loop, which checks the gate after every step on a CPU."""
    model = tiny_model().eval()
    stop_after(model, [21, 35])
    text, text_lengths = padded_text([11, 7])
    eager, graphed = eager_and_graphed(model, text, text_lengths)
    assert eager.mel_lengths.tolist() == [21, 35] and not eager.hit_max_decoder_steps.any()
    assert_same_inference(eager, graphed)


def test_runs_to_max_decoder_steps_with_a_short_last_replay():
    model = tiny_model().eval()
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.bias.fill_(-1e4)  # the gate never fires
    text, text_lengths = padded_text([9, 5])
    eager, graphed = eager_and_graphed(model, text, text_lengths, max_decoder_steps=37)  # 16 + 16 + 5
    assert graphed.hit_max_decoder_steps.all() and graphed.mel.size(2) == 37
    assert_same_inference(eager, graphed)


def test_given_prenet_masks_are_read_step_by_step():
    model = tiny_model().eval()
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.bias.fill_(-1e4)
    text, text_lengths = padded_text([6, 6])
    masks = torch.rand(20, 2, 2, 16, generator=torch.Generator().manual_seed(5)) > 0.5  # one per utterance
    eager, graphed = eager_and_graphed(model, text, text_lengths, max_decoder_steps=20, prenet_masks=masks)
    assert_same_inference(eager, graphed)
    assert not torch.equal(graphed.mel[0], graphed.mel[1])  # the per-utterance masks reached the steps


def test_one_recording_per_text_length_bucket_and_current_weights_each_call():
    model = tiny_model().eval()
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.bias.fill_(-1e4)
    use_cuda_graphs(model.decoder)
    loop = model.decoder.cuda_graphs
    for length in (3, TEXT_LENGTH_BUCKET):
        model.infer(*padded_text([length]), max_decoder_steps=4)
    assert len(loop.recordings) == 1
    model.infer(*padded_text([TEXT_LENGTH_BUCKET + 1]), max_decoder_steps=4)
    assert len(loop.recordings) == 2

    with torch.no_grad():  # new weights: the next call must use them, not the recorded copies
        model.decoder.attention_rnn.weight_hh.mul_(-1.0)
        model.decoder.linear_projection.linear_layer.bias.add_(0.5)
    text, text_lengths = padded_text([5])
    eager, graphed = eager_and_graphed(model, text, text_lengths, max_decoder_steps=10)
    assert_same_inference(eager, graphed)


def test_a_training_model_runs_the_eager_loop():
    """The recordings have no decoder dropout: a model in training mode (validation's free-running pass) never
    reaches them."""
    model = tiny_model()
    use_cuda_graphs(model.decoder)
    model.train()
    with torch.no_grad():
        model.decoder.infer(torch.randn(1, 4, 32), torch.tensor([4]), 3, 0.5, True, None, None, 1)
    assert model.decoder.cuda_graphs.recordings == {}


@pytest.fixture
def checkpoint(tmp_path):
    """Random weights with the gate held shut: a random gate hovers around 0.5, where rounding alone decides the
    stop (the stop logic is tested above, with gates that fire on purpose)."""
    return random_checkpoint("Tacotron2", dict(TINY, n_symbols=TextProcessor().n_symbols, n_mel_channels=80),
                             tmp_path, hold_gate_shut)


def synthesizer(checkpoint, *flags) -> Synthesizer:
    return Synthesizer.from_args(inference.build_parser().parse_args(
        ["-i", "unused.txt", "-o", str(checkpoint.parent), "--tacotron2", str(checkpoint), "--max-decoder-steps", "40",
         "--griffin-lim-iters", "2", *flags]))


@pytest.mark.parametrize("flags, message", [
    ([], "--cuda-graphs needs a CUDA GPU"),
    (["--compile"], "cannot be combined with --compile"),
    (["--torchscript"], "cannot be combined with --torchscript"),
])
def test_inference_py_refuses_cuda_graphs_where_they_cannot_run(checkpoint, flags, message):
    with pytest.raises(UserError, match=message):
        synthesizer(checkpoint, "--cuda-graphs", "--cpu", *flags)


TEXTS = ["Hello world.", "A longer sentence comes second."]


def test_the_synthesizer_s_batches_through_the_graph_loop_give_the_eager_mels(checkpoint):
    """What --cuda-graphs runs, on the CPU (where the loop records nothing): the synthesizer's batch, its seed. The
    graph loop runs the float32 fast step (a GPU's): the CPU's float16 LSTM weights are left out of the eager one."""
    eager = synthesizer(checkpoint, "--fast-decoder", "--no-half-lstm-weights", "--cpu").synthesize_batch(
        TEXTS, ["a", "b"], seed=3, warn_max_steps=False)
    graphed_synthesizer = synthesizer(checkpoint, "--fast-decoder", "--cpu")
    use_cuda_graphs(graphed_synthesizer.tacotron2.decoder)
    graphed = graphed_synthesizer.synthesize_batch(TEXTS, ["a", "b"], seed=3, warn_max_steps=False)
    assert eager["mel_lengths"].tolist() == graphed["mel_lengths"].tolist() == [40, 40]
    torch.testing.assert_close(graphed["mel"], eager["mel"], atol=1e-5, rtol=1e-5)


@cuda
def test_inference_py_with_cuda_graphs_gives_the_eager_mels(checkpoint):
    eager = synthesizer(checkpoint, "--fast-decoder", "--amp").synthesize_batch(TEXTS, ["a", "b"], seed=3,
                                                                               warn_max_steps=False)
    graphed = synthesizer(checkpoint, "--cuda-graphs", "--amp").synthesize_batch(TEXTS, ["a", "b"], seed=3,
                                                                                warn_max_steps=False)
    assert eager["mel_lengths"].tolist() == graphed["mel_lengths"].tolist() == [40, 40]
    torch.testing.assert_close(graphed["mel"], eager["mel"], atol=2e-3, rtol=2e-3)


@cuda
@pytest.mark.parametrize("precision", [torch.float32, torch.float16])
def test_recorded_graphs_equal_the_eager_loop_on_a_gpu(precision):
    model = tiny_model(max_frames_after_text_end=0).eval().cuda()  # the gate alone: the stops stop_after sets
    stop_after(model, [21, 35])
    text, text_lengths = (t.cuda() for t in padded_text([11, 7]))
    with torch.autocast("cuda", dtype=torch.float16, enabled=precision == torch.float16):
        eager, graphed = eager_and_graphed(model, text, text_lengths)
        again = model.infer(text, text_lengths, generator=torch.Generator("cuda").manual_seed(3))  # a replay
    assert all(recording.graph is not None for recording in model.decoder.cuda_graphs.recordings.values())
    assert graphed.mel_lengths.tolist() == [21, 35]
    assert_same_inference(eager, graphed, tolerance=1e-5 if precision == torch.float32 else 2e-3)
    assert_same_inference(graphed, again, tolerance=0.0)
