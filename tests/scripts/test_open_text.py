"""The open-vocabulary ASR corpus (scripts/data/open_text.py, scripts/data/asr_corpus.py --text open): its text is
deterministic, its test sentences are never training text, and the sentences the recognizer judges the TTS demo on
(the TTS corpus's held-out sentences, phrases/phrase.txt) are left out of training; and eSpeak's pitch perturbation."""
from __future__ import annotations

import difflib
from collections import Counter
from pathlib import Path

import librosa
import numpy as np
import pytest

import scripts.data.synthetic_corpus as synthetic_corpus
from scripts.data.asr_corpus import (HELD_OUT_VOICES, OPEN_ACCENTS, OPEN_VARIANTS, build_asr_corpus, main,
                                     plan_open_utterances, plan_utterances)
from scripts.data.espeak import synthesize
from scripts.data.open_text import (LEXICON_SIZE, TTS_PHRASES, everyday_dev_sentences, everyday_sentences, lexicon,
                                    tts_held_out_words, word_sequences)
from scripts.intelligibility import reference_words


def test_the_lexicon_is_the_most_frequent_dictionary_words():
    words = lexicon()
    assert len(words) == LEXICON_SIZE == len(set(words))
    assert words[:5] == ("the", "to", "and", "of", "a")
    assert "don't" in words and "hr" not in words  # contractions kept, vowel-less abbreviations (spelled out) not
    assert lexicon(100) == words[:100]


def test_word_sequences_are_a_function_of_their_seed():
    sequences = word_sequences(300, seed=5)
    assert sequences == word_sequences(300, seed=5) and sequences != word_sequences(300, seed=6)
    assert len({words for _, words in sequences}) == 300
    known = {word.upper() for word in lexicon()}
    for text, words in sequences:
        assert text[0].isupper() and text.endswith(".")
        assert 4 <= len(words.split()) <= 12 and set(words.split()) <= known
    # Common words come often, and the draw reaches far down the list.
    counts = Counter(word for _, words in sequences for word in words.split())
    assert counts["THE"] >= 5 and len(counts) > 1500
    excluded = {sequences[0][1], sequences[7][1]}
    assert not excluded & {words for _, words in word_sequences(300, seed=5, exclude=excluded)}


def test_common_words_can_be_drawn_as_often_as_running_text_has_them():
    """common_word_share puts the function words of running text between the open words (about 40 % of a sentence's
    words are among English's 50 most frequent; 4 % of the plain draw's), and a share of 0 draws what it always did
    (the demo's corpus then keeps its bytes)."""
    assert word_sequences(1, seed=4321)[0][0] == "I'm insults itchy liable head membrane ceremonial visitor."
    assert word_sequences(200, seed=5, common_word_share=0.0) == word_sequences(200, seed=5)
    top_50 = {word.upper() for word in lexicon()[:50]}

    def top_50_share(sequences):
        words = [word for _, spoken in sequences for word in spoken.split()]
        return sum(word in top_50 for word in words) / len(words)

    plain, mixed = word_sequences(500, seed=5), word_sequences(500, seed=5, common_word_share=0.4)
    assert top_50_share(plain) < 0.1 and 0.3 < top_50_share(mixed) < 0.5
    assert all(4 <= len(spoken.split()) <= 12 for _, spoken in mixed)
    assert len({spoken for _, spoken in mixed}) == 500
    with pytest.raises(ValueError, match="common_word_share must be between 0 and 1, got 1.5"):
        word_sequences(1, seed=5, common_word_share=1.5)


def test_every_word_of_the_everyday_sentences_can_be_trained_on():
    sentences = everyday_sentences()
    assert len(sentences) == 50 == len({words for _, words in sentences})
    known = {word.upper() for word in lexicon()}
    missing = sorted({word for _, words in sentences for word in words.split()} - known)
    assert not missing, f"everyday words outside the lexicon: {missing}"
    assert sentences[0] == ("The river ran quietly past the old mill before dawn.",
                            "THE RIVER RAN QUIETLY PAST THE OLD MILL BEFORE DAWN")


def test_the_development_sentences_are_apart_from_the_test_sentences():
    """The sentences that choose the language model's weights (scripts/wav2vec2/tune_lm.py) can all be said with the
    lexicon, and none is a test sentence or a near copy of one (difflib's ratio, 0 to 1: 0.62 and above reads as a
    rewording of the same sentence)."""
    development, test = everyday_dev_sentences(), everyday_sentences()
    assert len(development) == 40 == len({words for _, words in development})
    known = {word.upper() for word in lexicon()}
    assert not sorted({word for _, words in development for word in words.split()} - known)
    closest = max(difflib.SequenceMatcher(None, dev, sentence).ratio() for dev, _ in development for sentence, _ in test)
    assert closest < 0.62


def silent_synthesize(text, voice="en-us", words_per_minute=175, pitch=None, phoneme_input=False):
    return np.full(2205, 0.1, dtype=np.float32), 22050  # no eSpeak: only the TTS corpus's text and split matter here


def test_the_sentences_that_judge_the_tts_demo_are_named(tmp_path, monkeypatch):
    """The TTS demo's test and validation sentences, as scripts/prepare_dataset.sh --synthetic writes them, and
    phrases/phrase.txt, in the words scripts/intelligibility.py scores them with."""
    monkeypatch.setattr(synthetic_corpus, "synthesize", silent_synthesize)
    synthetic_corpus.build_corpus(tmp_path, tmp_path / "filelists")  # the TTS demo's defaults: 500, seed 1234
    judged = tts_held_out_words()
    for split in ("test", "val"):
        lines = (tmp_path / "filelists" / f"synthetic_audio_text_{split}.txt").read_text().splitlines()
        assert len(lines) == 25
        assert {reference_words(line.split("|", 1)[1]) for line in lines} <= judged
    phrases = [line for line in TTS_PHRASES.read_text().splitlines() if line.strip()]
    assert {reference_words(line) for line in phrases} <= judged


