"""experiments/hifigan_reference_speed at its smallest: the project's HiFi-GAN v2 generator and the reference's
equations (tests/hifigan/reference_generator.py) on folded weights agree, and both are timed."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_comparison_agrees_with_the_reference_and_times_both():
    module = "experiments.hifigan_reference_speed.compare_hifigan_reference_speed"
    printed = subprocess.run([sys.executable, "-m", module, "--presets", "v2", "--frames", "20", "--repeats", "1"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120, check=True).stdout
    row = re.search(r"^v2\s+20\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.e+-]+)$", printed, re.M)
    assert row is not None, printed
    assert float(row.group(1)) > 0 and float(row.group(2)) > 0 and float(row.group(5)) < 1e-5
