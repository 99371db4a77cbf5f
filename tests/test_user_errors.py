"""train.py and inference.py, run as a user runs them: a mistake in what was given ends in one `error: ...` line on
stderr that names the file or flag and what to do, exit code 2, and no traceback."""
import os
import subprocess
import sys

import pytest
import torch

from common.checkpoint import save_checkpoint
from tests.conftest import REPO_ROOT

TINY_TACOTRON2 = ["--symbols-embedding-dim", "16", "--encoder-embedding-dim", "16", "--encoder-n-convolutions", "1",
                  "--attention-rnn-dim", "16", "--decoder-rnn-dim", "16", "--prenet-dim", "8", "--attention-dim", "8",
                  "--postnet-embedding-dim", "8", "--postnet-n-convolutions", "1"]


def run_entry_point(script: str, *arguments) -> str:
    """Run the script; assert the user-error contract and return the error line."""
    completed = subprocess.run([sys.executable, str(REPO_ROOT / script), *map(str, arguments)], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
    return lines[0]


@pytest.fixture()
def phrases(tmp_path):
    path = tmp_path / "phrases.txt"
    path.write_text("Hello.\n")
    return path


def test_inference_with_a_truncated_checkpoint(tmp_path, phrases):
    whole = tmp_path / "whole.pt"
    torch.save({"state_dict": {"weight": torch.zeros(1000)}}, whole)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(whole.read_bytes()[:500])
    line = run_entry_point("inference.py", "-i", phrases, "-o", tmp_path / "out", "--tacotron2", truncated)
    assert line.startswith(f"error: cannot read checkpoint --tacotron2 {truncated}: the file is damaged or truncated")
    assert line.endswith("copy or download it again, or give another file")
    assert "weights_only" not in line  # torch's advice to load unsafely is wrong for a damaged file


def test_inference_with_another_models_checkpoint(tmp_path, phrases):
    waveglow = tmp_path / "checkpoint_WaveGlow_9.pt"
    save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, waveglow)
    line = run_entry_point("inference.py", "-i", phrases, "-o", tmp_path / "out", "--tacotron2", waveglow)
    assert line == (f"error: checkpoint --tacotron2 {waveglow} is a WaveGlow checkpoint, expected Tacotron2; "
                    "give a Tacotron2 checkpoint there")


def test_inference_with_a_missing_vocoder_checkpoint_in_mel_to_wav_mode(tmp_path):
    mel = tmp_path / "mel_1.pt"
    torch.save(torch.zeros(80, 4), mel)
    line = run_entry_point("inference.py", "-m", "WaveGlow", "-i", mel, "-o", tmp_path / "out",
                           "--waveglow", tmp_path / "absent.pt")
    assert line == f"error: checkpoint not found: --waveglow {tmp_path / 'absent.pt'}"


def test_train_with_a_missing_filelist(tmp_path):
    line = run_entry_point("train.py", "-m", "Tacotron2", "-o", tmp_path / "run", "-lr", "1e-3", "-bs", "2",
                           "--epochs", "1", "--cpu", "--num-workers", "0", "--training-files", tmp_path / "train.txt",
                           "--validation-files", tmp_path / "val.txt", *TINY_TACOTRON2)
    assert line.startswith(f"error: filelist not found: {tmp_path / 'train.txt'}; check the path")


def test_train_with_a_config_file_that_is_not_json(tmp_path):
    config = tmp_path / "preset.json"
    config.write_text("{epochs: 3}")
    line = run_entry_point("train.py", "-m", "Tacotron2", "--config-file", config, "-o", tmp_path / "run")
    assert line.startswith(f"error: --config-file {config} is not valid JSON")
