"""scripts/benchmark_training.py: the throughput of a tiny model's training steps, --profile's table, --compare."""
from __future__ import annotations

import json
import sys

import pytest

from scripts import benchmark_training
from tests.families import run_args


def test_reports_throughput_and_profiles_the_steps(synthetic_corpus, tmp_path, monkeypatch, capsys):
    arguments = run_args("Tacotron2", synthetic_corpus, tmp_path)
    monkeypatch.setattr(sys, "argv", ["benchmark_training", "--warmup", "1", "--iterations", "2", "--profile", "2",
                                      "--json", str(tmp_path / "result.json"), "--", *arguments, "--epochs", "1"])
    benchmark_training.main()
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["model"] == "Tacotron2" and result["iterations"] == 2 and result["mel_frames_per_sec"] > 0
    printed = capsys.readouterr().out
    assert "== torch.profiler: 2 training steps, self time" in printed
    table = printed.split("== torch.profiler")[1]
    assert "Self CPU" in table and "aten::" in table


def test_compare_times_the_command_line_with_the_flags_added_step_by_step(synthetic_corpus, tmp_path, monkeypatch):
    arguments = run_args("Tacotron2", synthetic_corpus, tmp_path, batch_size=4)
    monkeypatch.setattr(sys, "argv", ["benchmark_training", "--warmup", "1", "--iterations", "2", "--compare", "-bs 2",
                                      "--json", str(tmp_path / "result.json"), "--", *arguments, "--epochs", "1"])
    benchmark_training.main()
    result = json.loads((tmp_path / "result.json").read_text())
    baseline, compared = result["baseline"], result["compared"]
    assert baseline["iterations"] == compared["iterations"] == 2 and compared["flags"] == "-bs 2"
    assert (baseline["batch_size"], compared["batch_size"]) == (4, 2)  # the added flag wins
    assert compared["mel_frames_per_step"] < baseline["mel_frames_per_step"]
    assert result["speed_up"] == pytest.approx(baseline["iteration_time_mean"] / compared["iteration_time_mean"])


def test_compare_gives_both_loss_curves_of_one_seed(synthetic_corpus, tmp_path, monkeypatch):
    """--compare with a flag that changes nothing the loss sees (--val-interval-epochs) gives the same curve twice: the
    two models start alike and train on the same batches. With --bf16 the curves part by rounding, not by much."""
    arguments = run_args("Tacotron2", synthetic_corpus, tmp_path, batch_size=4)
    results = {}
    for flags in ("--val-interval-epochs 5", "--bf16"):
        monkeypatch.setattr(sys, "argv", ["benchmark_training", "--warmup", "1", "--iterations", "3",
                                          f"--compare={flags}", "--json", str(tmp_path / "result.json"), "--",
                                          *arguments, "--epochs", "1"])
        benchmark_training.main()
        results[flags] = json.loads((tmp_path / "result.json").read_text())
    same = results["--val-interval-epochs 5"]
    assert len(same["baseline"]["loss_curve"]) == 4  # the warm-up step and the 3 timed ones
    assert same["compared"]["loss_curve"] == same["baseline"]["loss_curve"]
    assert same["last_tenth_loss_relative_difference"] == 0.0
    bf16 = results["--bf16"]
    assert bf16["compared"]["precision"] == "bf16" and bf16["baseline"]["loss_curve"] == same["baseline"]["loss_curve"]
    assert 0 < abs(bf16["last_tenth_loss_relative_difference"]) < 0.05


def test_a_negative_profile_count_is_an_error(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["benchmark_training", "--profile", "-1", "--", "-m", "Tacotron2"])
    with pytest.raises(SystemExit) as stopped:
        benchmark_training.main()
    assert stopped.value.code == 2
    assert "error: --profile must be 0 (off) or a number of steps, got -1" in capsys.readouterr().err


def test_profile_and_compare_together_are_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["benchmark_training", "--profile", "2", "--compare", "-bs 2", "--", "-m",
                                      "Tacotron2"])
    with pytest.raises(SystemExit) as stopped:
        benchmark_training.main()
    assert stopped.value.code == 2
    assert "error: --profile and --compare are separate runs: give one of them" in capsys.readouterr().err
