"""Text as users give it to Tacotron 2: a paragraph is said a sentence at a time and comes out whole, a sentence too
long for the decoder's step limit is cut at its commas, then between words, and the command line takes `--text` and
standard input beside a file.

The lengths are exact with a tiny Tacotron 2 whose attention is made to move one symbol a step and whose gate is held
shut (tests/tacotron2/tiny_tacotron2.py): each piece stops max_frames_after_text_end frames after its last symbol,
so a piece said alone has a length that the joined audio must add up to.
"""
from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile

import inference
from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.errors import UserError
from common.text import TextProcessor
from common.text.sentences import split_sentences
from tacotron2.api import Synthesizer
from tests.tacotron2.tiny_tacotron2 import TINY, attention_moves_one_symbol_a_step, hold_gate_shut, tiny_model

# 40 sentences of everyday text, written here (not the corpus's templates): 2,000 characters as one paragraph.
SENTENCES = [
    "The morning train to the city was late again today.", "Dr. Lee said the results would be ready by Friday.",
    "We bought apples, pears and a loaf of fresh bread.", "Is the meeting still on for half past three?",
    "My sister lives in a small town near the coast.", "The recipe takes 3.5 cups of flour, e.g. white.",
    "Please turn off the lights when you leave the room.", "He has been learning to play the piano for two years.",
    "The children ran across the field toward the river.", "Could you send me the report before lunch tomorrow?",
    "It rained all night, so the garden looks very green.", "Mr. Brown fixed the old bicycle in his garage.",
    "The library closes early on Sundays and holidays.", "She wrote a long letter to her friend in Canada.",
    "Our team won the final match by a single point!", "The new bridge will open to traffic next spring.",
    "Remember to water the plants while we are away.", "The museum has a fine collection of old maps.",
    "A warm cup of tea helps on a cold winter evening.", "They painted the kitchen a bright shade of yellow.",
    "The bus stops right outside the post office.", "I think we should leave before the traffic starts.",
    "The baker sells warm rolls every morning at six.", "Her dog likes to sleep next to the front door.",
    "The hotel room had a lovely view of the harbour.", "We will need more chairs for the party on Saturday.",
    "The old clock in the hall still keeps good time.", "Please write your name at the top of each page.",
    "The farmer sold his eggs at the market on Tuesday.", "A short walk after dinner is good for everyone.",
    "The students listened carefully to the lecture.", "Thank you for helping me carry these heavy boxes.",
    "The fishing boats came back just after sunset.", "Can you tell me where the nearest pharmacy is?",
    "The painter mixed blue and white to get the sky right.", "We found an old photograph of our grandparents.",
    "The soup needs a little more salt and some pepper.", "His flight lands at ten past nine in the evening.",
    "The wind blew the leaves all over the garden path.", "Let us meet at the corner cafe on Monday morning.",
]
PARAGRAPH = " ".join(SENTENCES)
LONG_SENTENCE = ("When the storm finally passed, the villagers came out of their houses, looked at the fallen trees "
                 "along the road, counted the broken windows on the main street, checked on their neighbours and "
                 "their animals, and then, slowly and without much talk, began to clear the branches, sweep the "
                 "glass and mend what the wind had torn apart during that long and noisy night")
TEXT_END_FRAMES = 4
# r = 2 and 300 decoder steps: a piece of at most 600 / 8 = 75 symbols (tacotron2/api.py: FRAMES_PER_SYMBOL).
CONFIG = dict(n_mel_channels=80, n_symbols=len(TextProcessor().symbols), n_frames_per_step=2, max_decoder_steps=300,
              symbols_embedding_dim=16, encoder_embedding_dim=16, attention_rnn_dim=16, decoder_rnn_dim=16,
              prenet_dim=8, attention_dim=8, postnet_embedding_dim=8, postnet_n_convolutions=1)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("long_text") / "tacotron2.pt"
    save_checkpoint({"model_name": "Tacotron2", "model_config": {**TINY, **CONFIG},
                     "state_dict": tiny_model(**CONFIG).state_dict(),
                     "audio_params": AudioParams().to_dict(), "text": TextProcessor().to_dict()}, path)
    return path


def synthesizer_of(checkpoint, **options) -> Synthesizer:
    synthesizer = Synthesizer.from_checkpoints(checkpoint, device="cpu", griffin_lim_iters=1, torchscript=False,
                                               max_frames_after_text_end=TEXT_END_FRAMES, **options)
    hold_gate_shut(synthesizer.tacotron2)
    attention_moves_one_symbol_a_step(synthesizer.tacotron2)
    return synthesizer


