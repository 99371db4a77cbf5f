"""What every registered model family must do through train.py (the conformance test).

For each name in common.registry.RECIPES, on the synthetic corpus with a tiny model:
- `--dry-run` prints the model name, the model config (which builds the model) and the flags, and trains nothing;
- three epochs fall to pinned losses, the checkpoint holds what a run needs, and stopping after two epochs and
  resuming reproduces the uninterrupted per-iteration losses exactly;
- two gloo processes of batch B end with identical weights on both ranks, write a checkpoint that loads, and take
  the steps one process takes with batch 2B (per-iteration losses equal), unless the family says why they cannot.

A new family adds one entry to FAMILIES in tests/families.py (test_every_registered_family_has_an_entry fails until
it does).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import train
from common.checkpoint import load_checkpoint
from common.trained_model import load_trained_model
from common.logger import read_dllogger_file
from common.registry import RECIPES, get_recipe
from tests.families import FAMILIES, corpus_of, family_of, run_args, train_on_two_processes
from tests.training_runs import check_pinned_losses_and_exact_resume, train_losses


def test_every_registered_family_has_an_entry():
    assert set(FAMILIES) == set(RECIPES), "FAMILIES must hold exactly the families of common.registry.RECIPES"
    for name, family in FAMILIES.items():
        assert family.batch_size % 2 == 0, f"{name}: the 2-process run takes half the batch size"
        assert family.ddp_equal or family.ddp_unequal_reason, f"{name}: say why 2 processes cannot equal 1"


def dry_run_output(name: str, corpus, output: Path, capsys) -> dict:
    capsys.readouterr()
    train.main(run_args(name, corpus, output, "--epochs", "3", "--dry-run"))
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_dry_run_prints_the_configuration_and_trains_nothing(name, request, tmp_path, capsys):
    family = family_of(name)
    printed = dry_run_output(name, corpus_of(name, request), tmp_path / "run", capsys)
    assert printed["model_name"] == name
    assert printed["args"]["learning_rate"] == family.learning_rate and printed["args"]["epochs"] == 3
    if family.max_tokens is None:
        assert printed["args"]["batch_size"] == family.batch_size
    else:
        assert printed["args"]["max_tokens"] == family.max_tokens
    model = get_recipe(name).build_model(printed["model_config"])  # the printed config is the model's, as JSON
    assert sum(parameter.numel() for parameter in model.parameters()) > 0
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())  # no log, no checkpoint


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_loss_falls_to_pinned_values_and_resume_is_exact(name, request, tmp_path, capsys):
    family = family_of(name)
    corpus = corpus_of(name, request)
    check_pinned_losses_and_exact_resume(lambda output, *extra: run_args(name, corpus, output, *extra),
                                         family.pinned, tmp_path)
    straight = tmp_path / "straight"
    # The epoch's loss is the mean over its iterations, not the last one.
    epoch_losses, iteration_losses = train_losses(straight / "nvlog.json", 1), train_losses(straight / "nvlog.json", 2)
    per_epoch = len(iteration_losses) // 3
    assert epoch_losses[0] == pytest.approx(sum(iteration_losses[:per_epoch]) / per_epoch, rel=1e-9)
    # The checkpoint holds the model as --dry-run describes it, and what inference needs besides the weights.
    checkpoint = load_checkpoint(straight / f"checkpoint_{name}_last.pt", expected_model=name)
    assert checkpoint["epoch"] == 3 and checkpoint["iteration"] == len(iteration_losses)
    assert checkpoint["model_config"] == dry_run_output(name, corpus, tmp_path / "dry", capsys)["model_config"]
    assert checkpoint["audio_params"]["sampling_rate"] == family.sampling_rate
    # The text front-end travels in the checkpoint when the recipe has one for this run (wav2vec 2.0: fine-tuning's).
    recipe = get_recipe(name)
    run = train.parse_run_args(run_args(name, corpus, straight, "--epochs", "3"))
    text = recipe.text_processor(run) if recipe.text_processor is not None else None
    assert checkpoint["text"] == (text.to_dict() if text is not None else None)


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_two_processes_agree_and_train_as_one_on_the_global_batch(name, request, tmp_path):
    """Rank r takes every second batch of B of the one permutation, and DDP averages the gradients: with a loss that is
    a mean over equal items and no per-rank randomness, that is the step one process takes on the batch of 2B (for a
    family batching by size: the step one process takes accumulating the same two batches)."""
    family = family_of(name)
    corpus = corpus_of(name, request)
    ddp = tmp_path / "ddp"
    ranks = train_on_two_processes(run_args(name, corpus, ddp, "--epochs", "2", batch_size=family.batch_size // 2))
    # Parameters, not buffers: BatchNorm's running statistics are each rank's own since DDP last broadcast rank 0's.
    assert ranks[0].keys() == ranks[1].keys()
    for key in ranks[0]:
        assert torch.equal(ranks[0][key], ranks[1][key]), f"{key} differs between the ranks"
    parameters = [r["data"] for r in read_dllogger_file(ddp / "nvlog.json") if r["step"] == "PARAMETER"
                  and "world_size" in r["data"]]
    assert parameters[0]["world_size"] == 2
    assert parameters[0]["global_batch_size"] == (family.batch_size if family.max_tokens is None else None)
    _, checkpoint = load_trained_model(get_recipe(name), ddp / f"checkpoint_{name}_2.pt", torch.device("cpu"))
    assert checkpoint["world_size"] == 2 and len(checkpoint["rng_states"]) == 2
    assert not any(key.startswith("module.") for key in checkpoint["state_dict"])
    for key, value in ranks[0].items():
        assert torch.equal(checkpoint["state_dict"][key], value), key

    ddp_losses = train_losses(ddp / "nvlog.json", 2)
    if not family.ddp_equal:
        epochs = train_losses(ddp / "nvlog.json", 1)
        assert len(epochs) == 2 and epochs[1] < epochs[0]
        return
    torch.set_num_threads(1)
    accumulation = ["--grad-accumulation", "2"] if family.max_tokens is not None else []
    train.main(run_args(name, corpus, tmp_path / "single", "--epochs", "2", *accumulation))
    single_losses = train_losses(tmp_path / "single" / "nvlog.json", 2)
    assert len(ddp_losses) == len(single_losses) >= 6
    assert ddp_losses == pytest.approx(single_losses, rel=family.ddp_rel_tolerance, abs=1e-5)
