"""Tacotron 2 stops on any text (tacotron2/model.py: Decoder.infer's stop rules, Tacotron2's
max_frames_after_text_end).

A gate trained on sentences that all end in a full stop learns "stop after the full stop" and may never fire on a
line without one: the decoder then babbles to max_decoder_steps. The text front-end ends such a line with a full stop
(tests/common/test_text.py); beyond that, inference stops an utterance max_frames_after_text_end frames after its
attention first peaked on the text's last symbol, whatever its gate does.

- With attention made to move one symbol a step, the stop lands exactly where the rule says, for r = 1 and 3, in the
  reference loop, the fast one, the CUDA-graph loop (on the CPU) and TorchScript; the gate still stops first where it
  fires first; 0 gives NVIDIA's rule, the gate alone.
- A tiny Tacotron 2 trained here for a few seconds on made-up sounds (one per symbol) learns to move its attention
  along the text; with its gate held shut, as a gate that never fires on these lines, 20 plain lines without final
  punctuation all run to max_decoder_steps under NVIDIA's rule, and all stop under this one, each at a length that
  follows its text's. Batched synthesis gives each line the length it gets alone.

What the trained test does not prove: that a real voice's attention reaches the last symbol (the demo's: measured by
experiments/tacotron2_stopping/), nor that the stop is well placed in its audio.
"""
from __future__ import annotations

import pytest
import torch

from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.text import TextProcessor
from tacotron2.api import Synthesizer
from tacotron2.cuda_graphs import use_cuda_graphs
from tacotron2.loss_function import Tacotron2Loss
from tacotron2.model import MAX_FRAMES_AFTER_TEXT_END, Tacotron2, max_steps_warnings_silenced
from tests.tacotron2.tiny_tacotron2 import attention_moves_one_symbol_a_step, hold_gate_shut, padded_text, tiny_model


def infer(model: Tacotron2, text, lengths, **options):
    with max_steps_warnings_silenced():
        return model.infer(text, lengths, generator=torch.Generator(text.device).manual_seed(2), **options)


# ---------------------------------------------------------------------------------------------------------------
# The rule, exactly


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("r", [1, 3])
@pytest.mark.parametrize("loop, device", [("reference", "cpu"), ("fast", "cpu"), ("graphs", "cpu"),
                                          pytest.param("graphs", "cuda", marks=cuda)])
