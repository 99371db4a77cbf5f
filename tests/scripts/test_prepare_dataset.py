"""The synthetic eSpeak NG corpus, the LJSpeech download/extract/filelists stages and scripts/prepare_dataset.sh."""
from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile

from common.text import TextProcessor
from common.text.cleaners import english_cleaners
from scripts.data import ljspeech
from scripts.data.espeak import synthesize
from scripts.data import synthetic_corpus as corpus_module
from scripts.data.synthetic_corpus import (build_corpus, make_sentences, speak_all, split_sizes, spoken_lengths,
                                         trim_silence, utterance_id)

ROOT = Path(__file__).resolve().parents[2]
PREPARE_DATASET = ROOT / "scripts" / "prepare_dataset.sh"


def corpus_files(dataset_dir: Path, filelists_dir: Path) -> dict[str, bytes]:
    files = {f"wavs/{path.name}": path.read_bytes() for path in sorted((dataset_dir / "wavs").glob("*.wav"))}
    files["metadata.csv"] = (dataset_dir / "metadata.csv").read_bytes()
    files.update({f"filelists/{path.name}": path.read_bytes() for path in sorted(filelists_dir.glob("*.txt"))})
    return files


def read_rows(path: Path) -> list[list[str]]:
    return [line.split("|") for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------------------------
# eSpeak NG


def test_espeak_gives_the_same_samples_for_the_same_text_whatever_was_spoken_before():
    first, sampling_rate = synthesize("The third bottle was heavy.")
    synthesize("Something else entirely, to disturb any state.")
    again, _ = synthesize("The third bottle was heavy.")
    other, _ = synthesize("The fourth bottle was heavy.")
    assert sampling_rate == 22050
    assert first.dtype == np.float32 and first.ndim == 1
    assert np.array_equal(first, again)
    assert not (len(other) == len(first) and np.array_equal(other, first))
    assert 0.05 < np.abs(first).max() <= 1.0
    assert 0.8 < len(first) / sampling_rate < 3.0


def test_espeak_rate_changes_the_duration_and_bad_arguments_are_refused():
    slow, sampling_rate = synthesize("Please bring seven chairs and a wooden box.", words_per_minute=120)
    fast, _ = synthesize("Please bring seven chairs and a wooden box.", words_per_minute=240)
    assert len(slow) > 1.5 * len(fast)
    with pytest.raises(ValueError, match="no voice named 'xx-nowhere'"):
        synthesize("Hello.", voice="xx-nowhere")
    with pytest.raises(ValueError, match="words_per_minute is 20"):
        synthesize("Hello.", words_per_minute=20)
    with pytest.raises(ValueError, match="empty text"):
        synthesize("   ")


def test_trim_silence_leaves_exactly_the_kept_silence_on_both_sides():
    audio = np.zeros(22050, dtype=np.float32)
    audio[5000:9000] = 0.5
    trimmed = trim_silence(audio, 22050, keep_seconds=0.03)
    keep = round(0.03 * 22050)
    assert len(trimmed) == 4000 + 2 * keep
    assert np.flatnonzero(trimmed)[[0, -1]].tolist() == [keep, keep + 3999]
    # Sound up to the very edge gets silence added rather than losing any of it.
    audio = np.full(1000, 0.5, dtype=np.float32)
    padded = trim_silence(audio, 22050, keep_seconds=0.03)
    assert len(padded) == 1000 + 2 * keep and np.array_equal(padded[keep:-keep], audio)
    with pytest.raises(ValueError, match="silent"):
        trim_silence(np.zeros(100, dtype=np.float32), 22050)


# ---------------------------------------------------------------------------------------------------------------
# Sentences


def test_sentences_carry_numbers_abbreviations_and_all_sentence_types():
    sentences = make_sentences(500, seed=1234)
    written = [sentence.written for sentence in sentences]
    assert len(set(written)) == 500
    patterns = {
        "cardinal": r"(?<![\d$.])\b\d{1,3}\b(?![.\d]|st|nd|rd|th)",
        "year": r"\b(19[1-9]\d|20[0-2]\d)\b",
        "money with cents": r"\$\d+\.\d\d\b",
        "whole dollars": r"\$\d+(?![.\d])",
        "decimal": r"(?<!\$)\b\d+\.\d\b",
        "ordinal": r"\b\d+(st|nd|rd|th)\b",
        "Dr.": r"\bDr\. [A-Z]", "Mr.": r"\bMr\. [A-Z]", "Mrs.": r"\bMrs\. [A-Z]", "St.": r"\bSt\. [A-Z]",
        "question": r"\?$", "exclamation": r"!$", "statement": r"\.$", "comma": r",",
    }
    for name, pattern in patterns.items():
        count = sum(1 for text in written if re.search(pattern, text))
        assert count >= 5, f"only {count} of 500 sentences have a {name}"
    word_counts = np.array([len(text.split()) for text in written])
    assert word_counts.min() >= 3 and word_counts.max() <= 16
    assert np.mean((word_counts >= 4) & (word_counts <= 14)) > 0.9


def test_spoken_text_is_what_english_cleaners_make_of_the_written_text():
    # eSpeak speaks the spoken column, the model reads the cleaned written column: they must say the same words.
    processor = TextProcessor(["english_cleaners"], strict=True)
    for sentence in make_sentences(500, seed=1234):
        assert english_cleaners(sentence.written) == english_cleaners(sentence.spoken), sentence
        assert not re.search(r"[0-9$]", sentence.spoken)
        processor.encode(sentence.written)  # every character is in the symbol table
    money = [s for s in make_sentences(500, seed=1234) if re.search(r"\$\d+\.\d\d", s.written)]
    assert money and all(re.search(r"dollars?, [a-z-]+ cents?", s.spoken) for s in money)


def test_sentences_are_a_function_of_the_seed():
    assert make_sentences(50, seed=5) == make_sentences(50, seed=5)
    assert make_sentences(50, seed=5) != make_sentences(50, seed=6)
    assert make_sentences(50, seed=5) == make_sentences(80, seed=5)[:50]


def test_split_sizes_and_ids():
    assert split_sizes(500) == {"val": 25, "test": 25, "train": 450}
    assert split_sizes(24) == {"val": 1, "test": 1, "train": 22}
    assert split_sizes(3) == {"val": 1, "test": 1, "train": 1}
    with pytest.raises(ValueError, match="at least 3"):
        split_sizes(2)
    assert [utterance_id(i) for i in (0, 1, 99, 100, 499)] == \
        ["SYN001-0001", "SYN001-0002", "SYN001-0100", "SYN002-0001", "SYN005-0100"]


# ---------------------------------------------------------------------------------------------------------------
# The synthetic corpus


def test_wavs_are_22050_hz_mono_16_bit_speech_with_short_silent_edges(synthetic_corpus):
    wavs = sorted((synthetic_corpus.dataset_dir / "wavs").glob("*.wav"))
    assert len(wavs) == synthetic_corpus.num_utterances == 24
    for path in wavs:
        info = soundfile.info(str(path))
        assert (info.samplerate, info.channels, info.format, info.subtype) == (22050, 1, "WAV", "PCM_16"), path
        assert 0.7 < info.duration < 5.0, (path, info.duration)
        audio, _ = soundfile.read(str(path), dtype="int16")
        peak = np.abs(audio).max()
        assert peak > 8000, path  # speech, not near-silence
        assert np.sqrt(np.mean(audio.astype(np.float64) ** 2)) > 1000
        edge = round(0.03 * 22050)
        assert np.abs(audio[:edge]).max() <= 0.01 * peak and np.abs(audio[-edge:]).max() <= 0.01 * peak, path
        assert np.abs(audio[edge:edge + 220]).max() > 0.01 * peak  # the sound starts right after the kept silence


def test_metadata_and_filelists_have_the_ljspeech_formats(synthetic_corpus):
    root = synthetic_corpus.dataset_dir
    metadata = read_rows(root / "metadata.csv")
    ids = [row[0] for row in metadata]
    assert ids == [f"SYN001-{i:04d}" for i in range(1, 25)]
    assert all(len(row) == 3 and row[1] and row[2] for row in metadata)
    raw_text = {row[0]: row[1] for row in metadata}

    splits = {"train": synthetic_corpus.train_filelist, "val": synthetic_corpus.val_filelist,
              "test": synthetic_corpus.test_filelist}
    seen = []
    for split, path in splits.items():
        assert path == root / "filelists" / f"synthetic_audio_text_{split}.txt"
        rows = read_rows(path)
        assert len(rows) == {"train": 22, "val": 1, "test": 1}[split]
        for wav, text in rows:
            identifier = re.fullmatch(r"wavs/(SYN\d{3}-\d{4})\.wav", wav).group(1)
            assert (root / wav).is_file() and text == raw_text[identifier]
            seen.append(identifier)
        mel_rows = read_rows(root / "filelists" / f"synthetic_mel_text_{split}.txt")
        assert mel_rows == [[wav.replace("wavs/", "mels/").replace(".wav", ".pt"), text] for wav, text in rows]
    assert sorted(seen) == ids  # the splits are disjoint and cover the corpus


@pytest.mark.slow
def test_same_seed_gives_the_same_bytes_and_another_seed_does_not(synthetic_corpus, tmp_path):
    build_corpus(tmp_path / "a", tmp_path / "a" / "filelists", num_utterances=6, seed=1234)
    build_corpus(tmp_path / "b", tmp_path / "b" / "filelists", num_utterances=6, seed=1234)
    build_corpus(tmp_path / "c", tmp_path / "c" / "filelists", num_utterances=6, seed=99)
    first = corpus_files(tmp_path / "a", tmp_path / "a" / "filelists")
    assert len(first) == 6 + 1 + 6
    assert corpus_files(tmp_path / "b", tmp_path / "b" / "filelists") == first
    other = corpus_files(tmp_path / "c", tmp_path / "c" / "filelists")
    assert other["metadata.csv"] != first["metadata.csv"]
    assert sum(other[name] != first[name] for name in first if name.startswith("wavs/")) >= 5
    # The session corpus is a longer build of the same seed: its first six clips are the same files.
    for name, content in first.items():
        if name.startswith("wavs/"):
            assert (synthetic_corpus.dataset_dir / name).read_bytes() == content, name


def test_two_processes_speak_the_same_files_as_one(tmp_path):
    texts = ["The old mill.", "Doctor Smith paid twenty dollars.", "Can you hear the difference?"]
    lengths = {}
    for processes in (1, 2):
        jobs = [(text, tmp_path / f"{processes}-{index}.wav", "en-us", 175, 16000) for index, text in enumerate(texts)]
        lengths[processes] = list(speak_all(jobs, processes))
    assert lengths[1] == lengths[2] and all(length > 16000 * 0.5 for length in lengths[1])
    for index in range(len(texts)):
        assert (tmp_path / f"1-{index}.wav").read_bytes() == (tmp_path / f"2-{index}.wav").read_bytes()


def test_a_text_whose_espeak_child_dies_is_none_or_named(tmp_path, monkeypatch):
    speak = corpus_module.synthesize

    def dies_on_bad(text, **settings):
        if text == "bad":
            raise RuntimeError("the eSpeak NG child process died")
        return speak(text, **settings)

    monkeypatch.setattr(corpus_module, "synthesize", dies_on_bad)  # the forked workers inherit it
    jobs = [("good", tmp_path / "good.wav"), ("bad", tmp_path / "bad.wav")]
    good, bad = speak_all(jobs, 2)
    assert good > 0 and bad is None and not (tmp_path / "bad.wav").exists()
    with pytest.raises(RuntimeError, match="child process died while speaking 'bad'"):
        spoken_lengths(jobs)


# ---------------------------------------------------------------------------------------------------------------
# LJSpeech stages, on a small fake archive


FAKE_METADATA = [
    'LJ001-0001|Printing, in the only sense with which we are at present concerned.|Printing, in the only sense '
    'with which we are at present concerned.',
    'LJ001-0002|"In 1455," he said.|"In fourteen fifty-five," he said.',
    "LJ001-0003|Dr. Smith's office.|Doctor Smith's office.",
    "LJ001-0004|It cost $5.|It cost five dollars.",
    "LJ001-0005|Fifth clip.|Fifth clip.",
    "LJ001-0006|Sixth clip.|Sixth clip.",
    "LJ002-0001|Seventh clip.|Seventh clip.",
    "LJ002-0002|Eighth clip.|Eighth clip.",
]


def wav_bytes(seconds: float = 0.2) -> bytes:
    buffer = io.BytesIO()
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(int(22050 * seconds)) / 22050)
    soundfile.write(buffer, tone, 22050, subtype="PCM_16", format="WAV")
    return buffer.getvalue()


