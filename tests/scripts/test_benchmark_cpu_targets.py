"""scripts/benchmark_cpu_targets (tiny models only: a smoke test of the script and its bookkeeping, not a
measurement): every target's eager path beside its fast paths, with the ratio, the GFLOP/s against the
measured peak, and a verdict against the ratio wanted."""
import json

import pytest

from common.cpu import native_bf16
from scripts import benchmark_cpu_targets


def test_quick_run_prints_every_target_with_its_ratio_and_verdict(tmp_path, capsys):
    rows = benchmark_cpu_targets.main(["--quick", "--no-compile", "--bf16", "off", "--threads", "1",
                                       "--json", str(tmp_path / "rows.json"), "--profile", "hifigan-infer"])
    printed = capsys.readouterr().out
    # the training steps' default is bf16 where bf16 is native: there fp32 is a path of its own, whatever --bf16 says
    training = ["eager", "default", *(["fp32"] if native_bf16() else [])]
    paths = {"tacotron2-infer": ["eager", "torchscript", "fast", "fast-fp16", "int8", "fast-int8"],
             "hifigan-infer": ["eager", "fast"],
             "wav2vec2-infer": ["eager", "int8"], "hifigan-train": training,
             "wav2vec2-pretrain": training,
             "waveglow-infer": ["eager", "fast"]}
    assert [(row["target"], row["path"]) for row in rows] == [
        (target, path) for target in benchmark_cpu_targets.TARGETS for path in paths[target]]
    saved = json.loads((tmp_path / "rows.json").read_text())
    assert saved["rows"] == rows and saved["peak_gflops"] > 0
    for row in rows:
        eager = next(r for r in rows if r["target"] == row["target"] and r["path"] == "eager")
        assert row["speedup"] == pytest.approx(eager["seconds_median"] / row["seconds_median"])
        assert row["flops"] > 0
        assert row["gflops_per_second"] == pytest.approx(row["flops"] / row["seconds_median"] / 1e9)
        assert row["share_of_peak"] == pytest.approx(row["gflops_per_second"] / saved["peak_gflops"])
        printed_row = next(line for line in printed.splitlines()
                           if line.split()[:1] == [row["target"]] and line.split()[2:3] == [row["path"]])
        assert f"{row['speedup']:.2f}x" in printed_row
    verdicts = saved["verdicts"]
    assert len(verdicts) == len(benchmark_cpu_targets.TARGETS) and all(v in printed for v in verdicts)
    assert verdicts[0].startswith("tacotron2-infer: best fast path ") and "wanted >= 2x" in verdicts[0]
    assert verdicts[3].startswith("hifigan-train: best fast path ")
    assert verdicts[-1].startswith("waveglow-infer: best ") and "of the" in verdicts[-1]
    for target, line in zip(benchmark_cpu_targets.TARGETS, verdicts):  # each default path against eager
        default = [row for row in rows if row["target"] == target
                   and row["path"] == benchmark_cpu_targets.DEFAULT_PATH[target]]
        if not default:  # the recognizer's bf16 default on a CPU with native bf16, not timed under --bf16 off
            assert benchmark_cpu_targets.DEFAULT_PATH[target] == "bf16" and "default path" not in line
            continue
        state = "at or above eager" if default[0]["speedup"] >= 1.0 else "BELOW EAGER"
        assert line.endswith(f"default path {default[0]['path']} {default[0]['speedup']:.2f}x eager: {state}")
    assert "fp32 matrix-product peak" in printed and "native bf16:" in printed
    assert "== profile: hifigan-infer fp32 eager" in printed and "Self CPU" in printed


@pytest.mark.slow
def test_the_compiled_path_reports_its_compile_time_apart(capsys):
    rows = benchmark_cpu_targets.main(["--quick", "--threads", "1", "--bf16", "off", "--targets", "hifigan-infer"])
    assert [row["path"] for row in rows] == ["eager", "fast", "compiled"]
    compiled = rows[2]
    assert compiled["compile_seconds"] > 0 and compiled["first_call_seconds"] > compiled["seconds_median"]
    assert "compile " in capsys.readouterr().out


def test_bf16_on_times_every_inference_target_s_default_path_under_autocast():
    rows = benchmark_cpu_targets.main(["--quick", "--no-compile", "--bf16", "on", "--threads", "1", "--repeats", "1",
                                       "--targets", "tacotron2-infer", "waveglow-infer", "hifigan-infer"])
    assert {row["target"] for row in rows if row["path"] == "bf16"} == {"tacotron2-infer", "waveglow-infer",
                                                                         "hifigan-infer"}
