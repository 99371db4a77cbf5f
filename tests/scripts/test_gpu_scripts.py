"""The GPU scripts' mistakes end in one error line here too, on a machine without a GPU (their runs are
documented in tacotron2/RESULTS.md, wav2vec2/RESULTS.md and nvwavenet/RESULTS.md)."""
import os
import subprocess
import sys

import pytest
import torch

from tests.families import ROOT


def run(*command, **environment):
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, **environment})


def test_gpu_tts_run_refuses_unknown_arguments_and_a_scoring_stage_without_a_recognizer(tmp_path):
    unknown = run("bash", "scripts/tacotron2/gpu_tts_run.sh", "--epochs", "3", OUTPUT_DIR=str(tmp_path))
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == "gpu_tts_run.sh: error: unknown arguments: --epochs 3 (only --stage and --stop-stage)"
    no_asr = run("bash", "scripts/tacotron2/gpu_tts_run.sh", "--stage", "4", OUTPUT_DIR=str(tmp_path), ASR="")
    assert no_asr.returncode == 2
    assert "set ASR to the recognizer's checkpoint" in no_asr.stderr
    bad_stage = run("bash", "scripts/tacotron2/gpu_tts_run.sh", "--stage", "5", OUTPUT_DIR=str(tmp_path))
    assert bad_stage.returncode == 2 and "--stage takes a stage from 1 to 4, got '5'" in bad_stage.stderr


def test_gpu_tts_run_checks_a_tacotron2_trained_elsewhere_before_it_starts(tmp_path):
    missing = run("bash", "scripts/tacotron2/gpu_tts_run.sh", OUTPUT_DIR=str(tmp_path),
                  TACOTRON2_CHECKPOINT=str(tmp_path / "missing.pt"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"gpu_tts_run.sh: error: TACOTRON2_CHECKPOINT={tmp_path / 'missing.pt'}: no such file"
    (tmp_path / "tacotron2.pt").write_bytes(b"")
    nothing = run("bash", "scripts/tacotron2/gpu_tts_run.sh", OUTPUT_DIR=str(tmp_path), HIFIGAN_SECONDS="0",
                  TACOTRON2_CHECKPOINT=str(tmp_path / "tacotron2.pt"))
    assert nothing.returncode == 2 and "leaves nothing to train" in nothing.stderr
    not_a_number = run("bash", "scripts/tacotron2/gpu_tts_run.sh", OUTPUT_DIR=str(tmp_path), HIFIGAN_SECONDS="5m")
    assert not_a_number.returncode == 2 and "HIFIGAN_SECONDS must be a whole number of seconds, got '5m'" in \
        not_a_number.stderr


def test_gpu_checks_names_an_unknown_stage(tmp_path):
    result = run("bash", "scripts/gpu_checks.sh", "graph", LOG_DIR=str(tmp_path / "logs"),
                 WORK_DIR=str(tmp_path / "work"))
    assert result.returncode == 2
    assert "unknown stage 'graph'" in result.stderr and "graphs wav2vec2 ncu tts" in result.stderr


def test_benchmark_pipeline_refuses_cuda_graphs_on_the_cpu():
    result = run(sys.executable, "-m", "scripts.benchmark_pipeline", "--cpu", "--decoder", "cuda-graphs")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith(
        "error: --decoder cuda-graphs needs a CUDA GPU: drop --cpu, or choose eager or fast")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_profile_kernels_says_why_it_cannot_run_without_cuda():
    result = run(sys.executable, "-m", "scripts.nvwavenet.profile_kernels", "--variant", "persistent")
    assert result.returncode == 2
    assert result.stderr.startswith("error: profile_kernels needs the CUDA extension: ")
    assert "Traceback" not in result.stderr


def test_the_nan_check_summary_counts_the_non_finite_losses(tmp_path):
    from common.logger import RunLogger
    from scripts.gpu_checks_report import nan_check

    logger = RunLogger(tmp_path / "nan_waveglow_nvlog.json")
    for batch, loss in enumerate([1.0, float("nan"), 0.8], start=1):
        logger.log([1, batch], {"train_loss": loss, "skipped_steps": int(batch >= 2)}, echo=False)
    logger.close()
    summary = nan_check(tmp_path)
    assert "| iterations logged | 3 |" in summary
    assert "| non-finite train losses | 1 (iterations [2]) |" in summary
