"""What a training checkpoint holds and how a run is put back exactly where it stopped.

A resumed run reproduces the loss curve of an uninterrupted one: the checkpoint holds the model, optimizers, loss
scalers, epoch, optimizer step, position in the epoch, running epoch sums and the RNG states of every rank, and the
data order is a function of (seed, epoch) alone.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from common import checkpoint as ckpt
from common.audio import AudioParams
from common.errors import UserError
from common.text import TextProcessor
from common.text.symbols import SYMBOLS


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def rng_state_for_checkpoint(state: dict) -> dict:
    """numpy and python RNG states as plain lists/tensors, so the checkpoint loads with weights_only=True."""
    kind, keys, position, has_gauss, cached_gauss = state["numpy"]
    version, internal, gauss_next = state["python"]
    saved = {"torch": state["torch"], "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss,
                                                cached_gauss],
             "python": [version, list(internal), gauss_next]}
    if "cuda" in state:
        saved["cuda"] = state["cuda"]
    return saved


def rng_state_from_checkpoint(saved: dict) -> dict:
    kind, keys, position, has_gauss, cached_gauss = saved["numpy"]
    version, internal, gauss_next = saved["python"]
    state = {"torch": saved["torch"], "numpy": (kind, keys.numpy().astype(np.uint32), position, has_gauss,
                                                cached_gauss),
             "python": (version, tuple(internal), gauss_next)}
    if "cuda" in saved:
        state["cuda"] = saved["cuda"]
    return state


def fine_tunes_in_place(args: argparse.Namespace) -> bool:
    """HiFi-GAN's --fine-tuning (NVIDIA's --fine_tuning; no other family has the flag): the run goes on from the last
    checkpoint in its own -o/--output, NVIDIA's way of fine-tuning a trained vocoder on an acoustic model's mels."""
    return getattr(args, "fine_tuning", False)


def find_resume_checkpoint(args: argparse.Namespace, model_name: str) -> tuple[Path, str] | None:
    """The checkpoint this run resumes from, and the flag that asked for it (for messages); None: a fresh start."""
    if args.checkpoint_path:
        return Path(args.checkpoint_path), "--checkpoint-path"
    flag = "--fine-tuning" if fine_tunes_in_place(args) else "--resume-from-last"
    if args.resume_from_last or fine_tunes_in_place(args):
        pointer = ckpt.last_checkpoint_pointer(args.output, model_name)
        if pointer.exists():
            return pointer.resolve(), flag
        if fine_tunes_in_place(args):
            raise UserError(f"--fine-tuning goes on from the base run's checkpoint in -o/--output, and {args.output} "
                            f"has no {pointer.name}: give the base run's folder as -o, or start from a checkpoint "
                            "elsewhere with --fine-tune-from CKPT")
        start = f"--warm-start {args.warm_start}" if getattr(args, "warm_start", None) else "scratch"
        print(f"--resume-from-last: no {pointer} yet, starting from {start}", flush=True)
    return None


def check_warm_start_args(args: argparse.Namespace, recipe) -> None:
    """--warm-start starts a new run from trained weights: it cannot be combined with resuming a given checkpoint, and
    only a family whose recipe offers it takes it. With --resume-from-last it applies only while the output folder has
    no checkpoint yet, so a preempted job can be requeued with the same command line."""
    if args.ignore_layers and not args.warm_start:
        raise UserError("--ignore-layers names weights that --warm-start leaves out; give --warm-start CKPT too")
    if not args.warm_start:
        return
    if not recipe.warm_start:
        raise UserError(f"-m {recipe.name} does not take --warm-start (its README says how it starts from trained "
                        "weights)")
    if args.checkpoint_path:
        raise UserError("--warm-start starts a new run from a checkpoint's weights, --checkpoint-path continues a run "
                        "with its optimizer and step: give one of them")


def warm_start(trainer) -> None:
    """--warm-start CKPT [--ignore-layers NAME ...] (NVIDIA/tacotron2's warm start): the weights of CKPT that fit go
    into the freshly built model, the others stay as initialised and are listed; optimizer, step and epoch start
    fresh (nothing but weights is read). A text model whose table differs from the checkpoint's is warned about:
    rows of its symbol embedding would belong to other symbols unless that layer is ignored or has another size."""
    args, recipe = trainer.args, trainer.recipe
    flag = "--warm-start"
    checkpoint = ckpt.load_checkpoint(args.warm_start, expected_model=recipe.name, flag=flag)
    source = ckpt.describe_source(args.warm_start, flag)
    skipped = ckpt.warm_start_weights(trainer.model, checkpoint, source, args.ignore_layers)
    if not trainer.context.is_main:
        return
    print(f"warm start from {args.warm_start}: fresh optimizer at step 0; {len(skipped)} weight(s) not loaded, left "
          "as initialised" + (":" if skipped else ""), flush=True)
    for line in skipped:
        print(f"  {line}", flush=True)
    if isinstance(trainer.text, TextProcessor):
        # NVIDIA's files carry no table: they were trained with NVIDIA's, this run's default.
        saved_symbols = (checkpoint.get("text") or {}).get("symbols", SYMBOLS)
        if list(saved_symbols) != trainer.text.symbols and len(saved_symbols) == trainer.text.n_symbols:
            print(f"warning: {source} was trained with another symbol table of the same size ({len(saved_symbols)} "
                  "symbols): its symbol embedding's rows belong to other symbols; leave that layer out with "
                  "--ignore-layers (Tacotron 2: embedding) if it is not already", file=sys.stderr, flush=True)


def training_state(trainer, rng_states: list) -> dict:
    """Everything a run needs to continue; `rng_states` are every rank's, gathered by the caller."""
    return {
        "format_version": ckpt.FORMAT_VERSION,
        "model_name": trainer.recipe.name,
        "model_config": trainer.model_config,
        "audio_params": trainer.audio_params.to_dict(),
        "text": trainer.text.to_dict() if trainer.text is not None else None,
        "state_dict": trainer.model.state_dict(),
        "optimizers": {name: optimizer.state_dict() for name, optimizer in trainer.optimizers.items()},
        "scalers": {name: scaler.state_dict() for name, scaler in trainer.scalers.items()},
        "lr_schedule": trainer.schedule.state_dict(),
        "epoch": trainer.epoch,
        "iteration": trainer.iteration,
        "batches_done_in_epoch": trainer.batches_done_in_epoch,
        "epoch_sums": trainer.epoch_sums.clone(),
        "skipped_steps": trainer.skipped_steps,
        "best_metric_value": trainer.best_metric_value,
        "retained_checkpoints": trainer.retained_checkpoints,
        "fine_tune_epoch_start": trainer.fine_tune_epoch_start,
        "world_size": trainer.context.world_size,
        "rng_states": rng_states,
        "args": {key: value for key, value in vars(trainer.args).items()
                 if isinstance(value, (str, int, float, bool, list, type(None)))},
    }


@dataclass
class ReferenceTrainingState:
    """What another implementation's training file holds to go on training from (Recipe.training_state_from_reference
    reads it): the model's weights under this project's names, the optimizers' and loss scalers' states under this
    run's optimizer names (an empty dict: no loss-scaler state), and how far it got. Its data order and RNG streams
    cannot carry over: the run continues from the start of `epoch` with fresh seeds."""
    state_dict: dict
    optimizers: dict[str, dict]
    scalers: dict[str, dict]
    epoch: int  # epochs completed
    iteration: int  # optimizer steps taken


def checkpoint_from_reference(trainer, reference: ReferenceTrainingState) -> dict:
    """A training checkpoint of this project (what training_state writes) holding `reference`: this run's model,
    audio and text settings, at the start of the reference's epoch, without RNG states."""
    return {
        "model_name": trainer.recipe.name,
        "model_config": trainer.model_config,
        "audio_params": trainer.audio_params.to_dict(),
        "state_dict": reference.state_dict,
        "optimizers": reference.optimizers,
        "scalers": reference.scalers,
        "epoch": reference.epoch, "iteration": reference.iteration, "batches_done_in_epoch": 0,
        "epoch_sums": torch.zeros(3, dtype=torch.float64), "skipped_steps": 0,
        "world_size": 0, "rng_states": [],
    }


def restore_training_state(trainer, path: Path, flag: str) -> None:
    """Load `path` (given by `flag`) into the trainer's model, optimizers, scaler, progress counters and RNGs."""
    state = ckpt.load_checkpoint(path, expected_model=trainer.recipe.name, flag=flag)
    if "model_name" not in state and trainer.recipe.training_state_from_reference is not None:
        reference = trainer.recipe.training_state_from_reference(Path(path), state, trainer.model)
        state = checkpoint_from_reference(trainer, reference)
    for key in ("model_config", "audio_params", "optimizers", "epoch", "iteration", "rng_states"):
        if key not in state:
            raise UserError(f"{path} is not a training checkpoint of this project (no '{key}'); "
                            "to start from its weights use it for inference or fine-tuning instead")
    if state["model_config"] != trainer.model_config:
        changed = sorted(key for key in set(state["model_config"]) | set(trainer.model_config)
                         if state["model_config"].get(key) != trainer.model_config.get(key))
        raise UserError(f"cannot resume from {path}: model flags differ from the checkpoint's in {changed}")
    AudioParams.from_dict(state["audio_params"]).check_matches(trainer.audio_params, str(path), "this run's flags")
    ckpt.load_model_state(trainer.model, ckpt.model_state_from_checkpoint(state), str(path))
    if sorted(state["optimizers"]) != sorted(trainer.optimizers):
        raise UserError(f"{path} holds optimizers {sorted(state['optimizers'])}, this run has "
                        f"{sorted(trainer.optimizers)}")
    for name, optimizer in trainer.optimizers.items():
        optimizer.load_state_dict(state["optimizers"][name])
        for group in optimizer.param_groups:  # a file from another implementation may not carry it
            group.setdefault("initial_lr", trainer.args.learning_rate)
    for name, scaler in trainer.scalers.items():  # checkpoints before 2026-11 held one scaler for every optimizer
        saved = state["scalers"][name] if "scalers" in state else state["scaler"]
        if saved:  # an empty state (a run without loss scaling) leaves this run's scaler as it is
            scaler.load_state_dict(saved)
    trainer.epoch, trainer.iteration = state["epoch"], state["iteration"]
    trainer.batches_done_in_epoch = state["batches_done_in_epoch"]
    trainer.epoch_sums = state["epoch_sums"].clone()
    trainer.skipped_steps = state["skipped_steps"]
    trainer.best_metric_value = state.get("best_metric_value", math.inf)  # older checkpoints: none yet
    if Path(path).resolve().parent == Path(trainer.args.output).resolve():
        # Names of files in that folder: a run resumed into another folder must not delete what is there.
        trainer.retained_checkpoints = state.get("retained_checkpoints", [])
    rank, world_size = trainer.context.rank, trainer.context.world_size
    if state["world_size"] == world_size and state["rng_states"]:
        set_rng_state(rng_state_from_checkpoint(state["rng_states"][rank]))
    else:
        reason = (f"a {state['world_size']}-rank checkpoint" if state["rng_states"]
                  else "a checkpoint without this project's RNG states")
        print(f"resuming on {world_size} ranks from {reason}: RNG streams are re-seeded, so the run will not "
              "match the original exactly", flush=True)
        seed_everything(trainer.args.seed + 7919 * trainer.epoch + rank)
    print(f"resumed from {path}: epoch {trainer.epoch}, step {trainer.iteration}, "
          f"{trainer.batches_done_in_epoch} batches into the epoch", flush=True)
    trainer.fine_tune_epoch_start = state.get("fine_tune_epoch_start")
    if fine_tunes_in_place(trainer.args) and trainer.fine_tune_epoch_start is None:
        start_fine_tuning(trainer, path)


def start_fine_tuning(trainer, base: Path) -> None:
    """--fine-tuning on a base run's checkpoint, just restored (weights, optimizer moments, epoch, step): as NVIDIA's
    first fine-tuning load, both learning rates are multiplied by --fine-tune-lr-factor and the epoch it starts at
    is recorded. The record marks this run's checkpoints as the fine-tuning run's, so the next --fine-tuning in the
    folder resumes it and multiplies nothing again."""
    args = trainer.args
    if (args.epochs and trainer.epoch >= args.epochs) or (args.max_updates and trainer.iteration >= args.max_updates):
        raise UserError(f"--fine-tuning: the base run {base} has done {trainer.epoch} epochs and {trainer.iteration} "
                        "updates, so there is nothing left to fine-tune; raise --epochs or --max-updates past them "
                        "(NVIDIA fine-tunes 6500 base epochs with --epochs 10000)")
    for optimizer in trainer.optimizers.values():
        for group in optimizer.param_groups:
            group["initial_lr"] *= args.fine_tune_lr_factor  # what the schedule multiplies; the optimizer saves it
            group["lr"] *= args.fine_tune_lr_factor
    trainer.fine_tune_epoch_start = trainer.epoch
    # The base run's checkpoints are not this run's to delete (NVIDIA's rotation deletes its base checkpoint): from
    # here --keep-last-checkpoints counts only the checkpoints of the fine-tuning run.
    trainer.retained_checkpoints = []
    print(f"--fine-tuning: fine-tuning {base} from epoch {trainer.epoch}, step {trainer.iteration}, with the "
          f"learning rates x{args.fine_tune_lr_factor:g}; it stays in {args.output}", flush=True)
