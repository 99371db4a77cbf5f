"""scripts/benchmark_speed (tiny models only: a smoke test of the script and its bookkeeping, not a measurement)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import benchmark_speed

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_run_prints_every_target_eager_beside_fast(tmp_path):
    # --bf16 off: on a CPU with native bf16 the default adds bf16 rows (the next test covers them).
    completed = subprocess.run(["bash", "scripts/benchmark_speed.sh", "--quick", "--threads", "1", "--bf16", "off"],
                               cwd=ROOT, capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PYTHON": sys.executable, "OUTPUT_DIR": str(tmp_path),
                                    "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    rows = json.loads((tmp_path / "benchmark_speed.json").read_text())["rows"]
    assert [(row["target"], row["path"]) for row in rows] == [
        (target, path) for target in benchmark_speed.TARGETS for path in ("eager", "fast")]
    for row in rows:
        assert row["precision"] == "fp32" and row["repeats"] == 1
        assert row["seconds_min"] <= row["seconds_median"] <= row["seconds_max"]
        eager = next(r for r in rows if r["target"] == row["target"] and r["path"] == "eager")
        assert row["speedup"] == pytest.approx(eager["seconds_median"] / row["seconds_median"])
        assert f"{row['speedup']:.2f}x" in completed.stdout
    text_to_wav = [row for row in rows if row["target"] == "text-to-wav"]
    assert all(row["tacotron2_seconds_median"] + row["vocoder_seconds_median"] <= row["seconds_median"]
               for row in text_to_wav)


@pytest.mark.slow
def test_compiled_and_bf16_rows_and_the_profile(capsys):
    rows = benchmark_speed.main(["--quick", "--threads", "1", "--targets", "tacotron2-infer", "--compile",
                                 "--bf16", "on", "--profile", "tacotron2-infer"])
    compiled = rows[2]
    assert compiled["path"] == "compiled" and compiled["compile_seconds"] >= 0
    printed = capsys.readouterr().out
    assert "compile" in printed and "== profile: tacotron2-infer fp32 fast" in printed and "Self CPU" in printed
    assert [row["precision"] for row in rows] == ["fp32"] * 3  # bf16 rows are for training and text to wav

    rows = benchmark_speed.main(["--quick", "--threads", "1", "--targets", "tacotron2-train", "--no-compile",
                                 "--bf16", "on"])
    assert [(row["precision"], row["path"]) for row in rows] == [("fp32", "eager"), ("fp32", "fast"),
                                                                 ("bf16", "eager"), ("bf16", "fast")]
    assert rows[-1]["bf16_against_fp32"].startswith("loss ")
