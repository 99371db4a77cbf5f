"""WaveNet through train.py on the synthetic corpus: the loss falls to pinned values and stop-and-resume reproduces
the uninterrupted loss curve exactly."""
import pytest
import torch

import train
from common.logger import read_dllogger_file
from tests.nvwavenet.test_vocoder import TINY_WAVENET

PINNED_WAVENET_EPOCH_LOSSES = [5.454670047760009, 5.382598781585694, 5.102499198913574]  # ln 256 = 5.545 at chance


def wavenet_args(corpus, output, *extra):
    return ["-m", "WaveNet", "-o", str(output), "-d", str(corpus.dataset_dir), "--training-files",
            str(corpus.train_filelist), "--validation-files", str(corpus.val_filelist), "-bs", "4", "--num-workers",
            "0", "--quiet", "--cpu", "-lr", "3e-3", "--seed", "2", *TINY_WAVENET, *extra]


def losses(log_file, depth):
    return [r["data"]["train_loss"] for r in read_dllogger_file(log_file)
            if isinstance(r["step"], list) and len(r["step"]) == depth and "train_loss" in r["data"]]


def test_wavenet_loss_falls_to_pinned_values_and_resume_is_exact(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(wavenet_args(synthetic_corpus, tmp_path / "straight", "--epochs", "3"))
    epoch_losses = losses(tmp_path / "straight" / "nvlog.json", 1)
    assert epoch_losses[0] > epoch_losses[1] > epoch_losses[2]
    assert epoch_losses == pytest.approx(PINNED_WAVENET_EPOCH_LOSSES, rel=1e-3, abs=1e-3)

    train.main(wavenet_args(synthetic_corpus, tmp_path / "stopped", "--epochs", "2"))
    train.main(wavenet_args(synthetic_corpus, tmp_path / "stopped", "--epochs", "3", "--resume-from-last"))
    assert losses(tmp_path / "stopped" / "nvlog.json", 2) == losses(tmp_path / "straight" / "nvlog.json", 2)
