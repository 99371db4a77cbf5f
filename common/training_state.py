"""What a training checkpoint holds and how a run is put back exactly where it stopped.

A resumed run reproduces the loss curve of an uninterrupted one: the checkpoint holds the model, optimizers, loss
scalers, epoch, optimizer step, position in the epoch, running epoch sums and the RNG states of every rank, and the
data order is a function of (seed, epoch) alone.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import os
import pickle
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from common import checkpoint as ckpt
from common.arguments import FLAG_OF_PRECISION
from common.audio import AudioParams
from common.errors import UserError
from common.recipe import BatchingContext, Recipe
from common.sampler import ResumedEpoch, batch_items, fixed_size_batches
from common.text import TextProcessor
from common.text.symbols import SYMBOLS
from common.training_settings import TrainingSettings, flag_values


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


def find_resume_checkpoint(settings: TrainingSettings, recipe: Recipe, is_main: bool = True) -> tuple[Path, str] | None:
    """The checkpoint this run resumes from, and the flag that asked for it (for messages); None: a fresh start.

    --resume-from-last (and a family's InPlaceStart flag, HiFi-GAN's --fine-tuning) follow the `last` link of -o/--output; where it is missing or
    dangles (a copy made without links, a crash between two files), or its file does not load, the run goes on from
    the newest checkpoint there that loads, by the step it records, not by file times (common/checkpoint.py's
    periodic_checkpoints; the best checkpoint only when no periodic one loads). No checkpoint of the model there: a
    fresh start. Checkpoints there none of which loads, or a fresh run (or a resume of a checkpoint from elsewhere)
    into a folder holding checkpoints of the model: a UserError, since the run would write over them. `is_main`:
    this rank prints what it chose."""
    output, model_name = Path(settings.output), recipe.name
    if settings.checkpoint_path:
        checkpoint = Path(settings.checkpoint_path)
        if checkpoint.resolve().parent != output.resolve():
            refuse_to_write_over_checkpoints(settings, model_name, f"--checkpoint-path {checkpoint} (a run from "
                                                               "elsewhere)")
        return checkpoint, "--checkpoint-path"
    in_place = recipe.in_place_start if recipe.in_place_start and recipe.in_place_start.asked(settings) else None
    if not (settings.resume_from_last or in_place):
        refuse_to_write_over_checkpoints(settings, model_name, "a new run")
        return None
    flag = in_place.flag if in_place else "--resume-from-last"
    found = newest_loadable_checkpoint(output, model_name, flag, is_main)
    if found is not None:
        return found, flag
    pointer = ckpt.last_checkpoint_pointer(output, model_name)
    if in_place:
        raise UserError(f"{in_place.flag} goes on from the base run's checkpoint in -o/--output, and {output} "
                        f"has no {pointer.name}: {in_place.no_base}")
    start = f"--warm-start {settings.warm_start}" if settings.warm_start else "scratch"
    if is_main:
        print(f"--resume-from-last: no checkpoint of {model_name} in {output} yet, starting from {start}", flush=True)
    return None


def checkpoints_in_folder(output: Path, model_name: str) -> list[Path]:
    """Every checkpoint of `model_name` a run in `output` would write over: the periodic ones, the best one, and the
    `last` link where it leads to a file (or is one: a copy made without links)."""
    found = ckpt.periodic_checkpoints(output, model_name)
    for path in (ckpt.checkpoint_path(output, model_name, "best"), ckpt.last_checkpoint_pointer(output, model_name)):
        if path.is_file():
            found.append(path)
    return found


def listed(paths: list[Path], most: int = 4) -> str:
    """File names for a one-line message: the first `most`, then how many in all."""
    names = [path.name for path in paths]
    return ", ".join(names[:most]) + (f" ... ({len(names)} in all)" if len(names) > most else "")


def refuse_to_write_over_checkpoints(settings: TrainingSettings, model_name: str, what: str) -> None:
    """A run that does not continue the checkpoints in -o/--output would write its own over them (checkpoint_<M>_1.pt
    first): unless it writes none (--no-save), that is a UserError naming them and what to give instead."""
    existing = checkpoints_in_folder(Path(settings.output), model_name)
    if existing and not settings.no_save:
        raise UserError(f"-o/--output {settings.output} already holds checkpoints of {model_name} "
                        f"({listed(existing)}), and {what} would write over them: give --resume-from-last to "
                        "continue the run they belong to, or another -o/--output")


def recorded_progress(path: Path, model_name: str) -> tuple[int, int, int]:
    """(optimizer steps, epoch, batches into it) that the checkpoint at `path` records, to order checkpoints by
    training progress; a UserError (load_checkpoint's, naming why) if it does not load as a checkpoint of
    `model_name`. Its tensors are memory-mapped, not read: a folder of large checkpoints is ranked in a moment."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (OSError, pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError, IndexError, TypeError,
            AttributeError, ImportError, UnicodeDecodeError):
        state = None  # damaged, or an older format mmap cannot read: a whole load says which
    if not isinstance(state, dict) or state.get("model_name", model_name) != model_name:
        state = ckpt.load_checkpoint(path, expected_model=model_name)
    progress = []
    for key in ("iteration", "epoch", "batches_done_in_epoch"):  # another implementation's file may lack some
        value = state.get(key)
        progress.append(value if isinstance(value, int) else -1)
    return progress[0], progress[1], progress[2]