def test_the_open_plan_keeps_test_and_judged_sentences_out_of_training():
    plan = plan_open_utterances(2000, seed=1234, num_open=300)
    by_split = {split: [u for u in plan if u.split == split] for split in dict.fromkeys(u.split for u in plan)}
    train_words = {u.words for u in by_split["train"]}
    everyday = everyday_sentences()
    # The template plan put 19 of the TTS demo's 25 test sentences in training; the open plan leaves all out.
    judged = tts_held_out_words()
    assert len({u.words for u in plan_utterances(2000, 1234) if u.split == "train"} & judged) >= 19
    assert not train_words & judged
    assert not train_words & {words for _, words in everyday}
    for split in ("valid", "test_sentences", "test_everyday"):
        assert not train_words & {u.words for u in by_split[split]}
    # The template splits are those of --text templates, so their rates compare across corpora.
    templates = plan_utterances(2000, 1234)
    for split in ("test_sentences", "test_voice"):
        assert by_split[split] == [u for u in templates if u.split == split]
    assert len(by_split["train"]) == 1800 - sum(u.split == "train" and u.words in judged for u in templates) + 300
    assert len(by_split["valid"]) == 100 + 15
    # Everyday sentences: once by training accents and variants, then by each held-out voice at the same rates.
    assert [u.words for u in by_split["test_everyday"]] == [words for _, words in everyday]
    assert [u.voice for u in by_split["test_everyday_voices"]] == [voice for voice in HELD_OUT_VOICES
                                                                   for _ in everyday]
    assert [u.rate for u in by_split["test_everyday_voices"]] == [u.rate for u in by_split["test_everyday"]] * 4
    training_voices = {u.voice for u in by_split["train"]}
    assert not training_voices & set(HELD_OUT_VOICES)
    assert {voice.split("+")[0] for voice in training_voices} == set(OPEN_ACCENTS)
    assert {voice.partition("+")[2] for voice in training_voices} == set(OPEN_VARIANTS)
    held_out_accents = {voice.split("+")[0] for voice in HELD_OUT_VOICES} - set(OPEN_ACCENTS)
    held_out_variants = {voice.split("+")[1] for voice in HELD_OUT_VOICES} - set(OPEN_VARIANTS)
    assert len(held_out_accents) == 3 and len(held_out_variants) == 4
    assert {u.pitch for u in by_split["train"]} >= {30, 70, None}
    assert plan == plan_open_utterances(2000, seed=1234, num_open=300)


@pytest.mark.slow
def test_an_open_corpus_is_the_same_bytes_every_time(tmp_path, capsys):
    main(["--output-dir", str(tmp_path / "a"), "--num-utterances", "5", "--seed", "9", "--text", "open",
          "--open-utterances", "4", "--everyday-sentences", "1"])
    assert ("train 5, valid 4, test_sentences 2, test_voice 2, test_everyday 1, test_everyday_voices 4 utterances"
            in capsys.readouterr().out)
    build_asr_corpus(tmp_path / "b", num_utterances=5, seed=9, text="open", num_open=4, num_everyday=1)
    files = sorted(path.name for path in (tmp_path / "a").iterdir())
    assert files == sorted(path.name for path in (tmp_path / "b").iterdir())
    for name in files:
        if name != "wavs":
            assert (tmp_path / "a" / name).read_bytes().split(b"\n", 1)[1] == \
                (tmp_path / "b" / name).read_bytes().split(b"\n", 1)[1]
    for wav in (tmp_path / "a" / "wavs").iterdir():
        assert wav.read_bytes() == (tmp_path / "b" / "wavs" / wav.name).read_bytes()
    rows = [line.split("|") for line in (tmp_path / "a" / "utterances.csv").read_text().splitlines()]
    assert all(len(row) == 6 for row in rows)  # the pitch, or - for the voice's own
    assert {row[5] for row in rows if row[1].startswith("test")} == {"-"}


def test_open_corpus_flags_need_open_text(capsys):
    with pytest.raises(SystemExit):
        main(["--output-dir", "unused", "--open-utterances", "10"])
    assert "--open-utterances and --everyday-sentences only apply with --text open" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="error: --everyday-sentences is 0; it must be at least 1"):
        main(["--output-dir", "unused", "--text", "open", "--everyday-sentences", "0"])


def test_espeak_pitch_moves_the_voice_and_none_keeps_its_own():
    text = "Hello there."
    own, sampling_rate = synthesize(text)
    assert np.array_equal(synthesize(text, pitch=50)[0], own)  # 50 is eSpeak's default base pitch
    low, high = synthesize(text, pitch=20)[0], synthesize(text, pitch=80)[0]
    assert np.array_equal(synthesize(text, pitch=80)[0], high)

    def median_f0(audio):
        f0, _, _ = librosa.pyin(audio.astype(np.float64), fmin=50, fmax=400, sr=sampling_rate)
        return np.nanmedian(f0)

    assert median_f0(low) < 0.85 * median_f0(own) and median_f0(high) > 1.2 * median_f0(own)
    with pytest.raises(ValueError, match="pitch is 101; eSpeak NG accepts 0 to 100"):
        synthesize(text, pitch=101)
