"""scripts/wav2vec2/tune_lm.py: the development set it speaks (two renditions of each sentence, kept for a rerun),
the grid of language-model settings it decodes, and the best one it names."""
from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from common.errors import UserError
from scripts.wav2vec2.tune_lm import main as tune_lm


def test_the_grid_is_decoded_on_both_renditions_and_the_best_is_named(recognizer_checkpoint, synthetic_asr_corpus,
                                                                      tmp_path, capsys):
    flags = ["--checkpoint", str(recognizer_checkpoint), "--data", str(synthetic_asr_corpus.directory),
             "-o", str(tmp_path), "--num-sentences", "2", "--english-weights", "0", "0.5", "--lm-weights", "0.5",
             "--word-scores", "1", "3", "--min-letter-log-probs", "-5", "-8", "--beam-size", "4"]
    report = tune_lm(flags)
    wavs = {rendition: sorted((tmp_path / "dev" / rendition).glob("*.wav")) for rendition in ("plain", "accent")}
    assert [path.name for path in wavs["plain"]] == [path.name for path in wavs["accent"]] == ["01.wav", "02.wav"]
    plain, _ = soundfile.read(wavs["plain"][0])
    accented, _ = soundfile.read(wavs["accent"][0])
    assert len(plain) != len(accented) or not np.allclose(plain, accented)  # another voice, and a made-up accent
    settings = [(row["english_weight"], row["word_score"], row["min_letter_log_prob"]) for row in report["results"]]
    assert settings == [(english, score, least) for english in (0.0, 0.5) for score in (1.0, 3.0) for least in (-5, -8)]
    assert {row["lm_weight"] for row in report["results"]} == {0.5}
    assert report["best"] == min(report["results"], key=lambda row: row["both"]["cer"])
    for row in report["results"]:
        assert {"plain", "accent", "both"} <= set(row) and 0 <= row["both"]["cer"]
        low, high = sorted((row["plain"]["cer"], row["accent"]["cer"]))
        assert low - 1e-9 <= row["both"]["cer"] <= high + 1e-9  # both renditions' errors over both's letters
    assert json.loads((tmp_path / "tune_lm.json").read_text())["best"] == report["best"]
    printed = capsys.readouterr().out
    assert printed.count("<- best") == 1 and "greedy: CER plain" in printed
    # A rerun speaks nothing again: the same files, and the same figures.
    stamps = [path.stat().st_mtime_ns for path in wavs["plain"] + wavs["accent"]]
    again = tune_lm(flags)
    assert [path.stat().st_mtime_ns for path in wavs["plain"] + wavs["accent"]] == stamps
    assert again["results"] == report["results"]


def test_mistakes_are_named(recognizer_checkpoint, tmp_path):
    with pytest.raises(UserError, match="--data: .*train.wrd not found"):
        tune_lm(["--checkpoint", str(recognizer_checkpoint), "--data", str(tmp_path), "-o", str(tmp_path / "o")])
    with pytest.raises(UserError, match="--num-sentences must be at least 1, got 0"):
        tune_lm(["--checkpoint", str(recognizer_checkpoint), "--data", str(tmp_path), "-o", str(tmp_path / "o"),
                 "--num-sentences", "0"])
