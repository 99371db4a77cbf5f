"""scripts/prepare_librispeech.sh and scripts/data/librispeech.py on small local archives in LibriSpeech's layout:
extraction, manifests from the flac headers, .wrd/.ltr from the transcripts, train-full-960 and dict.ltr.txt, read
back by wav2vec 2.0's data side."""
from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile

from scripts.data import librispeech
from wav2vec2.data_function import AudioDataset, read_manifest
from wav2vec2.dictionary import Dictionary

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "prepare_librispeech.sh"

# subset -> {speaker-chapter: [(utterance number, samples, transcript)]}
CONTENTS = {
    "train-clean-100": {"103-1240": [(0, 1600, "CHAPTER ONE MISSUS RACHEL LYNDE IS SURPRISED"),
                                     (1, 2400, "THAT HAD ITS SOURCE")]},
    "train-clean-360": {"100-121669": [(0, 2000, "TOM THE PIPER'S SON")]},
    "train-other-500": {"1006-135212": [(0, 1800, "ZEALOUS QUIXOTE"), (3, 1700, "JUMPS")]},
    "dev-clean": {"1272-128104": [(0, 2200, "MISTER QUILTER IS THE APOSTLE"), (1, 1900, "NOR IS MISTER QUILTER")]},
}


def make_archive(folder: Path, subset: str) -> Path:
    """<subset>.tar.gz with LibriSpeech/<subset>/<speaker>/<chapter>/<ID>.flac and <speaker>-<chapter>.trans.txt."""
    path = folder / f"{subset}.tar.gz"
    rng = np.random.default_rng(len(subset))
    with tarfile.open(path, "w:gz") as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("LibriSpeech/README.TXT", b"LibriSpeech ASR corpus\n")
        for speaker_chapter, utterances in CONTENTS[subset].items():
            speaker, chapter = speaker_chapter.split("-")
            folder_name = f"LibriSpeech/{subset}/{speaker}/{chapter}"
            lines = []
            for number, samples, text in utterances:
                identifier = f"{speaker_chapter}-{number:04d}"
                audio = io.BytesIO()
                soundfile.write(audio, (0.1 * rng.standard_normal(samples)).clip(-1, 1), 16000, format="FLAC")
                add(f"{folder_name}/{identifier}.flac", audio.getvalue())
                lines.append(f"{identifier} {text}\n")
            add(f"{folder_name}/{speaker_chapter}.trans.txt", "".join(lines).encode())
    return path


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("librispeech_archives")
    for subset in CONTENTS:
        make_archive(folder, subset)
    return folder


def run_script(*args, env_extra=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env_extra or {}))
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_the_script_parses_and_refuses_bad_options():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    for args, message in [(["--bogus"], "unknown option '--bogus'"), (["--stage", "x"], "whole numbers, got 'x'"),
                          (["--subsets"], "--subsets needs a value")]:
        result = run_script(*args)
        assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "stage 5" in run_script("--help").stdout


@pytest.mark.slow
def test_stages_2_to_5_make_manifests_labels_and_the_dictionary(archives, tmp_path):
    data, manifests = tmp_path / "LibriSpeech", tmp_path / "manifests"
    subsets = " ".join(CONTENTS)
    result = run_script("--stage", "2", "--data-dir", str(data), "--archives-dir", str(archives),
                        "--manifests-dir", str(manifests), "--subsets", subsets)
    assert result.returncode == 0, result.stderr
    assert "stage 1" not in result.stdout and "stage 5" in result.stdout
    assert (data / "train-clean-100" / "103" / "1240" / "103-1240-0001.flac").is_file()
    assert not (data / "LibriSpeech").exists()  # the archives' top folder is stripped

    dev = lines(manifests / "dev-clean.tsv")
    assert dev == [str((data / "dev-clean").resolve()), "1272/128104/1272-128104-0000.flac\t2200",
                   "1272/128104/1272-128104-0001.flac\t1900"]
    assert lines(manifests / "dev-clean.wrd") == ["MISTER QUILTER IS THE APOSTLE", "NOR IS MISTER QUILTER"]
    assert lines(manifests / "dev-clean.ltr")[1] == "N O R | I S | M I S T E R | Q U I L T E R |"

    # train-full-960: the three training subsets under the common root, NVIDIA's generate_filelists.sh layout.
    full = lines(manifests / "train-full-960.tsv")
    assert full[0] == str(data.resolve())
    assert full[1:] == ["train-clean-100/103/1240/103-1240-0000.flac\t1600",
                        "train-clean-100/103/1240/103-1240-0001.flac\t2400",
                        "train-clean-360/100/121669/100-121669-0000.flac\t2000",
                        "train-other-500/1006/135212/1006-135212-0000.flac\t1800",
                        "train-other-500/1006/135212/1006-135212-0003.flac\t1700"]
    assert lines(manifests / "train-full-960.wrd")[2] == "TOM THE PIPER'S SON"

    # dict.ltr.txt: the training labels' symbols, most frequent first (ties by symbol); dev-clean's are not counted.
    train_letters = "".join(lines(manifests / "train-full-960.ltr")).replace(" ", "")
    dictionary = [line.split() for line in lines(manifests / "dict.ltr.txt")]
    assert dictionary[0] == ["|", "18"]  # one per word
    assert {symbol: int(count) for symbol, count in dictionary} == {s: train_letters.count(s)
                                                                    for s in set(train_letters)}
    counts = [(-int(count), symbol) for symbol, count in dictionary]
    assert counts == sorted(counts)

    # wav2vec 2.0's data side reads it all back.
    vocabulary = Dictionary.load(manifests / "dict.ltr.txt")
    dataset = AudioDataset(read_manifest(manifests / "train-full-960.tsv", 16000), 16000,
                           labels=manifests / "train-full-960.ltr", dictionary=vocabulary)
    assert dataset.sizes.tolist() == [1600, 2400, 2000, 1800, 1700]
    assert vocabulary.decode(dataset[4].target.tolist()) == "JUMPS" and dataset[4].source.shape == (1700,)

    # Rerunning skips what is extracted.
    result = run_script("--stage", "2", "--stop-stage", "2", "--data-dir", str(data), "--archives-dir",
                        str(archives), "--subsets", "dev-clean")
    assert result.returncode == 0 and "already extracted" in result.stdout


