"""Tacotron 2 through train.py on the synthetic corpus (tests/test_families.py has its pinned losses, exact resume
and DDP run): resume from a mid-epoch checkpoint is exact, and bad input fails with a clear error."""
import shutil

import pytest
import torch

import train
from common.errors import UserError
from common.logger import read_dllogger_file
from tests.tacotron2.tiny_tacotron2 import iteration_losses, train_args


def epoch_records(log_file):
    return [r["data"] for r in read_dllogger_file(log_file)
            if r["type"] == "LOG" and isinstance(r["step"], list) and len(r["step"]) == 1 and "train_loss" in r["data"]]


@pytest.mark.slow
def test_mid_epoch_checkpoint_resumes_exactly(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(train_args(synthetic_corpus, tmp_path / "straight", "--epochs", "2"))
    train.main(train_args(synthetic_corpus, tmp_path / "stopped", "--epochs", "2", "--iters-per-checkpoint", "3"))
    mid_epoch = tmp_path / "stopped" / "checkpoint_Tacotron2_1_3.pt"
    assert mid_epoch.exists()
    shutil.rmtree(tmp_path / "resumed", ignore_errors=True)
    train.main(train_args(synthetic_corpus, tmp_path / "resumed", "--epochs", "2", "--checkpoint-path",
                          str(mid_epoch)))
    straight = iteration_losses(tmp_path / "straight" / "nvlog.json")
    resumed = iteration_losses(tmp_path / "resumed" / "nvlog.json")
    assert resumed[0][0] == (1, 4)
    assert resumed == straight[3:]
    assert epoch_records(tmp_path / "resumed" / "nvlog.json")[-1]["train_loss"] == pytest.approx(
        epoch_records(tmp_path / "straight" / "nvlog.json")[-1]["train_loss"], rel=1e-12)


def test_unknown_flag_is_an_error(synthetic_corpus, tmp_path, capsys):
    with pytest.raises(SystemExit):
        train.main(train_args(synthetic_corpus, tmp_path / "run", "--learning-rat", "1"))
    assert "unrecognized arguments: --learning-rat" in capsys.readouterr().err


def test_config_file_supplies_defaults_and_rejects_unknown_keys(synthetic_corpus, tmp_path, capsys):
    config = tmp_path / "preset.json"
    config.write_text('{"training": {"epochs": 7, "learning-rate": 0.01}, "batch_size": 4}')
    args = ["-m", "Tacotron2", "-o", str(tmp_path / "x"), "--config-file", str(config), "--dry-run"]
    train.main(args)
    printed = capsys.readouterr().out
    assert '"epochs": 7' in printed and '"learning_rate": 0.01' in printed
    train.main(args + ["--epochs", "9"])
    assert '"epochs": 9' in capsys.readouterr().out
    config.write_text('{"epochz": 7}')
    with pytest.raises(UserError, match="preset.json: unknown setting 'epochz'"):
        train.main(args)


def write_filelist(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("line, message", [
    ("wavs/missing.wav|Hello there.", r"bad.txt:2: audio file not found: .*missing.wav"),
    ("wavs/a.wav|too|many", r"bad.txt:2: malformed line"),
    ("wavs/a.wav|", r"bad.txt:2: empty transcript"),
    ("wavs/a.wav|   ", r"bad.txt:2: empty transcript"),
])


def test_bad_filelist_lines_name_the_file_and_line(synthetic_corpus, tmp_path, line, message):
    good = synthetic_corpus.train_filelist.read_text().splitlines()[0]
    filelist = write_filelist(tmp_path / "bad.txt", [good, line])
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        train.main(train_args(synthetic_corpus, tmp_path / "run", "--training-files", str(filelist),
                              "-bs", "1"))


def test_wrong_sampling_rate_names_the_file(synthetic_corpus, tmp_path):
    import numpy as np
    import soundfile

    soundfile.write(tmp_path / "fast.wav", np.zeros(4000, dtype=np.int16), 16000, subtype="PCM_16")
    filelist = write_filelist(tmp_path / "bad.txt", [f"{tmp_path / 'fast.wav'}|Hello there."] * 4)
    with pytest.raises(ValueError, match=r"bad.txt:\d: .*fast.wav: sampling rate is 16000 Hz, expected 22050"):
        train.main(train_args(synthetic_corpus, tmp_path / "run", "--training-files", str(filelist)))


def test_resuming_from_another_models_checkpoint_is_refused(synthetic_corpus, tmp_path):
    from common.checkpoint import save_checkpoint

    save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, tmp_path / "waveglow.pt")
    with pytest.raises(ValueError, match="is a WaveGlow checkpoint, expected Tacotron2"):
        train.main(train_args(synthetic_corpus, tmp_path / "run", "--checkpoint-path",
                              str(tmp_path / "waveglow.pt")))


@pytest.mark.slow
def test_resuming_with_other_model_flags_is_refused(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(train_args(synthetic_corpus, tmp_path / "run", "--epochs", "1"))
    with pytest.raises(ValueError, match=r"model flags differ .*prenet_dim"):
        train.main(train_args(synthetic_corpus, tmp_path / "run", "--epochs", "2", "--resume-from-last",
                              "--prenet-dim", "16"))


@pytest.mark.slow
def test_tensorboard_gets_losses_learning_rate_images_and_audio(synthetic_corpus, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    torch.set_num_threads(1)
    train.main(train_args(synthetic_corpus, tmp_path / "run", "--epochs", "1", "--tensorboard-dir",
                          str(tmp_path / "tb")))
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"images": 0, "audio": 0}).Reload()
    tags = events.Tags()
    assert {"train/train_loss", "train/lr", "train/train_gate_loss", "validation/val_loss",
            "validation/alignment_score"} <= set(tags["scalars"])
    assert {"validation/alignment", "validation/mel", "validation/mel_target"} <= set(tags["images"])
    assert "validation/synthesis_griffin_lim" in tags["audio"]