def test_each_utterance_stops_its_own_frames_after_its_attention_reached_its_last_symbol(r, loop, device):
    model = tiny_model(n_frames_per_step=r, max_decoder_steps=60).eval().to(device)
    hold_gate_shut(model)
    model.decoder.fast = loop != "reference"
    if loop == "graphs":
        use_cuda_graphs(model.decoder)  # on the CPU: the graph loop's buffers, stepped without recording
    attention_moves_one_symbol_a_step(model)
    text_lengths = [3, 11, 6, 1]
    text, lengths = (tensor.to(device) for tensor in padded_text(text_lengths))
    result = infer(model, text, lengths, max_frames_after_text_end=7)
    steps_after = -(-7 // r)
    # the step whose attention reached the last symbol is step L, then steps_after more
    assert result.mel_lengths.tolist() == [(length + steps_after) * r for length in text_lengths]
    assert not result.hit_max_decoder_steps.any()
    assert result.mel.size(2) == max(result.mel_lengths)
    for row, length in enumerate(result.mel_lengths.tolist()):  # nothing of a longer batch-mate past its end
        assert not result.mel[row, :, length:].any() and not result.alignments[row, -(-length // r):].any()
        alone = infer(model, text[row:row + 1, :text_lengths[row]], lengths[row:row + 1],
                      max_frames_after_text_end=7)
        assert alone.mel_lengths.tolist() == [length]
        torch.testing.assert_close(alone.mel[0], result.mel[row, :, :length], atol=1e-5, rtol=1e-5)


def test_zero_is_nvidias_rule_the_gate_alone():
    model = tiny_model().eval()
    hold_gate_shut(model)
    attention_moves_one_symbol_a_step(model)
    text, lengths = padded_text([3, 8])
    result = infer(model, text, lengths, max_frames_after_text_end=0, max_decoder_steps=30)
    assert result.hit_max_decoder_steps.all() and result.mel_lengths.tolist() == [30, 30]
    model.max_frames_after_text_end = 0  # the constructor's setting, as a checkpoint trained with 0 gives it
    assert infer(model, text, lengths, max_decoder_steps=30).mel_lengths.tolist() == [30, 30]
    model.max_frames_after_text_end = MAX_FRAMES_AFTER_TEXT_END  # the default: 40 frames, 40 steps at r = 1
    assert tiny_model().max_frames_after_text_end == MAX_FRAMES_AFTER_TEXT_END == 40
    assert infer(model, text, lengths, max_decoder_steps=60).mel_lengths.tolist() == [43, 48]


def test_a_gate_that_fires_first_still_stops_the_utterance_there():
    model = tiny_model().eval()
    attention_moves_one_symbol_a_step(model)
    gate_stops = model.decoder.step

    def step(prenet_output, state, memory, processed_memory, padding):  # the gate fires at step 5
        frames, _, new_state = gate_stops(prenet_output, state, memory, processed_memory, padding)
        fired = new_state.attention_weights_cum.sum(1) >= 5 - 0.5
        return frames, torch.where(fired, 10.0, -10.0), new_state

    model.decoder.step = step
    text, lengths = padded_text([2, 20])
    # The short text reaches its end at step 2: 4 frames later is step 6, after its gate; 1 frame later, before it.
    assert infer(model, text, lengths, max_frames_after_text_end=4).mel_lengths.tolist() == [5, 5]
    assert infer(model, text, lengths, max_frames_after_text_end=1).mel_lengths.tolist() == [3, 5]


@pytest.mark.slow  # scripting the model takes a few seconds
def test_torchscript_stops_where_eager_stops():
    model = tiny_model(max_decoder_steps=80).eval()
    hold_gate_shut(model)
    text, lengths = padded_text([2, 9, 5])
    eager = infer(model, text, lengths, max_frames_after_text_end=3)
    scripted = torch.jit.script(model)
    with max_steps_warnings_silenced():
        result = scripted.infer(text, lengths, None, None, torch.Generator().manual_seed(2),
                                max_frames_after_text_end=3)
    assert result.mel_lengths.tolist() == eager.mel_lengths.tolist()
    assert not eager.hit_max_decoder_steps.all()  # the random attention reaches some texts' ends
    torch.testing.assert_close(result.mel, eager.mel)


def test_a_negative_limit_is_refused():
    with pytest.raises(ValueError, match="max_frames_after_text_end must be >= 0"):
        tiny_model(max_frames_after_text_end=-1)
    with pytest.raises(ValueError, match="max_frames_after_text_end must be >= 0"):
        infer(tiny_model().eval(), *padded_text([3]), max_frames_after_text_end=-2)


# ---------------------------------------------------------------------------------------------------------------
# A tiny model that has learned to move its attention along the text, and 20 plain lines

# Written for this test: everyday lines as people type them, lower case, no final punctuation.
PLAIN_LINES = [
    "turn off the kitchen light",
    "i think it will snow tonight",
    "could you call me back later",
    "we ran out of milk again",
    "my phone battery is almost dead",
    "the printer upstairs is jammed",
    "let us take the dog for a walk after dinner",
    "she never drinks coffee after lunch",
    "is the pharmacy open on sundays",
    "he forgot his umbrella at the office",
    "thank you so much",
    "the soup needs a little more salt",
    "our neighbours are painting their fence blue",
    "can we move the appointment to thursday afternoon",
    "good night",
    "the baby finally fell asleep",
    "i left the charger in the car",
    "please feed the cat before you go to work",
    "nobody answered the door",
    "bring a jacket",
]

FRAMES_PER_SYMBOL = 2  # each symbol's made-up sound lasts two frames: one decoder step at r = 2
N_MEL = 80  # the default audio's, so that the Synthesizer's Griffin-Lim can read the mels
TRAINED_CONFIG = dict(n_mel_channels=N_MEL, n_symbols=len(TextProcessor().symbols), symbols_embedding_dim=32,
                      encoder_embedding_dim=32, encoder_n_convolutions=1, attention_rnn_dim=32, decoder_rnn_dim=32,
                      prenet_dim=16, attention_dim=8, attention_location_n_filters=4,
                      attention_location_kernel_size=5, postnet_embedding_dim=16, postnet_n_convolutions=2,
                      n_frames_per_step=2, max_decoder_steps=100, p_encoder_dropout=0.0, p_postnet_dropout=0.0)


def made_up_lines(count: int, generator: torch.Generator) -> list[str]:
    """Lines of 2 to 6 'words' of random letters, none of them the test's."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    lines = []
    for _ in range(count):
        words = [int(n) for n in torch.randint(1, 8, (int(torch.randint(2, 7, (), generator=generator)),),
                                               generator=generator)]
        lines.append(" ".join("".join(letters[int(i)] for i in torch.randint(0, 26, (n,), generator=generator))
                              for n in words))
    return lines


def training_batch(text: TextProcessor, lines: list[str], sounds: torch.Tensor) -> dict:
    """Each symbol (the front-end's full stop included) is its own sound, FRAMES_PER_SYMBOL frames long."""
    ids = [torch.tensor(text.encode(line)) for line in lines]
    lengths = torch.tensor([len(line_ids) for line_ids in ids])
    n_frames = int(lengths.max()) * FRAMES_PER_SYMBOL
    batch = {"text": torch.zeros(len(ids), int(lengths.max()), dtype=torch.long), "text_lengths": lengths,
             "mel": torch.zeros(len(ids), N_MEL, n_frames), "gate": torch.zeros(len(ids), n_frames),
             "mel_lengths": lengths * FRAMES_PER_SYMBOL}
    for row, line_ids in enumerate(ids):
        batch["text"][row, :len(line_ids)] = line_ids
        frames = len(line_ids) * FRAMES_PER_SYMBOL
        batch["mel"][row, :, :frames] = sounds[line_ids].repeat_interleave(FRAMES_PER_SYMBOL, dim=0).T
        batch["gate"][row, frames - 1:] = 1.0
    return batch


@pytest.fixture(scope="module")
def aligned_model():
    """TRAINED_CONFIG after 100 updates on made-up lines (guided attention): its attention moves along the text. Its
    gate is then held shut, standing for one that never fires on the test's lines."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    text = TextProcessor()
    sounds = torch.randn(text.n_symbols, N_MEL, generator=generator) - 4.0
    model = Tacotron2(**TRAINED_CONFIG)
    model.decoder.fast = True
    loss_function = Tacotron2Loss(guided_attn_weight=5.0, n_frames_per_step=2, mel_loss="l1")
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    try:
        for _ in range(100):
            batch = training_batch(text, made_up_lines(8, generator), sounds)
            loss = loss_function(model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"]),
                                 batch)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    hold_gate_shut(model)
    return model, text


@pytest.mark.slow
def test_plain_lines_stop_after_their_text_where_the_gate_never_fires(aligned_model):
    model, text = aligned_model
    ids = [text.encode(line) for line in PLAIN_LINES]
    symbols = torch.tensor([len(line_ids) for line_ids in ids])
    batch = torch.zeros(len(ids), int(symbols.max()), dtype=torch.long)
    for row, line_ids in enumerate(ids):
        batch[row, :len(line_ids)] = torch.tensor(line_ids)

    gate_alone = infer(model, batch, symbols, max_frames_after_text_end=0)
    assert gate_alone.hit_max_decoder_steps.all()  # NVIDIA's rule: every line babbles to max_decoder_steps

    result = infer(model, batch, symbols)  # the default rule
    lengths = result.mel_lengths
    assert not result.hit_max_decoder_steps.any(), [PLAIN_LINES[i] for i in result.hit_max_decoder_steps.nonzero()]
    assert int(lengths.max()) < model.max_decoder_steps * model.n_frames_per_step
    # The length follows the text: the lines' ranks by length and by symbols agree (Spearman's rho); no line is cut
    # before its text's sounds, nor runs past them by more than the frames the rule allows and the few symbols' worth
    # by which this attention lags (2 to 10 frames here).
    def ranks(values):
        return values.double().argsort().argsort().double()

    rho = torch.corrcoef(torch.stack([ranks(lengths), ranks(symbols)]))[0, 1]
    assert rho > 0.9, (rho, lengths.tolist(), symbols.tolist())
    allowed = (symbols + 8) * FRAMES_PER_SYMBOL + MAX_FRAMES_AFTER_TEXT_END
    assert bool((lengths <= allowed).all()), (lengths.tolist(), allowed.tolist())
    assert bool((lengths >= symbols * FRAMES_PER_SYMBOL).all()), (lengths.tolist(), symbols.tolist())


@pytest.fixture(scope="module")
def aligned_checkpoint(aligned_model, tmp_path_factory):
    model, text = aligned_model
    checkpoint = tmp_path_factory.mktemp("aligned") / "aligned.pt"
    save_checkpoint({"model_name": "Tacotron2", "model_config": TRAINED_CONFIG, "state_dict": model.state_dict(),
                     "audio_params": AudioParams().to_dict(), "text": text.to_dict()}, checkpoint)
    return checkpoint


@pytest.mark.slow
def test_batched_synthesis_gives_each_line_the_length_it_gets_alone(aligned_model, aligned_checkpoint):
    model, _ = aligned_model
    checkpoint = aligned_checkpoint
    lines = PLAIN_LINES[:8]
    synthesizer = Synthesizer.from_checkpoints(checkpoint, device="cpu", batch_size=8, griffin_lim_iters=1,
                                               split_sentences=False)
    together = [len(audio) for audio in synthesizer.synthesize(lines, seed=5)]
    # One prenet mask a step is drawn for a whole batch, so a line alone with the same seed decodes as in the batch.
    alone = [len(synthesizer.synthesize([line], seed=5)[0]) for line in lines]
    assert together == alone
    assert len(set(together)) > 4  # the lines end at their own lengths, not at the longest one's
    assert max(together) < model.max_decoder_steps * model.n_frames_per_step * AudioParams().hop_length


@pytest.mark.slow
def test_the_stopping_experiment_counts_the_lines_that_fail_to_stop(aligned_checkpoint, tmp_path):
    from experiments.tacotron2_stopping import measure_stopping

    texts = tmp_path / "lines.txt"
    texts.write_text("good night\nIs it raining?\nbring a jacket.\n", encoding="utf-8")
    report = measure_stopping.main(["--tacotron2", str(aligned_checkpoint), "--texts", str(texts),
                                    "-o", str(tmp_path / "report.json")])
    conditions = report["conditions"]
    assert list(conditions) == ["bare, gate alone", "bare, text end", "full stop, gate alone", "full stop, text end"]
    # this model's gate is shut: under NVIDIA's rule nothing stops, under the text-end rule everything does
    assert conditions["bare, gate alone"]["failed_to_stop"] == conditions["full stop, gate alone"][
        "failed_to_stop"] == 3
    assert conditions["bare, text end"]["failed_to_stop"] == conditions["full stop, text end"]["failed_to_stop"] == 0
    assert conditions["full stop, text end"]["stopped_by_text_end_rule"] == 3
    assert [row["symbols"] for row in report["lines"]] == [10, 13, 14]  # "?" and "." left out of the bare input
    assert (tmp_path / "report.json").is_file()
