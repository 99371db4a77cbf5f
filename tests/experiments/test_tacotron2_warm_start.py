"""experiments/tacotron2_warm_start/warm_start_experiment.sh: QUICK=1 runs every stage end to end (a base model, the
new voice's corpus, a warm-started and a from-scratch run, synthesis, scoring, the report); the full run's train.py
command lines are accepted by train.py's parser with the demo's preset; warm_start_report.py reads the logs."""
import contextlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.tacotron2_warm_start import warm_start_report

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "tacotron2_warm_start" / "warm_start_experiment.sh"


def run_script(*arguments, **environment):
    return subprocess.run(["bash", str(SCRIPT), *arguments], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHON": sys.executable, **environment})


@pytest.mark.slow
def test_quick_run_goes_through_every_stage_and_writes_the_report(recognizer_checkpoint, tmp_path):
    completed = run_script(QUICK="1", DATA_DIR=str(tmp_path / "data"), OUTPUT_DIR=str(tmp_path / "out"),
                           ASR_CHECKPOINT=str(recognizer_checkpoint))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    base = tmp_path / "out" / "base" / "checkpoint_Tacotron2_last.pt"
    assert f"warm start from {base}: fresh optimizer at step 0; 0 weight(s) not loaded" in completed.stdout
    assert (tmp_path / "data" / ".warm_start_corpus").read_text().split() == ["--voice", "en-us+f3",
                                                                              "--num-utterances", "12"]
    report = json.loads((tmp_path / "out" / "warm_start_report.json").read_text())
    assert report["voice"] == "en-us+f3" and report["epochs_budget"] == 2 and report["threshold"] == 0.7
    assert [run["run"] for run in report["runs"]] == ["warm_start", "scratch"]
    for run in report["runs"]:
        assert run["epochs"] == 2 and len(run["alignment_scores"]) == 2
        assert all(0.0 <= score <= 1.0 for score in run["alignment_scores"])
        assert run["train_seconds"] >= 0
        assert 0.0 <= run["test_sentences"]["cer"] and run["test_sentences"]["files"] == 1
        phrases = [line for line in (ROOT / "phrases" / "phrase.txt").read_text().splitlines() if line.strip()]
        assert run["phrases"]["files"] == len(phrases)
    assert report["espeak_ceiling_cer_test_sentences"] is not None
    assert "| warm_start | 2 |" in completed.stdout and "| scratch | 2 |" in completed.stdout


def test_the_full_runs_train_py_command_lines_are_the_demos_with_and_without_warm_start(tmp_path):
    import train
    from common.arguments import parse_args
    from common.registry import model_name_in

    base = tmp_path / "checkpoint_Tacotron2_last.pt"
    base.write_bytes(b"")  # stage 2 checks that it exists; DRY_RUN reads nothing
    completed = run_script("--stage", "2", "--stop-stage", "3", DRY_RUN="1", DEMO_CHECKPOINT=str(base))
    assert completed.returncode == 0, completed.stderr
    commands = [line for line in completed.stdout.splitlines() if " train.py " in line]
    assert len(commands) == 2
    parsed = []
    for command in commands:
        argv = shlex.split(command)
        argv = argv[argv.index("train.py") + 1:]
        with contextlib.chdir(ROOT):
            parsed.append(parse_args(train.build_parser(model_name_in(argv)), argv))
    warm, scratch = parsed
    assert warm.warm_start == str(base) and scratch.warm_start is None
    for args in parsed:
        assert args.epochs == 100 and args.training_files == "data/synthetic_en-us+f3/filelists/" \
                                                               "synthetic_audio_text_train.txt"
        assert args.text_cleaners == ["english_cleaners_arpabet"] and args.encoder_embedding_dim == 128  # the demo's
    assert {key: value for key, value in vars(warm).items() if key not in ("warm_start", "output")} == \
        {key: value for key, value in vars(scratch).items() if key not in ("warm_start", "output")}


def test_without_the_demos_model_the_full_run_stops_with_one_error_line(tmp_path):
    completed = run_script("--stop-stage", "0", DEMO_CHECKPOINT=str(tmp_path / "absent.pt"))
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        f"warm_start_experiment.sh: error: no base model at {tmp_path / 'absent.pt'}: run `make demo` first, or set "
        "DEMO_CHECKPOINT"]


def write_log(path, records):
    path.write_text("".join(f"DLLL {json.dumps(record)}\n" for record in records))


def test_the_report_counts_the_first_epoch_that_aligned(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    validation = {"type": "LOG", "data": {"val_loss": 3.0}}
    write_log(run / "nvlog.json", [
        {"type": "LOG", "step": [1], "data": {"train_loss": 5.0}},  # a training record: not a validation
        {**validation, "step": [1], "data": {"val_loss": 4.0, "alignment_score": 0.3}},
        {**validation, "step": [2, 10], "data": {"val_loss": 3.5, "alignment_score": 0.9}},  # mid-epoch: skipped
        {**validation, "step": [2], "data": {"val_loss": 3.0, "alignment_score": 0.71}},
        {**validation, "step": [3], "data": {"val_loss": 2.5, "alignment_score": 0.65}},
        {**validation, "step": [3], "data": {"val_loss": 2.4, "alignment_score": 0.8}},  # validated again on resume
    ])
    (run / "train_seconds").write_text("42\n")
    summary = warm_start_report.summarize_run("warm", run, 0.7)
    assert summary["first_epoch_aligned"] == 2 and summary["epochs"] == 3
    assert summary["alignment_scores"] == [0.3, 0.71, 0.8] and summary["final_val_loss"] == 2.4
    assert summary["train_seconds"] == 42 and summary["test_sentences"] is None
    assert warm_start_report.summarize_run("warm", run, 0.85)["first_epoch_aligned"] is None
    assert "| warm | 3 | not reached | 0.800 | 2.400 | 42 | - / - | - / - |" in warm_start_report.table(
        [warm_start_report.summarize_run("warm", run, 0.85)], 0.85)
