"""experiments/waveglow_onnx_speed/compare_onnx_speed.py: eager WaveGlow and its ONNX export timed on the same
shapes."""
from __future__ import annotations

import pytest
import torch

from common.layers import remove_weight_norm
from experiments.waveglow_onnx_speed import compare_onnx_speed
from waveglow.model import WaveGlow

pytest.importorskip("onnxruntime")


@pytest.mark.slow
def test_times_each_shape_on_both_runtimes():
    torch.manual_seed(0)
    model = WaveGlow(flows=4, early_every=2, early_size=2, wn_channels=8, wn_layers=2).eval()
    remove_weight_norm(model)
    results = compare_onnx_speed.compare(model, [(1, 4), (2, 6)], threads=1, repeats=1)
    assert [(row["batch"], row["frames"]) for row in results] == [(1, 4), (2, 6)]
    assert all(row["eager_seconds"] > 0 and row["onnxruntime_seconds"] > 0 for row in results)
    lines = compare_onnx_speed.report_lines(results, "WaveGlow-8", model.hop_length, threads=1, repeats=1)
    assert lines[0] == "WaveGlow-8, random weights, fp32, 1 threads, best of 1"
    assert lines[1].startswith("batch 1 x 4 frames (0.05 s of audio): eager ")
    ratio = results[1]["eager_seconds"] / results[1]["onnxruntime_seconds"]
    assert lines[2].startswith("batch 2 x 6 frames (0.14 s of audio): eager ")
    assert lines[2].endswith(f"eager / onnxruntime {ratio:.2f}")


@pytest.mark.parametrize("shape", ["4", "0x86", "1x1", "ax86"])
def test_a_malformed_shape_is_refused(shape, capsys):
    with pytest.raises(SystemExit) as stopped:
        compare_onnx_speed.main(["--shapes", shape])
    assert stopped.value.code == 2
    assert "--shapes" in capsys.readouterr().err