@pytest.mark.slow
def test_stage_1_downloads_from_a_mirror_and_skips_what_is_there(archives, tmp_path):
    env = {"LIBRISPEECH_URL": archives.as_uri()}
    target = tmp_path / "archives"
    result = run_script("--stop-stage", "1", "--archives-dir", str(target), "--subsets", "dev-clean", env_extra=env)
    assert result.returncode == 0, result.stderr
    assert (target / "dev-clean.tar.gz").read_bytes() == (archives / "dev-clean.tar.gz").read_bytes()
    result = run_script("--stop-stage", "1", "--archives-dir", str(target), "--subsets", "dev-clean",
                        env_extra={"LIBRISPEECH_URL": "file:///nonexistent"})
    assert result.returncode == 0 and "exists, skipping" in result.stdout


@pytest.mark.slow
def test_a_partial_download_makes_no_train_full_960_and_counts_what_it_has(archives, tmp_path):
    data, manifests = tmp_path / "LibriSpeech", tmp_path / "manifests"
    result = run_script("--stage", "2", "--data-dir", str(data), "--archives-dir", str(archives),
                        "--manifests-dir", str(manifests), "--subsets", "dev-clean train-clean-100")
    assert result.returncode == 0, result.stderr
    assert "missing train-clean-360.tsv, train-other-500.tsv, skipping" in result.stdout
    assert not (manifests / "train-full-960.tsv").exists()
    letters = "".join(lines(manifests / "train-clean-100.ltr")).replace(" ", "")
    assert sum(int(line.split()[1]) for line in lines(manifests / "dict.ltr.txt")) == len(letters)


@pytest.mark.slow
def test_mistakes_are_reported(archives, tmp_path):
    result = run_script("--stage", "2", "--stop-stage", "2", "--data-dir", str(tmp_path / "data"), "--archives-dir",
                        str(tmp_path / "empty"), "--subsets", "dev-other")
    assert result.returncode == 1 and "no archive of dev-other in" in result.stderr
    result = run_script("--stage", "3", "--data-dir", str(tmp_path / "data"), "--manifests-dir", str(tmp_path / "m"),
                        "--subsets", "dev-other")
    assert result.returncode == 1 and "none of dev-other is in" in result.stderr

    chapter = tmp_path / "data" / "dev-clean" / "1" / "2"
    chapter.mkdir(parents=True)
    soundfile.write(str(chapter / "1-2-0000.flac"), np.zeros(100), 16000, format="FLAC")
    (chapter / "1-2.trans.txt").write_text("1-2-0001 ANOTHER ONE\n")
    librispeech.write_subset_manifest(tmp_path / "data", tmp_path / "m", "dev-clean")
    with pytest.raises(ValueError, match=r"dev-clean.tsv: no transcript of 1-2-0000 in .*/1/2/\*.trans.txt"):
        librispeech.write_subset_labels(tmp_path / "m", "dev-clean")


def test_text_becomes_librispeech_words():
    assert librispeech.librispeech_words("Twenty-one dollars, Mister O'Hara!") == "TWENTY ONE DOLLARS MISTER O'HARA"
    assert librispeech.librispeech_words("  'Quoted,' she said.  ") == "QUOTED SHE SAID"
    with pytest.raises(ValueError, match="digits"):
        librispeech.librispeech_words("It costs 5 dollars.")
