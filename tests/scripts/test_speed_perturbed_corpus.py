"""scripts/wav2vec2/speed_perturbed_corpus.py: a corpus copy whose training utterances are resampled."""
from __future__ import annotations

import numpy as np
import pytest
import soundfile

from common.errors import exit_on_user_error
from scripts.wav2vec2.speed_perturbed_corpus import main

RATE = 16000


def write_corpus(root, lengths=(8000, 12000, 16000, 9000)):
    """A fairseq-layout corpus: a 440 Hz tone per training utterance, one validation utterance."""
    (root / "wavs").mkdir(parents=True)
    rows = []
    for number, length in enumerate(lengths, start=1):
        tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(length) / RATE).astype(np.float32)
        soundfile.write(root / "wavs" / f"train-{number}.wav", tone, RATE, subtype="PCM_16")
        rows.append(f"wavs/train-{number}.wav\t{length}")
    (root / "train.tsv").write_text("\n".join([str(root), *rows]) + "\n")
    (root / "train.ltr").write_text("A B |\n" * len(lengths))
    soundfile.write(root / "wavs" / "valid-1.wav", np.zeros(4000, np.float32), RATE, subtype="PCM_16")
    (root / "valid.tsv").write_text(f"{root}\nwavs/valid-1.wav\t4000\n")
    (root / "dict.ltr.txt").write_text("A 1\nB 1\n| 1\n")


def manifest_rows(path):
    return [line.split("\t") for line in path.read_text().splitlines()[1:]]


def dominant_frequency(path):
    audio, rate = soundfile.read(path, dtype="float32")
    spectrum = np.abs(np.fft.rfft(audio))
    return np.fft.rfftfreq(len(audio), 1 / rate)[spectrum.argmax()]


def test_every_perturbed_utterance_moves_in_pitch_and_length_together(tmp_path, capsys):
    write_corpus(tmp_path / "src")
    main([str(tmp_path / "src"), str(tmp_path / "out"), "--share", "1", "--span", "0.2"])
    assert "4 training utterances speed-perturbed, 0 as they were" in capsys.readouterr().out
    rows = manifest_rows(tmp_path / "out" / "train.tsv")
    assert (tmp_path / "out" / "train.tsv").read_text().splitlines()[0] == str((tmp_path / "out").resolve())
    for (relative, samples), original in zip(rows, (8000, 12000, 16000, 9000)):
        audio, rate = soundfile.read(tmp_path / "out" / relative)
        speed = original / len(audio)
        assert rate == RATE and int(samples) == len(audio) and 0.8 <= speed <= 1.2
        # played faster, every frequency rises by the same factor the length shrinks by
        assert dominant_frequency(tmp_path / "out" / relative) == pytest.approx(440 * speed, rel=0.03)
    # the other splits and the labels are copied, still pointing at the source's wavs
    assert (tmp_path / "out" / "valid.tsv").read_text() == (tmp_path / "src" / "valid.tsv").read_text()
    assert (tmp_path / "out" / "train.ltr").read_text() == (tmp_path / "src" / "train.ltr").read_text()
    assert (tmp_path / "out" / "dict.ltr.txt").is_file()


def test_share_zero_copies_the_audio_and_a_seed_gives_the_same_bytes(tmp_path):
    write_corpus(tmp_path / "src")
    main([str(tmp_path / "src"), str(tmp_path / "none"), "--share", "0"])
    assert [samples for _, samples in manifest_rows(tmp_path / "none" / "train.tsv")] == ["8000", "12000", "16000",
                                                                                        "9000"]
    for run in ("a", "b"):
        main([str(tmp_path / "src"), str(tmp_path / run), "--share", "0.5", "--seed", "7"])
    for relative, _ in manifest_rows(tmp_path / "a" / "train.tsv"):
        assert (tmp_path / "a" / relative).read_bytes() == (tmp_path / "b" / relative).read_bytes()


@pytest.mark.parametrize("arguments, message", [
    (["--span", "1.5"], "--share must be in [0, 1] and --span in [0, 1), got 0.5 and 1.5"),
    (["--share", "-0.1"], "--share must be in [0, 1] and --span in [0, 1), got -0.1 and 0.15"),
])
def test_bad_values_are_one_error_line(tmp_path, capsys, arguments, message):
    write_corpus(tmp_path / "src")
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: main([str(tmp_path / "src"), str(tmp_path / "out"), *arguments]))
    assert stopped.value.code == 2 and capsys.readouterr().err == f"error: {message}\n"


def test_a_broken_manifest_line_is_named(tmp_path, capsys):
    write_corpus(tmp_path / "src")
    with open(tmp_path / "src" / "train.tsv", "a") as manifest:
        manifest.write("wavs/train-9.wav\n")
    with pytest.raises(SystemExit):
        exit_on_user_error(lambda: main([str(tmp_path / "src"), str(tmp_path / "out")]))
    assert f"{tmp_path / 'src' / 'train.tsv'}:6: expected 'path<TAB>samples'" in capsys.readouterr().err


def test_a_folder_without_a_training_manifest_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        exit_on_user_error(lambda: main([str(tmp_path / "empty"), str(tmp_path / "out")]))
    assert "train.tsv not found" in capsys.readouterr().err
