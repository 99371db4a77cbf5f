"""scripts/tacotron2/demo_language.sh (`make demo-de`): every stage end to end in QUICK=1 mode (a 12-utterance German
corpus, a tiny model, one epoch), and the German sentences of the synthetic corpus (scripts/data/sentences_de.py).
The speech of a one-epoch model means nothing: the tests check the stages and what they leave (the full demo's time
and alignment health belong in tacotron2/RESULTS.md, measured on a quiet machine)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.text.phonemes import cache_path, phonemize
from scripts.data.synthetic_corpus import make_sentences, sentence_language

ROOT = Path(__file__).resolve().parents[2]


def run_demo(folder: Path, *flags: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHON": sys.executable, "QUICK": "1", "DATA_DIR": str(folder / "data"),
                   "FILELISTS": str(folder / "filelists"), "OUTPUT_DIR": str(folder / "out"), "OMP_NUM_THREADS": "1"}
    return subprocess.run(["bash", "scripts/tacotron2/demo_language.sh", *flags], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=environment)


@pytest.mark.slow
def test_quick_demo_builds_a_german_corpus_trains_on_phonemes_and_synthesizes(tmp_path):
    completed = run_demo(tmp_path)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    data, filelists, output = tmp_path / "data", tmp_path / "filelists", tmp_path / "out"

    # stage 1: German sentences, spoken by the de voice, with the stamp of the corpus's arguments
    assert (data / ".demo_language_corpus").read_text().split() == ["--voice", "de", "--num-utterances", "12",
                                                                    "--seed", "1234"]
    written = [line.split("|")[1] for line in (data / "metadata.csv").read_text("utf-8").splitlines()]
    assert written == [sentence.written for sentence in make_sentences(12, 1234, "de")]
    assert len(list((data / "wavs").glob("*.wav"))) == 12
    # stage 2: trained on the phonemes, cached beside the training filelist
    checkpoint = torch.load(output / "checkpoint_Tacotron2_last.pt", map_location="cpu", weights_only=True)
    assert checkpoint["text"]["cleaners"] == ["espeak_ipa"] and checkpoint["text"]["language"] == "de"
    train_filelist = filelists / "synthetic_audio_text_train.txt"
    transcripts = [line.split("|")[1] for line in train_filelist.read_text("utf-8").splitlines()]
    cache = json.loads(cache_path(train_filelist, "de").read_text("utf-8"))
    assert cache["phonemes"] == {text: phonemize(text, "de") for text in transcripts}
    # stage 3: the phrases and the held-out test sentence, with alignment plots
    phrases = (ROOT / "phrases" / "phrase_de.txt").read_text("utf-8").splitlines()
    assert sorted(path.name for path in (output / "wavs").glob("audio_*.wav")) == [
        f"audio_{n}.wav" for n in range(1, len(phrases) + 1)]
    # QUICK's 40 decoder steps say a few words a piece: a line in parts has an alignment per part.
    aligned_lines = {path.stem.split("_")[1] for path in (output / "wavs").glob("alignment_*.png")}
    assert aligned_lines == {str(n) for n in range(1, len(phrases) + 1)}
    assert len(list((output / "wavs_test").glob("audio_*.wav"))) == 1
    # stage 4: the report
    assert "== Demo summary ==" in completed.stdout
    assert re.search(r"validation alignment-health score \d\.\d{3}", completed.stdout)

    # Stages can be skipped: the report alone, from what is there.
    completed = run_demo(tmp_path, "--stage", "4")
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "stage 1" not in completed.stdout and "== Demo summary ==" in completed.stdout


def test_a_bad_stage_is_one_error_line():
    completed = subprocess.run(["bash", "scripts/tacotron2/demo_language.sh", "--stage", "9"], cwd=ROOT,
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.strip() == "demo_language.sh: error: --stage takes a stage from 1 to 4, got '9'"


def test_german_voices_speak_german_sentences_and_the_english_ones_are_unchanged():
    assert sentence_language("de") == sentence_language("de-at") == "de"
    assert sentence_language("en-us") == sentence_language("fr") == "en"  # only German has its own sentences
    german = make_sentences(300, seed=1234, language="de")
    assert german == make_sentences(300, seed=1234, language="de")
    assert len({sentence.written for sentence in german}) == 300
    assert all(sentence.spoken == sentence.written for sentence in german)  # eSpeak reads the digits itself
    assert any(re.search(r"[äöüß]", sentence.written) for sentence in german)
    assert make_sentences(20, seed=1234) == make_sentences(20, seed=1234, language="en")


def test_a_german_corpus_goes_beside_the_english_one(tmp_path):
    """prepare_dataset.sh --synthetic --voice de writes data/synthetic_de and filelists/de, so the English demo's
    corpus (data/synthetic, filelists/) is never overwritten; here under a scratch copy of the script's folder."""
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "prepare_dataset.sh"
    script.write_text((ROOT / "scripts" / "prepare_dataset.sh").read_text())
    (tmp_path / "scripts" / "data").symlink_to(ROOT / "scripts" / "data")
    (tmp_path / "scripts" / "project_python.sh").symlink_to(ROOT / "scripts" / "project_python.sh")
    (tmp_path / ".venv").symlink_to(sys.prefix)  # the script runs .venv/bin/python: this test's environment
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    environment.pop("DATA_DIR", None)
    environment.pop("FILELISTS_DIR", None)
    completed = subprocess.run(["bash", str(script), "--synthetic", "--voice", "de", "--num-utterances", "3"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (tmp_path / "data" / "synthetic_de" / "metadata.csv").is_file()
    assert (tmp_path / "filelists" / "de" / "synthetic_audio_text_train.txt").is_file()
    assert not (tmp_path / "data" / "synthetic").exists() and not list((tmp_path / "filelists").glob("*.txt"))


def test_make_target_runs_the_script_after_setup():
    assert "\ndemo-de: setup\n\tbash scripts/tacotron2/demo_language.sh\n" in (ROOT / "Makefile").read_text()
