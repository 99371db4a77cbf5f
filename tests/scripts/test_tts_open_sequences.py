"""scripts/data/tts_open_sequences.py: open-vocabulary word sequences added to a built corpus's training split, the
same bytes for the same seed, and a clear error when the corpus is not built."""
from __future__ import annotations

import shutil
import subprocess
import sys

import soundfile

from scripts.data.open_text import lexicon, tts_held_out_words
from scripts.data.tts_open_sequences import add_open_sequences
from tests.conftest import REPO_ROOT


def test_sequences_are_spoken_into_the_corpus_and_appended_to_the_training_filelist(synthetic_corpus, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(synthetic_corpus.dataset_dir, corpus)
    written = add_open_sequences(corpus, corpus / "filelists", count=3, seed=7)
    lines = written.read_text(encoding="utf-8").splitlines()
    assert written.name == "synthetic_audio_text_train_open.txt"
    assert lines[:-3] == synthetic_corpus.train_filelist.read_text(encoding="utf-8").splitlines()
    words = set(lexicon())
    for number, line in enumerate(lines[-3:], start=1):
        wav, text = line.split("|")
        assert wav == f"wavs/OPEN-{number:04d}.wav"
        info = soundfile.info(corpus / wav)
        assert info.samplerate == 22050 and info.duration > 0.5
        assert all(word in words for word in text.rstrip(".").lower().split())  # lexicon words only
        assert text.upper().rstrip(".") not in tts_held_out_words()
    # validation and test filelists untouched; the same seed gives the same bytes
    for split in ("val", "test"):
        name = f"synthetic_audio_text_{split}.txt"
        assert (corpus / "filelists" / name).read_bytes() == (synthetic_corpus.dataset_dir / "filelists" /
                                                              name).read_bytes()
    first = (corpus / "wavs" / "OPEN-0002.wav").read_bytes()
    add_open_sequences(corpus, corpus / "filelists", count=3, seed=7)
    assert (corpus / "wavs" / "OPEN-0002.wav").read_bytes() == first


def test_a_corpus_that_is_not_built_is_one_error_line(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "scripts.data.tts_open_sequences", "--corpus", str(tmp_path),
                                "--filelists-dir", str(tmp_path / "filelists"), "--count", "1"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'filelists' / 'synthetic_audio_text_train.txt'}: no training filelist; build the corpus "
        "first (scripts/prepare_dataset.sh --synthetic)"]


def test_a_common_word_share_outside_0_to_1_is_one_error_line(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "scripts.data.tts_open_sequences", "--corpus", str(tmp_path),
                                "--filelists-dir", str(tmp_path), "--common-word-share", "40"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        "error: --common-word-share must be between 0 and 1, got 40.0 (--help lists the flags)"]
