"""The synthetic speech-recognition corpora at 16 kHz in fairseq's layout: scripts/data/asr_corpus.py (several voices
and rates, held-out sentences and a held-out voice) and scripts/prepare_dataset.sh --synthetic --manifest."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import soundfile

from scripts.data.asr_corpus import RATES, TEST_VOICE, TRAINING_VOICES, build_asr_corpus, main, plan_utterances
from wav2vec2.data_function import AudioDataset, read_manifest
from wav2vec2.dictionary import Dictionary

ROOT = Path(__file__).resolve().parents[2]


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def corpus_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of a corpus, the manifests without their (absolute) root line."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            files[path.relative_to(folder).as_posix()] = data.split(b"\n", 1)[1] if path.suffix == ".tsv" else data
    return files


def test_the_session_corpus_is_a_wav2vec2_data_folder(synthetic_asr_corpus):
    corpus = synthetic_asr_corpus
    dictionary = Dictionary.load(corpus.dictionary)
    assert len(dictionary) == 32 and dictionary.word_boundary_index == 4  # LibriSpeech's 28 symbols, '|' first
    sizes = {}
    for name in ("train", "valid", "test_sentences", "test_voice"):
        manifest_path = getattr(corpus, name)
        assert manifest_path == corpus.directory / f"{name}.tsv"
        dataset = AudioDataset(read_manifest(manifest_path, 16000), 16000, labels=manifest_path.with_suffix(".ltr"),
                               dictionary=dictionary)
        sizes[name] = len(dataset)
        words = lines(manifest_path.with_suffix(".wrd"))
        for index, text in enumerate(words):
            assert re.fullmatch(r"[A-Z']+( [A-Z']+)*", text), text  # spelled out: no digits, no punctuation
            assert dictionary.decode(dataset[index].target.tolist()) == text
        assert all(1.0 < size / 16000 < 8.0 for size in dataset.sizes)
    assert sizes == {"train": 18, "valid": 2, "test_sentences": 2, "test_voice": 2}
    assert soundfile.info(str(corpus.directory / "wavs" / "train-00001.wav")).samplerate == 16000


def test_held_out_splits_hold_new_sentences_and_a_new_voice(synthetic_asr_corpus):
    rows = [line.split("|") for line in lines(synthetic_asr_corpus.directory / "utterances.csv")]
    by_split = {split: [row for row in rows if row[1] == split]
                for split in ("train", "valid", "test_sentences", "test_voice")}
    train_sentences = {row[4] for row in by_split["train"]}
    assert len(train_sentences) == len(by_split["train"])
    for split in ("valid", "test_sentences"):
        assert not train_sentences & {row[4] for row in by_split[split]}
        assert {row[2] for row in by_split[split]} <= set(TRAINING_VOICES)
    assert not {row[4] for row in by_split["valid"]} & {row[4] for row in by_split["test_sentences"]}
    # test_voice: the same sentences at the same rates, by a voice no other split has.
    assert [(row[3], row[4]) for row in by_split["test_voice"]] == [(row[3], row[4])
                                                                    for row in by_split["test_sentences"]]
    assert {row[2] for row in by_split["test_voice"]} == {TEST_VOICE}
    assert TEST_VOICE not in {row[2] for row in rows if row[1] != "test_voice"}
    assert lines(synthetic_asr_corpus.test_voice.with_suffix(".wrd")) == \
        lines(synthetic_asr_corpus.test_sentences.with_suffix(".wrd"))


def test_voices_are_balanced_and_rates_vary():
    plan = plan_utterances(120, seed=3)
    spoken = [u for u in plan if u.split != "test_voice"]
    voices = Counter(u.voice for u in spoken)
    assert set(voices) == set(TRAINING_VOICES) and max(voices.values()) - min(voices.values()) <= 1
    assert set(u.rate for u in spoken) == set(RATES)
    assert Counter(u.split for u in plan) == {"train": 108, "valid": 6, "test_sentences": 6, "test_voice": 6}
    assert plan == plan_utterances(120, seed=3) and plan != plan_utterances(120, seed=4)
    with pytest.raises(ValueError, match="the test voice en-us is also a training voice"):
        plan_utterances(20, seed=1, test_voice="en-us")
    with pytest.raises(ValueError, match="--num-utterances is 4; train, valid and test_sentences need at least 5"):
        plan_utterances(4, seed=1)


@pytest.mark.slow
def test_the_same_arguments_give_the_same_bytes(tmp_path, capsys):
    main(["--output-dir", str(tmp_path / "a"), "--num-utterances", "5", "--seed", "9", "--voices", "en-us", "en+f2",
          "--rates", "150"])
    assert "train 1, valid 2, test_sentences 2, test_voice 2 utterances" in capsys.readouterr().out
    build_asr_corpus(tmp_path / "b", num_utterances=5, seed=9, voices=("en-us", "en+f2"), rates=(150,))
    assert corpus_bytes(tmp_path / "a") == corpus_bytes(tmp_path / "b")
    assert {line.split("|")[3] for line in lines(tmp_path / "a" / "utterances.csv")} == {"150"}


@pytest.mark.slow
def test_prepare_dataset_writes_the_tts_corpus_at_16_khz_with_manifests(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(["bash", str(ROOT / "scripts" / "prepare_dataset.sh"), "--synthetic", "--num-utterances",
                             "6", "--seed", "7", "--sampling-rate", "16000", "--manifest", "--data-dir",
                             str(tmp_path / "sh"), "--filelists-dir", str(tmp_path / "sh" / "filelists")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    # The module in a fresh process, as the script runs it: eSpeak NG's library keeps state from the syntheses before
    # it in the same process, and in a long-lived test worker one utterance once came out 6 samples longer.
    program = ("import sys; from scripts.data.synthetic_corpus import build_corpus; "
               "summary = build_corpus(sys.argv[1], sys.argv[1] + '/filelists', num_utterances=6, seed=7, "
               "sampling_rate=16000, manifest=True); print(sorted(summary.manifests))")
    module = subprocess.run([sys.executable, "-c", program, str(tmp_path / "module")], cwd=ROOT, capture_output=True,
                            text=True, env=env, timeout=300)
    assert module.stdout == "['dict', 'test', 'train', 'valid']\n", module.stderr
    assert corpus_bytes(tmp_path / "sh") == corpus_bytes(tmp_path / "module")

    folder = tmp_path / "module"
    dictionary = Dictionary.load(folder / "dict.ltr.txt")
    metadata = {row.split("|")[0]: row.split("|")[2] for row in lines(folder / "metadata.csv")}
    for split, filelist in (("train", "train"), ("valid", "val"), ("test", "test")):
        manifest = read_manifest(folder / f"{split}.tsv", 16000)  # every count matches its 16 kHz wav
        identifiers = [Path(path).stem for path, _ in manifest.entries]
        # The same split as the TTS filelists, and the spoken text as LibriSpeech words.
        assert identifiers == [Path(row.split("|")[0]).stem
                               for row in lines(folder / "filelists" / f"synthetic_audio_text_{filelist}.txt")]
        words = lines(folder / f"{split}.wrd")
        assert words == [re.sub(r"[^A-Z']+", " ", metadata[i].upper()).strip() for i in identifiers]
        dataset = AudioDataset(manifest, 16000, labels=folder / f"{split}.ltr", dictionary=dictionary)
        assert [dictionary.decode(dataset[k].target.tolist()) for k in range(len(dataset))] == words
    assert not re.search(r"\d", (folder / "train.wrd").read_text())
