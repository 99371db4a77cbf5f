"""experiments/wav2vec2_attention/benchmark_attention.py at --quick size: every batch shape of `make demo-asr` timed
with the attention in bf16 and in float32 (float32's output close to a float64 attention's), then whole training updates
each way on a tiny corpus; a missing corpus is named in one error line."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_attention_benchmark_quick(synthetic_asr_corpus):
    printed = subprocess.run([sys.executable, "-m", "experiments.wav2vec2_attention.benchmark_attention", "--quick",
                              "--training-steps", "1", "--data", str(synthetic_asr_corpus.directory)],
                             capture_output=True, text=True, cwd=ROOT, timeout=120, check=True).stdout
    rows = [line.split(" | ") for line in printed.splitlines() if " | forward" in line]
    assert [row[0] for row in rows] == ["12 x 77", "12 x 77", "8 x 120", "8 x 120", "5 x 185", "5 x 185",
                                        "3 x 323", "3 x 323", "all", "all"]
    for row in rows[:-2]:  # float32's largest difference from float64 is bf16's rounding of the output
        assert float(row[5].split(", ")[1]) < 8e-3
    updates = re.findall(r"attention in (bf16|float32): mean ([0-9.]+), median ([0-9.]+)", printed)
    assert [way for way, _, _ in updates] == ["bf16", "float32"]
    assert all(float(mean) > 0 for _, mean, _ in updates)


def test_attention_benchmark_names_a_missing_corpus(tmp_path):
    result = subprocess.run([sys.executable, "-m", "experiments.wav2vec2_attention.benchmark_attention", "--quick",
                             "--training-steps", "1", "--data", str(tmp_path)],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2
    assert f"error: --data {tmp_path} has no train.tsv" in result.stderr and "Traceback" not in result.stderr