def why_not_loadable(error: UserError, path: Path) -> str:
    """The reason load_checkpoint gives, without the path and the advice: for a list of files on one line."""
    reason = str(error).split(str(path), 1)[-1].lstrip(": ")
    return reason.split(";")[0].strip()


def newest_loadable_checkpoint(output: Path, model_name: str, flag: str, is_main: bool) -> Path | None:
    """What `flag` (--resume-from-last, --fine-tuning) resumes from in `output` (find_resume_checkpoint says how
    it is chosen); None where `output` holds no checkpoint of the model."""
    pointer = ckpt.last_checkpoint_pointer(output, model_name)
    not_loading: list[tuple[Path, str]] = []
    if pointer.exists():  # a link to a file, or a file: a copy made without links
        target = pointer.resolve()
        try:
            recorded_progress(target, model_name)
            return target
        except UserError as error:
            not_loading.append((target, why_not_loadable(error, target)))
        pointer_state = f"{pointer.name} leads to {target.name}, which does not load"
    elif pointer.is_symlink():
        pointer_state = f"{pointer.name} points at {os.readlink(pointer)}, which is gone"
    else:
        pointer_state = f"there is no {pointer.name}"
    ranked, failed = [], {path for path, _ in not_loading}
    for path in ckpt.periodic_checkpoints(output, model_name):
        if path.resolve() in failed:
            continue
        try:
            ranked.append((recorded_progress(path, model_name), path))
        except UserError as error:
            not_loading.append((path, why_not_loadable(error, path)))
    chosen, which = (max(ranked), "the newest checkpoint there that loads") if ranked else (None, "")
    best = ckpt.checkpoint_path(output, model_name, "best")
    if chosen is None and best.is_file():
        # The best checkpoint is a whole training state too, but of the step its validation ran at, which may lie
        # behind the periodic ones: only where none of them loads is it better than refusing.
        try:
            chosen, which = (recorded_progress(best, model_name), best), "the best checkpoint, as no periodic one loads"
        except UserError as error:
            not_loading.append((best, why_not_loadable(error, best)))
    if chosen is None:
        if not_loading:
            reasons = "; ".join(f"{path.name}: {reason}" for path, reason in not_loading[:4])
            more = f" (and {len(not_loading) - 4} more)" if len(not_loading) > 4 else ""
            raise UserError(f"{flag}: none of the checkpoints of {model_name} in {output} loads ({reasons}{more}); "
                            "nothing was written over them: resume from a good copy with --checkpoint-path, or start "
                            "a new run in another -o/--output")
        return None
    (steps, epoch, batches), path = chosen
    if is_main:
        for skipped, reason in not_loading:
            print(f"warning: {flag}: skipping {skipped}: {reason}", file=sys.stderr, flush=True)
        position = f"epoch {epoch + 1}, batch {batches}" if batches > 0 else f"{epoch} epochs done"
        print(f"{flag}: {pointer_state}; resuming from {path}, {which} (step {steps}, {position})", flush=True)
    return path


