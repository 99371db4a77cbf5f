"""What every registered model family must do through train.py (the conformance test).

For each name in common.registry.RECIPES, on the synthetic corpus with a tiny model:
- `--dry-run` prints the model name, the model config (which builds the model) and the flags, and trains nothing;
- three epochs fall to pinned losses, the checkpoint holds what a run needs, and stopping after two epochs and
  resuming reproduces the uninterrupted per-iteration losses exactly;
- two gloo processes of batch B end with identical weights on both ranks, write a checkpoint that loads, and take
  the steps one process takes with batch 2B (per-iteration losses equal), unless the family says why they cannot.

A new family adds one entry to FAMILIES (test_every_registered_family_has_an_entry fails until it does): its tiny
flags, and the mean train_loss of its first three epochs as printed by the failing pinned test (start with []).
The per-family tests import their tiny flags from here (one copy).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import train
from common.checkpoint import load_checkpoint, load_trained_model
from common.logger import read_dllogger_file
from common.registry import RECIPES, get_recipe
from tests.training_runs import check_pinned_losses_and_exact_resume, train_losses

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Family:
    flags: list[str]  # the model's (and its data's) flags for a tiny model that trains in seconds on 2 CPU cores
    learning_rate: float
    batch_size: int  # of the one-process runs; even: the 2-process run takes half of it per rank
    seed: int
    pinned_epoch_losses: list[float]  # mean train_loss of epochs 1-3, pinned on the CPU reference machine
    # Families that batch by size (speech recognition): --max-tokens instead of -bs; the 2-process run keeps the
    # budget per rank and is compared with one process accumulating 2 batches per step.
    max_tokens: int | None = None
    corpus: str = "synthetic_corpus"  # the session fixture of its data (tests/conftest.py)
    sampling_rate: int = 22050
    ddp_equal: bool = True  # 2 processes of batch B take the steps of 1 process of batch 2B
    ddp_unequal_reason: str = ""  # why not, when ddp_equal is False (then 2 ranks must still agree and train)
    ddp_rel_tolerance: float = 1e-4  # how far apart the two curves may drift by float rounding alone


FAMILIES = {
    "Tacotron2": Family(
        flags=["--symbols-embedding-dim", "32", "--encoder-embedding-dim", "32", "--encoder-n-convolutions", "1",
               "--attention-rnn-dim", "48", "--decoder-rnn-dim", "48", "--prenet-dim", "32", "--attention-dim", "16",
               "--attention-location-n-filters", "4", "--attention-location-kernel-size", "7",
               "--postnet-embedding-dim", "32", "--postnet-n-convolutions", "2", "--n-frames-per-step", "2"],
        learning_rate=2e-3, batch_size=4, seed=1,
        pinned_epoch_losses=[62.05451126098633, 57.26852722167969, 47.805426025390624],
        ddp_equal=False,
        ddp_unequal_reason="the prenet's always-on dropout draws its masks from each rank's own generator, "
                           "BatchNorm normalises over each rank's half of the batch, and the loss is a mean over "
                           "the batch's frames, so half-batches of other lengths weigh differently"),
    "WaveGlow": Family(
        flags=["--flows", "4", "--early-every", "2", "--early-size", "2", "--wn-channels", "16", "--wn-layers", "2",
               "--segment-length", "2048", "--weight-decay", "0"],
        learning_rate=1e-3, batch_size=4, seed=3,
        pinned_epoch_losses=[-0.0536837222520262, -0.2795039087533951, -0.5400934457778931]),
    "WaveNet": Family(
        flags=["--residual-channels", "8", "--skip-channels", "16", "--out-channels", "256", "--n-layers", "4",
               "--max-dilation", "4", "--segment-length", "1024"],
        learning_rate=3e-3, batch_size=4, seed=2,
        pinned_epoch_losses=[5.454670047760009, 5.382598781585694, 5.102499198913574]),  # ln 256 = 5.545 at chance
    "HiFiGAN": Family(  # train_loss: the generator's (adversarial + 2 x feature matching + 45 x mel L1)
        flags=["--upsample-rates", "8", "8", "4", "--upsample-kernel-sizes", "16", "16", "8",
               "--upsample-initial-channel", "16", "--resblock", "2", "--resblock-kernel-sizes", "3",
               "--resblock-dilation-sizes", "1,3", "--segment-size", "2048", "--ema-decay", "0.9",
               "--discriminator-width-divisor", "8"],
        learning_rate=1e-2, batch_size=4, seed=4,
        pinned_epoch_losses=[103.09199523925781, 80.90262298583984, 75.49984893798828],
        # Two players at lr 1e-2 amplify the different rounding of DDP's averaged gradients: 3e-4 by step 10, from
        # 1e-6 at the first steps.
        ddp_rel_tolerance=1e-3),
    "wav2vec2": Family(  # pre-training; train_loss: contrastive + 0.1 x diversity + 10 x feature penalty, per masked frame
        flags=["pretrain", "--conv-feature-layers", "[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", "--encoder-layers", "2",
               "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
               "--final-dim", "16", "--latent-vars", "8", "--num-negatives", "5", "--conv-pos", "8",
               "--conv-pos-groups", "4", "--max-updates", "1000", "--warmup-updates", "4"],
        learning_rate=2e-3, batch_size=2, seed=5, max_tokens=100_000, corpus="synthetic_asr_corpus",
        sampling_rate=16000, pinned_epoch_losses=[2.5939891636371613, 1.8783893883228302, 1.8322886129220326]),
}


def family_of(name: str) -> Family:
    if name not in FAMILIES:
        pytest.fail(f"{name} is registered in common/registry.py but has no entry in FAMILIES of {__file__}: "
                    "add its tiny flags and pinned losses")
    return FAMILIES[name]


def run_args(name: str, corpus, output: Path, *extra: str, batch_size: int | None = None) -> list[str]:
    """train.py arguments for family `name`'s tiny model on its synthetic corpus, on the CPU; `extra` flags win."""
    family = family_of(name)
    if family.max_tokens is not None:  # a speech-recognition corpus in fairseq's layout
        data = ["--data", str(corpus.directory), "--max-tokens", str(family.max_tokens)]
    else:
        data = ["-d", str(corpus.dataset_dir), "--training-files", str(corpus.train_filelist),
                "--validation-files", str(corpus.val_filelist), "-bs", str(batch_size or family.batch_size)]
    return ["-m", name, "-o", str(output), *data, "-lr", str(family.learning_rate), "--seed", str(family.seed),
            "--num-workers", "0", "--quiet", "--cpu", *family.flags, *extra]


