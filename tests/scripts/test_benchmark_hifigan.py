"""scripts/hifigan/benchmark_hifigan (tiny sizes only: a smoke test of the numbers' bookkeeping, not a measurement)
and the HiFi-GAN demo's report (HiFi-GAN vs Griffin-Lim mel L1)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.audio import AudioParams, MelSpectrogram, load_wav
from common.filelist import read_filelist
from scripts.hifigan import benchmark_hifigan, report_hifigan_demo
from tests.hifigan.tiny_hifigan import save_our_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_rows_and_their_arithmetic(tmp_path):
    results = benchmark_hifigan.main(["--presets", "v2", "--batch-sizes", "1", "2", "--frames", "6", "--repeats", "3",
                                      "--warmup", "0", "--cpu", "--threads", "1", "--with-weight-norm",
                                      "--json", str(tmp_path / "b.json")])
    assert [(r["batch_size"], r["weight_norm"]) for r in results] == [(1, "removed"), (1, "kept"), (2, "removed"),
                                                                      (2, "kept")]
    for record in results:
        samples = record["batch_size"] * 6 * 256
        assert record["repeats"] == 3
        assert record["samples_per_sec"] == pytest.approx(samples / record["latency_mean"])
        assert record["real_time_factor"] == pytest.approx(samples / 22050 / record["latency_mean"])
        assert record["latency_p50"] <= record["latency_p90"] <= record["latency_p99"]
    assert json.loads((tmp_path / "b.json").read_text())["hifigan_inference"] == results


@pytest.mark.slow
def test_benchmark_script_quick_inference_stage(tmp_path):
    completed = subprocess.run(["bash", "scripts/hifigan/benchmark_hifigan.sh", "--quick", "--threads", "1"], cwd=ROOT,
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PYTHON": sys.executable, "STAGES": "inference",
                                    "OUTPUT_DIR": str(tmp_path), "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "samples/s" in completed.stdout
    (record,) = json.loads((tmp_path / "hifigan_inference.json").read_text())["hifigan_inference"]
    assert (record["preset"], record["batch_size"], record["mel_frames"]) == ("v2", 1, 100)


def test_demo_report_compares_with_griffin_lim_on_the_same_files(synthetic_corpus, tmp_path):
    generator, _ = save_our_checkpoint(tmp_path / "h.pt")
    report = report_hifigan_demo.main(["--hifigan", str(tmp_path / "h.pt"), "-d", str(synthetic_corpus.dataset_dir),
                                       "--filelists", str(synthetic_corpus.val_filelist), "--griffin-lim-iters", "2",
                                       "--json", str(tmp_path / "r.json")])
    (entry,) = read_filelist(synthetic_corpus.val_filelist, synthetic_corpus.dataset_dir)
    mel_spectrogram = MelSpectrogram(AudioParams())
    mel = mel_spectrogram(load_wav(entry.path, 22050))
    with torch.no_grad():
        vocoded = mel_spectrogram(generator(mel)[0, 0])  # T * 256 samples: frames 0..T, centred as the input's
    expected = (vocoded[..., :mel.size(-1)] - mel).abs().mean()
    assert report["hifigan_mel_l1"] == pytest.approx(float(expected), rel=1e-4)
    assert report["files"] == 1 and report["griffin_lim_mel_l1"] > 0
    assert report["better"] == ("HiFi-GAN" if report["hifigan_mel_l1"] < report["griffin_lim_mel_l1"]
                                else "Griffin-Lim")
    assert json.loads((tmp_path / "r.json").read_text())["per_file"][0]["file"] == str(entry.path)
