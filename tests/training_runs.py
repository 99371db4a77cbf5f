"""Helpers for the tests that train through train.py: the losses a run logged, the house check that a short run
falls to pinned losses and that stop-and-resume reproduces the uninterrupted curve, and a one-epoch CPU run of any
model on a corpus (with a tiny Tacotron 2's flags), for the tests that need a trained checkpoint to vocode or speak.

Run as a module (`torchrun ... -m tests.training_runs <train.py flags>`) it is train.py whose processes also write
their final parameters to <output>/final_parameters_rank<r>.pt, so a test can compare the ranks' weights."""
import sys
from pathlib import Path
from typing import Callable

import pytest
import torch

import train
from common.distributed import run_entry_point
from common.logger import read_dllogger_file
from tests.families import PinnedLosses

# A Tacotron 2 small enough to train an epoch in seconds, for run_training (the WaveNet and mel inverter tests); not
# tests/conftest.py's TINY_TACOTRON2, which is wider, decodes 2 frames a step and is its tacotron2_checkpoint's.
TINY_TACOTRON2 = ["--symbols-embedding-dim", "16", "--encoder-embedding-dim", "16", "--encoder-n-convolutions", "1",
                  "--attention-rnn-dim", "16", "--decoder-rnn-dim", "16", "--prenet-dim", "8", "--attention-dim", "8",
                  "--attention-location-n-filters", "2", "--attention-location-kernel-size", "3",
                  "--postnet-embedding-dim", "8", "--postnet-n-convolutions", "1"]


def run_training(corpus, output, model, *extra):
    """One epoch of `model` on `corpus` (a SyntheticCorpus) through train.main, on the CPU, batch 4; its checkpoints
    go to `output`."""
    train.main(["-m", model, "-o", str(output), "-d", str(corpus.dataset_dir), "--training-files",
                str(corpus.train_filelist), "--validation-files", str(corpus.val_filelist), "-bs", "4",
                "--num-workers", "0", "--quiet", "--cpu", "-lr", "1e-3", "--epochs", "1", *extra])


def train_losses(log_file: Path, depth: int) -> list[float]:
    """train_loss of every epoch (depth 1: step [epoch]) or every iteration (depth 2: step [epoch, iteration])."""
    return [r["data"]["train_loss"] for r in read_dllogger_file(log_file)
            if isinstance(r["step"], list) and len(r["step"]) == depth and "train_loss" in r["data"]]


def untrained_checkpoint(argv: list[str], path: Path) -> Path:
    """A checkpoint of the model that train.py's `argv` would train, as it starts (what inference and fine-tuning read:
    the model config, weights, audio parameters and text front-end), written without training."""
    from common.arguments import audio_params_of
    from common.checkpoint import save_checkpoint
    from common.registry import get_recipe

    args = train.parse_run_args(argv)
    recipe = get_recipe(args.model_name)
    config = recipe.model_config(args)
    text = recipe.text_processor(args) if recipe.text_processor is not None else None
    save_checkpoint({"model_name": recipe.name, "model_config": config,
                     "state_dict": recipe.build_model(config).state_dict(),
                     "audio_params": audio_params_of(args).to_dict(),
                     "text": text.to_dict() if text is not None else None}, path)
    return path


def check_pinned_losses_and_exact_resume(run_args: Callable[..., list[str]], pinned: PinnedLosses, folder: Path):
    """run_args(output_folder, *extra flags) -> train.py arguments. Three epochs straight must fall, each epoch's loss
    within its tolerance of `pinned` (which allows for other CPUs' kernels); two epochs, then a resume to three, must
    log exactly the same per-iteration losses (the same run on the same CPU: no tolerance)."""
    torch.set_num_threads(1)
    train.main(run_args(folder / "straight", "--epochs", "3"))
    epoch_losses = train_losses(folder / "straight" / "nvlog.json", 1)
    assert epoch_losses[0] > epoch_losses[1] > epoch_losses[2]
    assert len(epoch_losses) == len(pinned.epoch_losses), f"epoch losses {epoch_losses}, pinned {pinned.epoch_losses}"
    for epoch, (loss, pin, tolerance) in enumerate(zip(epoch_losses, pinned.epoch_losses, pinned.rel_tolerances), 1):
        assert loss == pytest.approx(pin, rel=tolerance, abs=0), (
            f"epoch {epoch}'s loss {loss} is {abs(loss - pin) / abs(pin):.1e} from its pin {pin}, more than its "
            f"tolerance {tolerance:.0e}; epoch losses {epoch_losses}, pinned {pinned.epoch_losses}")

    train.main(run_args(folder / "stopped", "--epochs", "2"))
    train.main(run_args(folder / "stopped", "--epochs", "3", "--resume-from-last"))
    assert train_losses(folder / "stopped" / "nvlog.json", 2) == train_losses(folder / "straight" / "nvlog.json", 2)


if __name__ == "__main__":
    from common import trainer

    class TrainerKeepingParameters(trainer.Trainer):
        def train(self) -> None:
            super().train()
            parameters = {name: p.detach().clone() for name, p in self.model.named_parameters()}
            torch.save(parameters, Path(self.settings.output) / f"final_parameters_rank{self.context.rank}.pt")

    trainer.Trainer = TrainerKeepingParameters  # what train.main builds
    # As train.py leaves: a rank that leaves through Python's teardown can abort in gloo's threads (run_entry_point).
    run_entry_point(lambda: train.main(sys.argv[1:]))