def test_a_paragraph_is_said_a_sentence_at_a_time_and_comes_out_whole(checkpoint, capsys):
    assert 1950 <= len(PARAGRAPH) <= 2100
    synthesizer = synthesizer_of(checkpoint)
    assert synthesizer.max_piece_symbols() == 75
    pieces = synthesizer.pieces([PARAGRAPH], ["paragraph"])
    assert [piece.text for piece in pieces] == SENTENCES  # "Dr.", "Mr.", "e.g." and "3.5" end no sentence
    (audio,) = synthesizer.synthesize([PARAGRAPH], seed=1)
    alone = synthesizer_of(checkpoint, split_sentences=False).synthesize(SENTENCES, seed=1)
    pause = synthesizer.pause_frames() * AudioParams().hop_length
    assert synthesizer.pause_frames() == round(0.3 * 22050 / 256)
    assert len(audio) == sum(map(len, alone)) + pause * (len(SENTENCES) - 1)
    assert all(len(sentence_audio) < 600 * 256 for sentence_audio in alone)  # each stopped on its own
    start = len(alone[0])
    assert not audio[start:start + pause].any()  # silence between the sentences
    np.testing.assert_array_equal(audio[:start], alone[0])
    assert "reached --max-decoder-steps" not in capsys.readouterr().err


def test_a_sentence_longer_than_the_decoder_says_is_cut_at_commas_then_words(checkpoint, capsys):
    whole = synthesizer_of(checkpoint, split_sentences=False)
    (cut_off,) = whole.synthesize([LONG_SENTENCE], seed=1)
    assert len(cut_off) == 600 * 256  # said whole, it runs into the 300 steps of 2 frames
    assert "texts[0]: reached --max-decoder-steps" in capsys.readouterr().err

    synthesizer = synthesizer_of(checkpoint)
    pieces = synthesizer.pieces([LONG_SENTENCE, "Short one."], ["long", "short"])
    long_pieces = [piece for piece in pieces if piece.utterance == 0]
    assert len(long_pieces) > 3 and [piece.part for piece in long_pieces] == list(range(1, len(long_pieces) + 1))
    assert all(synthesizer.symbol_count(piece.text, "long") <= 75 for piece in long_pieces)
    assert " ".join(piece.text for piece in long_pieces) == LONG_SENTENCE  # every word, in order
    assert sum(piece.text.endswith(",") for piece in long_pieces) >= len(long_pieces) - 2  # cut at commas mostly
    assert long_pieces[1].source == f"long (part 2 of {len(long_pieces)})"
    long_audio, short_audio = synthesizer.synthesize([LONG_SENTENCE, "Short one."], seed=1)
    assert "reached --max-decoder-steps" not in capsys.readouterr().err
    alone = synthesizer_of(checkpoint, split_sentences=False).synthesize([piece.text for piece in pieces], seed=1)
    pause = synthesizer.pause_frames() * AudioParams().hop_length
    assert len(long_audio) == sum(len(piece_audio) for piece_audio in alone[:-1]) + pause * (len(long_pieces) - 1)
    assert len(short_audio) == len(alone[-1])


def test_text_without_a_sentence_end_is_one_sentence(checkpoint):
    assert split_sentences("turn the light off") == ["turn the light off"]
    assert [piece.text for piece in synthesizer_of(checkpoint).pieces(["turn the light off"], ["t"])] == [
        "turn the light off"]


# ---- the command line ----------------------------------------------------------------------------------------------


def say(checkpoint, out, *flags):
    inference.main(["-o", str(out), "--tacotron2", str(checkpoint), "--cpu", "--quiet", "--griffin-lim-iters", "1",
                    "--max-decoder-steps", "20", *flags])
    return sorted(path.name for path in out.glob("*.wav"))


def test_text_flags_and_standard_input_each_give_a_wav_per_text(checkpoint, tmp_path, monkeypatch):
    assert say(checkpoint, tmp_path / "text", "--text", "Hello there.", "--text", "second one") == [
        "audio_1.wav", "audio_2.wav"]
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello there.\n\nsecond one\n"))
    assert say(checkpoint, tmp_path / "stdin", "-i", "-") == ["audio_1.wav", "audio_3.wav"]
    for wav in ("audio_1.wav",):  # the same text, seed and model: the same audio, however it was given
        assert (tmp_path / "text" / wav).read_bytes() == (tmp_path / "stdin" / wav).read_bytes()
    assert (tmp_path / "text" / "audio_2.wav").read_bytes() == (tmp_path / "stdin" / "audio_3.wav").read_bytes()
    assert soundfile.info(str(tmp_path / "text" / "audio_1.wav")).samplerate == 22050


def test_text_flags_refused_as_one_error(checkpoint, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as exit_info:
        say(checkpoint, tmp_path / "both", "-i", "p.txt", "--text", "Hello.")
    assert exit_info.value.code == 2
    assert "argument --text: not allowed with argument -i/--input" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        say(checkpoint, tmp_path / "neither")
    assert exit_info.value.code == 2
    assert "one of the arguments -i/--input --text is required" in capsys.readouterr().err
    with pytest.raises(UserError, match="^--text number 2 is empty: give the words to say$"):
        say(checkpoint, tmp_path / "empty", "--text", "Hello.", "--text", "  ")
    monkeypatch.setattr("sys.stdin", io.StringIO("\n \n"))
    with pytest.raises(UserError, match="^standard input has no text"):
        say(checkpoint, tmp_path / "nothing", "-i", "-")