def check_warm_start_args(settings: TrainingSettings, recipe) -> None:
    """--warm-start starts a new run from trained weights: it cannot be combined with resuming a given checkpoint, and
    only a family whose recipe offers it takes it. With --resume-from-last it applies only while the output folder has
    no checkpoint yet, so a preempted job can be requeued with the same command line."""
    if settings.ignore_layers and not settings.warm_start:
        raise UserError("--ignore-layers names weights that --warm-start leaves out; give --warm-start CKPT too")
    if not settings.warm_start:
        return
    if not recipe.warm_start:
        raise UserError(f"-m {recipe.name} does not take --warm-start (its README says how it starts from trained "
                        "weights)")
    if settings.checkpoint_path:
        raise UserError("--warm-start starts a new run from a checkpoint's weights, --checkpoint-path continues a run "
                        "with its optimizer and step: give one of them")


def warm_start(trainer) -> None:
    """--warm-start CKPT [--ignore-layers NAME ...] (NVIDIA/tacotron2's warm start): the weights of CKPT that fit go
    into the freshly built model, the others stay as initialised and are listed; optimizer, step and epoch start
    fresh (nothing but weights is read). A text model whose table differs from the checkpoint's is warned about:
    rows of its symbol embedding would belong to other symbols unless that layer is ignored or has another size."""
    settings, recipe = trainer.settings, trainer.recipe
    flag = "--warm-start"
    checkpoint = ckpt.load_checkpoint(settings.warm_start, expected_model=recipe.name, flag=flag)
    source = ckpt.describe_source(settings.warm_start, flag)
    skipped = ckpt.warm_start_weights(trainer.model, checkpoint, source, settings.ignore_layers)
    if not trainer.context.is_main:
        return
    print(f"warm start from {settings.warm_start}: fresh optimizer at step 0; {len(skipped)} weight(s) not loaded, "
          "left as initialised" + (":" if skipped else ""), flush=True)
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
        "args": flag_values(trainer.settings),
        "precision": trainer.precision,
        "resumed_epoch": resumed_epoch_in_progress(trainer),
    }


def resumed_epoch_in_progress(trainer) -> dict | None:
    """The train sampler's ResumedEpoch while its epoch lasts (a later resume in that epoch needs to know which items
    were taken before it), else None. A recipe's own sampler may not have one."""
    resumed = getattr(trainer.train_sampler, "resumed_epoch", None)
    return resumed.to_checkpoint() if resumed is not None and resumed.epoch == trainer.epoch else None


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
    check_text_front_end(state.get("text"), trainer.text, path)
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
            group.setdefault("initial_lr", trainer.settings.learning_rate)
            if "fused" in group:  # the saved group's choice would win: this run's --[no-]fused-optimizer does
                group["fused"] = optimizer.defaults["fused"]
    for name, scaler in trainer.scalers.items():  # checkpoints before 2026-11 held one scaler for every optimizer
        saved = state["scalers"][name] if "scalers" in state else state["scaler"]
        if saved:  # an empty state (a run without loss scaling) leaves this run's scaler as it is
            scaler.load_state_dict(saved)
    trainer.epoch, trainer.iteration = state["epoch"], state["iteration"]
    trainer.batches_done_in_epoch = state["batches_done_in_epoch"]
    trainer.epoch_sums = state["epoch_sums"].clone()
    trainer.skipped_steps = state["skipped_steps"]
    trainer.best_metric_value = state.get("best_metric_value", math.inf)  # older checkpoints: none yet
    if Path(path).resolve().parent == Path(trainer.settings.output).resolve():
        # Names of files in that folder: a run resumed into another folder must not delete what is there.
        trainer.retained_checkpoints = state.get("retained_checkpoints", [])
    resume_batching(trainer, state, path)
    rank, world_size = trainer.context.rank, trainer.context.world_size
    if state["world_size"] == world_size and state["rng_states"]:
        set_rng_state(rng_state_from_checkpoint(state["rng_states"][rank]))
    else:
        reason = (f"a {state['world_size']}-rank checkpoint" if state["rng_states"]
                  else "a checkpoint without this project's RNG states")
        print(f"resuming on {world_size} ranks from {reason}: RNG streams are re-seeded, so the run will not "
              "match the original exactly", flush=True)
        seed_everything(trainer.settings.seed + 7919 * trainer.epoch + rank)
    print(f"resumed from {path}: epoch {trainer.epoch}, step {trainer.iteration}, "
          f"{trainer.batches_done_in_epoch} batches into the epoch", flush=True)
    trained_in = state.get("precision")  # checkpoints before 2026-12 do not say
    if trained_in is not None and trained_in != trainer.precision and trainer.context.is_main:
        # A requeued job may land on a CPU of another kind, whose default differs: the run goes on, from the same
        # fp32 weights and optimizer state, but not step for step as it would have.
        print(f"note: {path} trained in {trained_in}, this run trains in {trainer.precision} (this machine's "
              f"default, or a flag); --{FLAG_OF_PRECISION[trained_in]} keeps its precision", file=sys.stderr, flush=True)
    trainer.fine_tune_epoch_start = state.get("fine_tune_epoch_start")
    in_place = trainer.recipe.in_place_start
    if in_place is not None and in_place.asked(trainer.settings) and trainer.fine_tune_epoch_start is None:
        in_place.start(trainer, path)
        # Recorded in every later checkpoint: the next load in this folder resumes this run and starts nothing again.
        trainer.fine_tune_epoch_start = trainer.epoch
        # The base run's checkpoints are not this run's to delete (NVIDIA's rotation deletes its base checkpoint):
        # from here --keep-last-checkpoints counts only this run's.
        trainer.retained_checkpoints = []