def add_file(tar: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    tar.addfile(info, io.BytesIO(content))


def make_archive(path: Path, metadata_lines=FAKE_METADATA, extra=None) -> Path:
    with tarfile.open(path, "w:bz2") as tar:
        folder = tarfile.TarInfo("LJSpeech-1.1")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        add_file(tar, "LJSpeech-1.1/README", b"fake LJSpeech for tests\n")
        add_file(tar, "LJSpeech-1.1/metadata.csv", ("\n".join(metadata_lines) + "\n").encode())
        for line in metadata_lines:
            add_file(tar, f"LJSpeech-1.1/wavs/{line.split('|')[0]}.wav", wav_bytes())
        if extra is not None:
            extra(tar)
    return path


@pytest.fixture
def fake_archive(tmp_path) -> Path:
    return make_archive(tmp_path / "LJSpeech-1.1.tar.bz2")


def test_extract_and_filelists_stages(fake_archive, tmp_path):
    dataset = ljspeech.extract(fake_archive, tmp_path / "LJSpeech-1.1")
    assert sorted(p.name for p in (dataset / "wavs").iterdir()) == [f"{line[:10]}.wav" for line in FAKE_METADATA]
    assert (dataset / "README").read_text() == "fake LJSpeech for tests\n"

    written = ljspeech.write_filelists(dataset, tmp_path / "filelists", seed=1234)
    assert sorted(written) == sorted(f"{kind}_{split}" for kind in ("audio", "mel") for split in ljspeech.SPLITS)
    assert written["audio_train"] == tmp_path / "filelists" / "ljs_audio_text_train_filelist.txt"
    rows = {split: read_rows(written[f"audio_{split}"]) for split in ljspeech.SPLITS}
    assert {split: len(r) for split, r in rows.items()} == {"train": 6, "val": 1, "test": 1}
    normalized = {line.split("|")[0]: line.split("|")[2] for line in FAKE_METADATA}
    listed = []
    for split, split_rows in rows.items():
        for wav, text in split_rows:
            identifier = wav[len("wavs/"):-len(".wav")]
            assert wav == f"wavs/{identifier}.wav" and text == normalized[identifier]  # quotes kept as they are
            listed.append(identifier)
        assert read_rows(written[f"mel_{split}"]) == [[f"mels/{w[5:-4]}.pt", t] for w, t in split_rows]
    assert sorted(listed) == sorted(normalized)
    # Deterministic: the same seed writes the same split.
    again = ljspeech.write_filelists(dataset, tmp_path / "again", seed=1234)
    assert all(again[name].read_bytes() == written[name].read_bytes() for name in written)


def test_split_sizes_follow_ljspeech():
    assert ljspeech.default_split_sizes(13100) == {"train": 12500, "val": 100, "test": 500}
    assert ljspeech.default_split_sizes(1000) == {"val": 8, "test": 38, "train": 954}
    splits = ljspeech.split_identifiers([f"LJ{i:05d}" for i in range(13100)], ljspeech.default_split_sizes(13100), 1)
    assert {name: len(ids) for name, ids in splits.items()} == {"train": 12500, "val": 100, "test": 500}
    assert len(set().union(*splits.values())) == 13100
    with pytest.raises(ValueError, match="add up to"):
        ljspeech.split_identifiers(["a", "b", "c"], {"train": 2, "val": 1, "test": 1}, 1)


@pytest.mark.parametrize("bad_line, message", [
    ("LJ001-0009|only two fields", r"metadata.csv:4: expected 3 '\|'-separated fields .*found 2"),
    ("LJ001-0009|a|b|c", r"metadata.csv:4: expected 3 '\|'-separated fields .*found 4"),
    ("LJ001-0001|duplicate|duplicate", r"metadata.csv:4: LJ001-0001 already appears on line 1"),
    ("../evil|path|path", r"metadata.csv:4: '../evil' is not a valid clip ID"),
    ("LJ001-0009|text|   ", r"metadata.csv:4: empty transcript"),
])
def test_malformed_metadata_line_is_named(tmp_path, bad_line, message):
    lines = FAKE_METADATA[:3] + [bad_line] + FAKE_METADATA[3:]  # the bad line is line 4
    dataset = ljspeech.extract(make_archive(tmp_path / "bad.tar.bz2", lines[:3] + lines[4:]), tmp_path / "LJ")
    (dataset / "metadata.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        ljspeech.write_filelists(dataset, tmp_path / "filelists")
    assert not (tmp_path / "filelists" / "ljs_audio_text_train_filelist.txt").exists()


def test_missing_wav_names_the_metadata_line_and_the_file(fake_archive, tmp_path):
    dataset = ljspeech.extract(fake_archive, tmp_path / "LJ")
    (dataset / "wavs" / "LJ001-0003.wav").unlink()
    with pytest.raises(FileNotFoundError, match=r"metadata.csv:3: .*LJ001-0003.wav does not exist \(1 of 8"):
        ljspeech.write_filelists(dataset, tmp_path / "filelists")


def symlink_member(tar):
    link = tarfile.TarInfo("LJSpeech-1.1/wavs/link.wav")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    tar.addfile(link)


@pytest.mark.parametrize("extra, message", [
    (lambda tar: add_file(tar, "LJSpeech-1.1/../../escaped.txt", b"x"), "leaves the target folder"),
    (lambda tar: add_file(tar, "/tmp/absolute_escape.txt", b"x"), "leaves the target folder"),
    (symlink_member, "it is a link"),
    (lambda tar: add_file(tar, "Other-Folder/file.txt", b"x"), "one top folder"),
])
def test_extract_refuses_members_that_could_escape(tmp_path, extra, message):
    archive = make_archive(tmp_path / "evil.tar.bz2", extra=extra)
    target = tmp_path / "deep" / "down" / "LJ"
    with pytest.raises(ValueError, match=message):
        ljspeech.extract(archive, target)
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "deep" / "escaped.txt").exists()
    assert not Path("/tmp/absolute_escape.txt").exists()
    assert not (target / "wavs" / "link.wav").exists()
    assert not (target / ljspeech.EXTRACTED_MARKER).exists()  # a refused archive is never marked as extracted


def test_extract_is_skipped_once_done_and_download_once_present(fake_archive, tmp_path, capsys):
    dataset = ljspeech.extract(fake_archive, tmp_path / "LJ")
    (dataset / "wavs" / "LJ001-0001.wav").write_bytes(b"kept")
    ljspeech.extract(fake_archive, dataset)
    assert (dataset / "wavs" / "LJ001-0001.wav").read_bytes() == b"kept"
    assert "already extracted" in capsys.readouterr().out

    copy = ljspeech.download(tmp_path / "downloads" / "LJSpeech-1.1.tar.bz2", url=fake_archive.as_uri())
    assert copy.read_bytes() == fake_archive.read_bytes()
    assert not copy.with_name(copy.name + ".part").exists()
    ljspeech.download(copy, url="file:///nonexistent/never/fetched.tar.bz2")  # present: not fetched again
    assert "exists, skipping" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match=r"download of file:///nonexistent/x.tar.bz2 failed"):
        ljspeech.download(tmp_path / "other.tar.bz2", url="file:///nonexistent/x.tar.bz2")
    assert not (tmp_path / "other.tar.bz2").exists()