def corpus_of(name: str, request):
    return request.getfixturevalue(family_of(name).corpus)


def test_every_registered_family_has_an_entry():
    assert set(FAMILIES) == set(RECIPES), "FAMILIES must hold exactly the families of common.registry.RECIPES"
    for name, family in FAMILIES.items():
        assert family.batch_size % 2 == 0, f"{name}: the 2-process run takes half the batch size"
        assert family.ddp_equal or family.ddp_unequal_reason, f"{name}: say why 2 processes cannot equal 1"


def dry_run_output(name: str, corpus, output: Path, capsys) -> dict:
    capsys.readouterr()
    train.main(run_args(name, corpus, output, "--epochs", "3", "--dry-run"))
    return json.loads(capsys.readouterr().out)


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


@pytest.mark.parametrize("name", RECIPES)
def test_loss_falls_to_pinned_values_and_resume_is_exact(name, request, tmp_path, capsys):
    family = family_of(name)
    corpus = corpus_of(name, request)
    check_pinned_losses_and_exact_resume(lambda output, *extra: run_args(name, corpus, output, *extra),
                                         family.pinned_epoch_losses, tmp_path)
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


def train_on_two_processes(arguments: list[str]) -> list[dict]:
    """train.py's run on 2 gloo processes (as torchrun launches it); returns each rank's final parameters."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "tests.training_runs", *arguments, "--dist-backend", "gloo"]
    completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    output = Path(arguments[arguments.index("-o") + 1])
    return [torch.load(output / f"final_parameters_rank{rank}.pt", weights_only=True) for rank in range(2)]


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