def check_text_front_end(saved: dict | None, text, path: Path) -> None:
    """The rows of a text model's symbol embedding (Tacotron 2) or output layer (wav2vec 2.0's letters) belong to the
    symbols of the front-end it was trained with: a resume with other cleaners, another language or another table
    would go on training each row on another symbol. A UserError naming the flag, unless they are the same (or the
    checkpoint does not say: another implementation's file, which used NVIDIA's default front-end)."""
    if saved is None or text is None:
        return
    current = text.to_dict()
    if saved == current:
        return
    fresh = f"or train that front-end from these weights in another -o/--output with --warm-start {path}"
    if "cleaners" in current and saved.get("cleaners") != current["cleaners"]:
        raise UserError(f"cannot resume from {path}: it was trained with --text-cleaners "
                        f"{' '.join(saved.get('cleaners', []))}, this run gives --text-cleaners "
                        f"{' '.join(current['cleaners'])}; give its --text-cleaners, {fresh}")
    if "cleaners" in current and saved.get("language") != current.get("language"):
        raise UserError(f"cannot resume from {path}: it was trained with --language {saved.get('language')}, this "
                        f"run gives --language {current.get('language')}; give its --language, {fresh}")
    before, now = list(saved.get("symbols", [])), list(current.get("symbols", []))
    first = next((index for index, (a, b) in enumerate(zip(before, now)) if a != b), min(len(before), len(now)))
    where = (f"id {first}: {before[first]!r} there, {now[first]!r} here" if first < min(len(before), len(now))
             else f"{len(before)} symbols there, {len(now)} here")
    table = ("--symbols-file or --symbols-from-filelist (which makes the table of the --training-files)"
             if "cleaners" in current else "the dictionary (dict.<--labels>.txt in --data)")
    raise UserError(f"cannot resume from {path}: its symbol table differs from this run's ({where}); give the table "
                    f"it was trained with ({table}), {fresh}")


# The flags that decide how an epoch is cut into batches and steps, as messages name them.
BATCHING_FLAGS = {"batch_size": "-bs", "max_tokens": "--max-tokens", "num_concat_batches": "--num-concat-batches",
                  "bucket_by_length": "--bucket-by-length", "seed": "--seed",
                  "grad_accumulation": "--grad-accumulation"}


def batching_differences(saved_args: dict, settings: TrainingSettings, saved_world_size: int,
                         world_size: int) -> list[str]:
    """How this run cuts epochs into batches differently from the checkpoint's run: ['-bs 4 -> 8', '2 -> 1 ranks']."""
    current = flag_values(settings)
    changes = [f"{flag} {saved_args[key]} -> {current[key]}" for key, flag in BATCHING_FLAGS.items()
               if key in saved_args and key in current and saved_args[key] != current[key]]
    if saved_world_size and saved_world_size != world_size:
        changes.append(f"{saved_world_size} -> {world_size} ranks")
    return changes