# ---------------------------------------------------------------------------------------------------------------
# scripts/prepare_dataset.sh


def run_script(*args, env_extra=None, cwd=None):
    import os
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env_extra or {}))
    return subprocess.run(["bash", str(PREPARE_DATASET), *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


@pytest.mark.parametrize("script", ["prepare_dataset.sh", "prepare_mels.sh"])
def test_shell_scripts_parse(script):
    result = subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--synthetic", "--num-utterances"], "--num-utterances needs a value"),
    (["--voice", "en-gb"], "--voice only applies with --synthetic"),
    (["--stage", "two"], "whole numbers, got 'two'"),
    (["stray"], "unknown option 'stray'"),
])
def test_prepare_dataset_rejects_bad_options(args, message):
    result = run_script(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


@pytest.mark.slow
def test_prepare_dataset_synthetic_builds_the_same_corpus_as_the_module(tmp_path):
    build_corpus(tmp_path / "module", tmp_path / "module" / "filelists", num_utterances=5, seed=7)
    result = run_script("--synthetic", "--num-utterances", "5", "--seed", "7", "--data-dir", str(tmp_path / "sh"),
                        "--filelists-dir", str(tmp_path / "sh" / "filelists"))
    assert result.returncode == 0, result.stderr
    assert "stage 1: synthetic corpus" in result.stdout
    assert corpus_files(tmp_path / "sh", tmp_path / "sh" / "filelists") == \
        corpus_files(tmp_path / "module", tmp_path / "module" / "filelists")


@pytest.mark.slow
def test_prepare_dataset_ljspeech_stages_are_selectable(fake_archive, tmp_path):
    env = {"DATA_DIR": str(tmp_path / "data" / "LJSpeech-1.1"), "FILELISTS_DIR": str(tmp_path / "lists"),
           "ARCHIVE": str(fake_archive), "LJSPEECH_URL": "file:///nonexistent/never/fetched.tar.bz2"}
    # Stage 3 alone, before anything is extracted: only the filelists stage runs, and it says what is missing.
    result = run_script("--stage", "3", "--stop-stage", "3", env_extra=env)
    assert result.returncode != 0 and "metadata.csv not found" in result.stderr
    assert "stage 1" not in result.stdout and "stage 2" not in result.stdout
    # Stages 1-2: the archive is there, so nothing is downloaded; it is extracted; no filelists yet.
    result = run_script("--stop-stage", "2", env_extra=env)
    assert result.returncode == 0, result.stderr
    assert "exists, skipping" in result.stdout
    assert (tmp_path / "data" / "LJSpeech-1.1" / "wavs" / "LJ002-0002.wav").is_file()
    assert not (tmp_path / "lists").exists()
    # Stage 3 from the command line's --data-dir/--filelists-dir.
    result = run_script("--stage", "3", "--data-dir", env["DATA_DIR"], "--filelists-dir", str(tmp_path / "other"))
    assert result.returncode == 0, result.stderr
    assert len(read_rows(tmp_path / "other" / "ljs_audio_text_train_filelist.txt")) == 6
    assert len(read_rows(tmp_path / "other" / "ljs_mel_text_test_filelist.txt")) == 1
