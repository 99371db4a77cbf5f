"""experiments/griffin_lim_phase/phase_retrieval.py: eSpeak NG's own STFT magnitudes through fast Griffin-Lim from
each phase start and iteration count. Each row's audio is griffin_lim_phase's, its spectral convergence is recomputed
here, and Phase Gradient Heap Integration starts closer than random phases."""
import json

import numpy as np
import pytest
import soundfile
import torch

from common.audio import AudioParams, MelSpectrogram, griffin_lim_phase, load_wav
from common.text.cleaners import english_cleaners
from experiments.griffin_lim_phase import phase_retrieval
from scripts.data.espeak import synthesize


def test_each_row_is_griffin_lim_phase_from_its_start_and_pghi_starts_closer(tmp_path):
    torch.set_num_threads(1)
    lines = ["the quick brown fox jumps over the lazy dog", "she sells sea shells by the shore"]
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(lines) + "\n")
    output = tmp_path / "out"
    report = phase_retrieval.main(["--judge", "moonshine", "--texts", str(texts), "--iterations", "0", "4",
                                   "-o", str(output), "--quiet"])
    assert report == json.loads((output / "phase_retrieval.json").read_text())
    rows = {(row["phase_init"], row["iterations"]): row for row in report["rows"]}
    assert list(rows) == [(None, None), ("random", 0), ("random", 4), ("pghi", 0), ("pghi", 4)]

    # The first row is eSpeak NG itself, at the ceiling's voice and rate.
    samples, rate = synthesize(english_cleaners(lines[1]), voice="en-us", words_per_minute=175)
    recorded, recorded_rate = soundfile.read(rows[None, None]["files"][1]["wav"])
    assert recorded_rate == rate and np.abs(recorded - samples).max() <= 1.01 / 32768

    mel_spectrogram = MelSpectrogram()
    for (phase_init, iterations), row in list(rows.items())[1:]:
        convergences = []
        for file in row["files"]:
            magnitude = mel_spectrogram.magnitude(load_wav(file["wav"].replace(f"{phase_init}_{iterations}", "espeak"),
                                                           22050).unsqueeze(0))
            expected = griffin_lim_phase(magnitude, AudioParams(), iterations, phase_init=phase_init)
            written = load_wav(file["wav"], 22050)
            torch.testing.assert_close(written, expected[0], atol=1.01 / 32768, rtol=0)
            convergences.append(phase_retrieval.spectral_convergence_db(expected, magnitude, mel_spectrogram))
        assert row["spectral_convergence_db"] == pytest.approx(np.mean(convergences), abs=1e-6)
        assert row["seconds"] > 0 and 0 <= row["cer"] <= 100 and len(row["files"]) == 2
    # PGHI alone is closer than random phases after 4 iterations; iterating brings either closer.
    assert rows["pghi", 0]["spectral_convergence_db"] < rows["random", 4]["spectral_convergence_db"]
    assert rows["random", 4]["spectral_convergence_db"] < rows["random", 0]["spectral_convergence_db"] - 3
    assert rows["pghi", 4]["spectral_convergence_db"] < rows["pghi", 0]["spectral_convergence_db"]