def resume_batching(trainer, state: dict, path: Path) -> None:
    """Set the train sampler up to go on where the checkpoint's run stopped in its epoch. With the same batching
    (batch size, ranks, --max-tokens, seed...) it skips the batches that run took, and the resume is exact. With
    other batching, skipping batches would skip other items (or more batches than the epoch now has): instead the
    sampler leaves out the items that run took this epoch and batches the others anew (common/sampler.py's
    ResumedEpoch). Either way one line says what changed; at an epoch's start nothing needs skipping."""
    settings, context = trainer.settings, trainer.context
    saved_args, saved_world_size = state.get("args") or {}, state.get("world_size") or 0
    epoch, done = trainer.epoch, trainer.batches_done_in_epoch
    changes = batching_differences(saved_args, settings, saved_world_size, context.world_size)
    sampler = trainer.train_sampler
    saved_resumed = ResumedEpoch.from_checkpoint(state.get("resumed_epoch"))
    if saved_resumed is not None and saved_resumed.epoch != epoch:
        saved_resumed = None
    if done == 0 or not saved_args or not saved_world_size:  # nothing taken yet this epoch, or no record of how
        if changes and context.is_main:
            print(f"resuming at the start of epoch {epoch + 1} with other batching than {path} "
                  f"({', '.join(changes)}): no item of the epoch is skipped or taken twice, but the loss curve will "
                  "not match an uninterrupted run", flush=True)
        return
    resumable = hasattr(sampler, "resume_epoch_without")
    if saved_resumed is not None and resumable:
        sampler.resume_epoch_without(saved_resumed)
    # The checkpoint's run's sampler, rebuilt from its flags (those it saved; the others are this run's).
    flags = flag_values(settings)
    saved_settings = dataclasses.replace(settings, **{key: value for key, value in saved_args.items() if key in flags})

    def checkpoints_sampler(rank: int):
        build = trainer.recipe.batch_sampler or fixed_size_batches
        built = build(saved_settings, trainer.data.train,
                      BatchingContext(training=True, seed=saved_settings.seed, rank=rank,
                                      world_size=saved_world_size))
        if saved_resumed is not None:
            built.resume_epoch_without(saved_resumed)
        built.set_epoch(epoch, saved_resumed.batches_before if saved_resumed is not None else 0)
        return built

    sampler.set_epoch(epoch, saved_resumed.batches_before if saved_resumed is not None else 0)
    if (saved_world_size == context.world_size
            and list(checkpoints_sampler(context.rank)) == list(sampler)):
        return  # the same batches: the trainer skips those taken, and the resume is exact
    if not resumable:
        raise UserError(f"cannot resume from {path}, {done} batches into epoch {epoch + 1}, with other batching "
                        f"({', '.join(changes) or 'batching flags'}): this model's batch sampler cannot leave out the "
                        "items already taken; give the checkpoint's values, or resume from a checkpoint of an "
                        "epoch's end with --checkpoint-path")
    taken = set(saved_resumed.seen_items.tolist()) if saved_resumed is not None else set()
    taken_after = done - (saved_resumed.batches_before if saved_resumed is not None else 0)
    for rank in range(saved_world_size):  # every rank of that run had taken `done` batches of the epoch
        for batch in itertools.islice(iter(checkpoints_sampler(rank)), taken_after):
            taken.update(batch_items(batch))
    sampler.resume_epoch_without(ResumedEpoch(epoch, torch.tensor(sorted(taken), dtype=torch.long), done))
    sampler.set_epoch(epoch, done)
    if context.is_main:
        print(f"resuming {done} batches into epoch {epoch + 1} with other batching than {path} "
              f"({', '.join(changes) or 'batching flags'}): the {len(taken)} items its run had taken this epoch are "
              f"left out and the others batched anew (batches left on this rank: {len(sampler)}); the loss curve "
              "will not match an uninterrupted run", flush=True)
