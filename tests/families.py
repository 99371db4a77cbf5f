"""The model families of the conformance test (tests/test_families.py) and the helpers that run them through train.py.

A new family adds one entry to FAMILIES (test_every_registered_family_has_an_entry fails until it does): its tiny
flags, and the mean train_loss of its first three epochs as printed by the failing pinned test (start with []).
The per-family tests import their tiny flags from here (one copy).
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Family:
    flags: list[str]  # the model's (and its data's) flags for a tiny model that trains in seconds on 2 CPU cores
    learning_rate: float
    batch_size: int  # of the one-process runs; even: the 2-process run takes half of it per rank
    seed: int
    # Mean train_loss of epochs 1-3, pinned on the CPU reference machine; or one pin per CPU capability
    # (torch.backends.cpu.get_cpu_capability()) where its kernels round differently enough to matter.
    pinned_epoch_losses: list[float] | dict[str, list[float]]
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
        # Two players at lr 1e-2 turn the AVX-512 kernels' other rounding into 2 % by epoch 3.
        pinned_epoch_losses={"AVX2": [103.09199523925781, 80.90262298583984, 75.49984893798828],
                             "AVX512": [103.14515838623046, 80.95665740966797, 74.00356903076172]},
        # Two players at lr 1e-2 amplify the different rounding of DDP's averaged gradients: 3e-4 by step 10, from
        # 1e-6 at the first steps.
        ddp_rel_tolerance=1e-3),
    "MelInverter": Family(  # train_loss: mean |log magnitude error| over the crops' inner frames
        flags=["--channels", "8", "--n-blocks", "1", "--segment-length", "2048"],
        learning_rate=3e-3, batch_size=4, seed=6,
        pinned_epoch_losses=[3.044745111465454, 2.138785147666931, 1.9245128154754638]),
    "wav2vec2": Family(  # pre-training; train_loss: contrastive + 0.1 x diversity + 10 x feature penalty, per masked frame
        flags=["pretrain", "--conv-feature-layers", "[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", "--encoder-layers", "2",
               "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
               "--final-dim", "16", "--latent-vars", "8", "--num-negatives", "5", "--conv-pos", "8",
               "--conv-pos-groups", "4", "--max-updates", "1000", "--warmup-updates", "4"],
        learning_rate=2e-3, batch_size=2, seed=5, max_tokens=100_000, corpus="synthetic_asr_corpus",
        sampling_rate=16000, pinned_epoch_losses=[2.5939891636371613, 1.8783893883228302, 1.8322886129220326]),
}


def pinned_losses(family: Family) -> list[float]:
    """The family's pinned epoch losses for this CPU."""
    if isinstance(family.pinned_epoch_losses, list):
        return family.pinned_epoch_losses
    capability = torch.backends.cpu.get_cpu_capability()
    if capability not in family.pinned_epoch_losses:
        pytest.fail(f"no pinned losses for a {capability} CPU (pinned: {sorted(family.pinned_epoch_losses)}): "
                    f"add \"{capability}\": [] and rerun; its failure prints the losses to pin")
    return family.pinned_epoch_losses[capability]


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


def train_on_two_processes(arguments: list[str]) -> list[dict]:
    """train.py's run on 2 gloo processes (as torchrun launches it); returns each rank's final parameters."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "tests.training_runs", *arguments, "--dist-backend", "gloo"]
    completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    output = Path(arguments[arguments.index("-o") + 1])
    return [torch.load(output / f"final_parameters_rank{rank}.pt", weights_only=True) for rank in range(2)]
