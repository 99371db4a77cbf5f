"""scripts/data/compute_mels.py and scripts/prepare_mels.sh: saved mels equal MelSpectrogram of the wavs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from common.audio import AudioParams, MelSpectrogram, load_wav
from scripts.data.compute_mels import compute_mels

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus_copy(synthetic_corpus, tmp_path) -> Path:
    """A writable copy of the session corpus (compute_mels writes mels/ into the dataset folder)."""
    copy = tmp_path / "corpus"
    shutil.copytree(synthetic_corpus.dataset_dir, copy)
    return copy


def audio_filelists(corpus: Path) -> list[Path]:
    return [corpus / "filelists" / f"synthetic_audio_text_{split}.txt" for split in ("train", "val", "test")]


def rows(path: Path) -> list[list[str]]:
    return [line.split("|") for line in path.read_text(encoding="utf-8").splitlines()]


def test_saved_mels_equal_mel_spectrogram_of_each_wav_and_the_mel_filelists_match(corpus_copy):
    written = compute_mels(corpus_copy, audio_filelists(corpus_copy))
    assert written == [corpus_copy / "filelists" / f"synthetic_mel_text_{split}.txt"
                       for split in ("train", "val", "test")]
    mel_spectrogram = MelSpectrogram(AudioParams())
    count = 0
    for audio_list, mel_list in zip(audio_filelists(corpus_copy), written):
        audio_rows, mel_rows = rows(audio_list), rows(mel_list)
        assert len(mel_rows) == len(audio_rows)
        for (wav, text), (mel_path, mel_text) in zip(audio_rows, mel_rows):
            identifier = Path(wav).stem
            assert mel_path == f"mels/{identifier}.pt" and mel_text == text
            audio = load_wav(corpus_copy / wav, 22050)
            saved = torch.load(corpus_copy / mel_path, weights_only=True)
            assert saved.dtype == torch.float32 and saved.shape == (80, 1 + len(audio) // 256)
            assert torch.equal(saved, mel_spectrogram(audio)[0])
            count += 1
    assert count == 24
    assert json.loads((corpus_copy / "mels" / "audio_params.json").read_text()) == AudioParams().to_dict()
    assert not list((corpus_copy / "mels").glob("*.tmp"))


def test_rerun_keeps_mels_made_with_the_same_parameters_and_refuses_others(corpus_copy):
    compute_mels(corpus_copy, audio_filelists(corpus_copy))
    probe = corpus_copy / "mels" / "SYN001-0001.pt"
    probe.write_bytes(b"marker: kept by a rerun with the same parameters")
    compute_mels(corpus_copy, audio_filelists(corpus_copy))
    assert probe.read_bytes().startswith(b"marker")

    other = AudioParams(mel_fmax=7000.0)
    with pytest.raises(ValueError, match=r"mel_fmax: 8000.0 \(the mels in .*\) vs 7000.0"):
        compute_mels(corpus_copy, audio_filelists(corpus_copy), params=other)
    compute_mels(corpus_copy, audio_filelists(corpus_copy), params=other, overwrite=True)
    saved = torch.load(probe, weights_only=True)
    assert torch.equal(saved, MelSpectrogram(other)(load_wav(corpus_copy / "wavs" / "SYN001-0001.wav", 22050))[0])
    assert json.loads((corpus_copy / "mels" / "audio_params.json").read_text())["mel_fmax"] == 7000.0


def test_bad_filelists_are_named(corpus_copy, tmp_path):
    good = (corpus_copy / "filelists" / "synthetic_audio_text_val.txt").read_text()
    bad = tmp_path / "bad_audio_text_x.txt"
    bad.write_text(good + "wavs/missing.wav|Not there.\n")
    with pytest.raises(FileNotFoundError, match=r"bad_audio_text_x.txt:2: audio file not found: .*missing.wav"):
        compute_mels(corpus_copy, [bad])
    bad.write_text(good + "wavs/a.wav|too|many\n")
    with pytest.raises(ValueError, match=r"bad_audio_text_x.txt:2: malformed line"):
        compute_mels(corpus_copy, [bad])
    unnamed = tmp_path / "train.txt"
    unnamed.write_text(good)
    with pytest.raises(ValueError, match=r"train.txt: its name has no '_audio_text_'"):
        compute_mels(corpus_copy, [unnamed])
    compute_mels(corpus_copy, [unnamed], mel_filelists=[tmp_path / "mels_train.txt"])
    assert rows(tmp_path / "mels_train.txt")[0][0].startswith("mels/SYN")
    twice = tmp_path / "twice_audio_text_x.txt"
    twice.write_text(good + good.replace("wavs/", "elsewhere/"))
    (corpus_copy / "elsewhere").mkdir()
    for line in good.splitlines():  # the same file names in another folder: the files exist, their mels collide
        name = line.split("|")[0].removeprefix("wavs/")
        shutil.copy(corpus_copy / "wavs" / name, corpus_copy / "elsewhere" / name)
    with pytest.raises(ValueError, match=r"would both be saved as mels/SYN"):
        compute_mels(corpus_copy, [twice])


@pytest.mark.slow
def test_prepare_mels_script_writes_mels_and_rejects_unknown_flags(corpus_copy):
    command = ["bash", str(ROOT / "scripts" / "prepare_mels.sh"), "--synthetic", "--data-dir", str(corpus_copy),
               "--filelists-dir", str(corpus_copy / "filelists")]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(command + ["--mel-fmax", "7600"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(list((corpus_copy / "mels").glob("SYN*.pt"))) == 24
    assert json.loads((corpus_copy / "mels" / "audio_params.json").read_text())["mel_fmax"] == 7600.0
    assert len(rows(corpus_copy / "filelists" / "synthetic_mel_text_train.txt")) == 22

    result = subprocess.run(command + ["--mel-fmaxx", "7600"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2 and "unrecognized arguments: --mel-fmaxx" in result.stderr
