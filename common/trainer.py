"""The training loop every model shares; a model family plugs in through its Recipe (common/recipe.py).

What it does, in order: set up devices, precision and torch.distributed; seed; build the model, data and optimizers;
resume if asked (common/training_state.py); then train step by step (autocast, loss scaling, gradient accumulation
weighted by each micro-batch's items, clipping, skipping non-finite steps) until --epochs or --max-updates, whichever
comes first, validating and checkpointing at epoch ends or every N updates.

Long runs: periodic checkpoints are pruned as --keep-last-checkpoints says (common/checkpoint_retention.py), with
the disk space left logged at each; SIGTERM or SIGUSR1 stops every rank after the same step with a checkpoint
(common/preemption.py); a user error met by one rank mid-run (a broken audio file, a full disk) ends every rank
(common.distributed.fail_together) instead of leaving the others waiting; --max-skipped-steps ends a diverged run.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from common import checkpoint as ckpt
from common.arguments import audio_params_of, config_from_args
from common.checkpoint_retention import RetentionPolicy, disk_space_after_writing
from common.cpu import NO_NATIVE_BF16, native_bf16
from common.distributed import (DistributedContext, all_gather_objects, all_reduce_sum, any_rank, barrier,
                                fail_together, init_distributed, record_failure, shutdown, wrap_parts)
from common.errors import UserError
from common.logger import RunLogger
from common.output_folder import make_output_folder
from common.preemption import PREEMPTED_EXIT_CODE, StopRequests, ignore_stop_signals, stop_signals_held
from common.recipe import BatchingContext, Recipe, StepOutput
from common.sampler import fixed_size_batches
from common.schedules import schedule_of
from common.training_settings import TrainingSettings, flag_values
from common.training_state import (check_warm_start_args, find_resume_checkpoint, restore_training_state, rng_state,
                                   rng_state_for_checkpoint, seed_everything, set_rng_state, training_state, warm_start)


def configure_backends(settings: TrainingSettings) -> None:
    torch.backends.cudnn.enabled = settings.cudnn_enabled
    torch.backends.cudnn.benchmark = settings.cudnn_benchmark
    torch.backends.cuda.matmul.allow_tf32 = settings.tf32
    torch.backends.cudnn.allow_tf32 = settings.tf32


# The tolerance a family's bf16 training was held to before it became that family's default on a CPU with native
# bf16 (Recipe.bf16_on_native_cpu): from one seed on the same batches, the mean training loss of every tenth of a
# demo preset's run within this share of fp32's (experiments/cpu_bf16 measured it; tests/common/test_trainer_precision.py
# holds tiny models to it).
BF16_TRAINING_TOLERANCE = 0.05


def training_precision(settings: TrainingSettings, device: torch.device, recipe: Recipe) -> str:
    """"fp16" (--amp), "bf16" (--bf16) or "fp32" (--fp32), from a flag or a preset; with none of them, bf16 on a CPU
    that computes it natively for the families measured within BF16_TRAINING_TOLERANCE there
    (Recipe.bf16_on_native_cpu), else fp32. Autocast keeps the weights and the optimizer's state in fp32, so a
    checkpoint resumes in either precision."""
    if settings.amp:
        return "fp16"
    if settings.bf16:
        return "bf16"
    if not settings.fp32 and recipe.bf16_on_native_cpu and device.type == "cpu" and native_bf16():
        return "bf16"
    return "fp32"


def autocast_context(precision: str, device: torch.device):
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.float16 if precision == "fp16" else torch.bfloat16)


def summed_over_ranks(sums: dict[str, float]) -> dict[str, float]:
    """{name: value} added up across ranks (a rank without validation batches has an empty dict)."""
    totals: dict[str, float] = {}
    for rank_sums in all_gather_objects(sums):
        for name, value in rank_sums.items():
            totals[name] = totals.get(name, 0.0) + value
    return totals


def default_optimizers(model: nn.Module, settings: TrainingSettings) -> dict[str, torch.optim.Optimizer]:
    """Adam over every weight: a recipe's optimizer unless it builds its own (Recipe.build_optimizers)."""
    return {"model": torch.optim.Adam(model.parameters(), lr=settings.learning_rate,
                                      weight_decay=settings.weight_decay, fused=settings.fused_optimizer)}


class Trainer:
    """Trains recipe's model as `settings` (an instance of the family's Recipe.settings) say: the model that
    model_config builds (the family's build_model takes it; checkpoints save it). Trainer.from_args builds both from
    train.py's parsed flags."""

    @classmethod
    def from_args(cls, recipe: Recipe, args: argparse.Namespace) -> Trainer:
        """The trainer of train.py's parsed flags: the family's settings, its model_config and the audio flags."""
        settings = config_from_args(recipe.settings, args, audio=audio_params_of(args))
        return cls(recipe, settings, recipe.model_config(args))

    def __init__(self, recipe: Recipe, settings: TrainingSettings, model_config: dict):
        if not isinstance(settings, recipe.settings):
            raise TypeError(f"-m {recipe.name} trains with {recipe.settings.__name__}, not "
                            f"{type(settings).__name__}")
        if not settings.epochs and not settings.max_updates:
            raise UserError("say how long to train: --epochs N, --max-updates N, or both (the first reached ends)")
        self.recipe, self.settings = recipe, settings
        check_warm_start_args(settings, recipe)
        self.context: DistributedContext = init_distributed(force_cpu=settings.cpu, backend=settings.dist_backend,
                                                            timeout_minutes=settings.distributed_timeout)
        self.device = self.context.device
        self.precision = training_precision(settings, self.device, recipe)
        if self.precision == "bf16" and self.device.type == "cpu" and not native_bf16() and self.context.is_main:
            print(f"warning: --bf16: {NO_NATIVE_BF16}; --fp32 trains faster here", file=sys.stderr, flush=True)
        configure_backends(settings)
        seed_everything(settings.seed + self.context.rank)
        make_output_folder(settings.output, "the checkpoints and logs")
        if self.context.is_main:
            self.remove_stale_temporaries()

        self.audio_params = settings.audio
        self.text = recipe.text_processor(settings) if recipe.text_processor is not None else None
        self.model_config = model_config
        model = recipe.build_model(self.model_config)
        if recipe.init_weights is not None:
            recipe.init_weights(model, settings)
        self.model = model.to(self.device)  # unwrapped; self.parts holds the DDP-wrapped parts that train
        resume_from, resume_flag = (find_resume_checkpoint(settings, recipe, is_main=self.context.is_main)
                                    or (None, None))
        if settings.warm_start and resume_from is None:  # before compiling, which may rename the weights
            warm_start(self)
        if settings.compile and recipe.compile_model is not None:
            recipe.compile_model(self.model, settings)
        self.optimizers = (recipe.build_optimizers or default_optimizers)(self.model, settings)
        for optimizer in self.optimizers.values():
            for group in optimizer.param_groups:  # the schedule multiplies this; it is saved with the optimizer
                group.setdefault("initial_lr", group["lr"])
        # One loss scaler per optimizer: an fp16 overflow in one part's gradients does not skip the other's step.
        self.scalers = {name: torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")
                        for name in self.optimizers}
        self.step_skipped: set[str] = set()  # optimizers whose step this iteration saw a non-finite loss
        self.schedule = recipe.lr_schedule(settings) if recipe.lr_schedule is not None else schedule_of(settings)

        self.data = recipe.build_data(settings, self.model_config)
        self.train_sampler = self.batch_sampler(self.data.train, training=True)
        self.loader_generator = torch.Generator()
        self.train_loader = DataLoader(self.data.train, batch_sampler=self.train_sampler, collate_fn=self.data.collate,
                                       num_workers=settings.num_workers, generator=self.loader_generator,
                                       persistent_workers=False, pin_memory=self.device.type == "cuda",
                                       worker_init_fn=ignore_stop_signals)

        # Training progress; everything here goes into the checkpoint.
        self.epoch = 0  # index of the epoch in progress (epochs completed once it ends)
        self.iteration = 0  # optimizer steps taken
        self.batches_done_in_epoch = 0
        self.epoch_sums = torch.zeros(3, dtype=torch.float64)  # loss * steps, steps, items
        self.skipped_steps = 0
        self.best_metric_value = math.inf  # of recipe.best_checkpoint_metric
        self.retention = RetentionPolicy.of(settings)
        self.retained_checkpoints: list[list] = []  # [file name, is milestone] of the newest periodic checkpoints
        self.fine_tune_epoch_start: int | None = None  # where the recipe's InPlaceStart began (training_state.py)
        if resume_from is not None:
            restore_training_state(self, resume_from, resume_flag)
        self.first_epoch = self.epoch  # of this invocation, for --epochs-this-job
        self.validated_at = self.saved_at = None  # the iteration of the last validation and checkpoint
        self.last_checkpoint: Path | None = resume_from  # the last periodic checkpoint written or resumed from
        self.save_due = False
        self.skipped_in_a_row = 0  # steps, for --max-skipped-steps
        self.epoch_throughputs: list[float] = []  # items/s of each epoch, for --benchmark-epochs-num
        self.stop_requests = StopRequests()
        self.stopped_by: str | None = None  # the stop signal that ended the run early, if one did
        self.parts = wrap_parts(self.model, recipe.parts, self.context, recipe.find_unused_parameters)
        self.logger = RunLogger(Path(settings.output) / settings.log_file, settings.tensorboard_dir,
                                enabled=self.context.is_main)

    def batch_sampler(self, dataset: Dataset, training: bool):
        context = BatchingContext(training=training, seed=self.settings.seed, rank=self.context.rank,
                                  world_size=self.context.world_size)
        build = self.recipe.batch_sampler or fixed_size_batches
        return build(self.settings, dataset, context)

    def autocast(self):
        """The precision context of this run (training_precision's), for recipes' own train steps too."""
        return autocast_context(self.precision, self.device)

    # ---- the run -----------------------------------------------------------------------------------------------

    def finished(self, epochs_done: int | None = None) -> bool:
        """Whether --epochs, --max-updates or --epochs-this-job is reached (after `epochs_done` epochs if given)."""
        settings = self.settings
        epochs_done = self.epoch if epochs_done is None else epochs_done
        return bool((settings.epochs and epochs_done >= settings.epochs)
                    or (settings.max_updates and self.iteration >= settings.max_updates)
                    or (settings.epochs_this_job and epochs_done - self.first_epoch >= settings.epochs_this_job))

    def train(self) -> None:
        """Train until the run is finished or a stop signal came; Trainer.exit_status then says which."""
        try:
            with self.stop_requests:  # from here on SIGTERM and SIGUSR1 stop the run between two steps
                self.log_parameters()
                if self.finished() and self.context.is_main:
                    print(f"nothing to train: the resumed run has done {self.epoch} epochs and {self.iteration} "
                          f"updates (--epochs {self.settings.epochs}, --max-updates {self.settings.max_updates}); "
                          "raise them to train further", file=sys.stderr)
                while not self.finished() and self.stopped_by is None:
                    if self.train_epoch():  # False: --max-updates or a stop signal ended it early
                        self.end_epoch()
                if self.stopped_by is not None:
                    self.save_where_stopped()
                elif self.batches_done_in_epoch:  # --max-updates ended the run mid-epoch: validate, keep it
                    if self.validated_at != self.iteration:
                        self.validate()
                    if self.saved_at != self.iteration:
                        self.save(f"{self.epoch + 1}_{self.batches_done_in_epoch}")
            self.log_run_summary()
            # Ranks leave together, so none tears its process group down while rank 0 still writes the last
            # checkpoint. (The SIGABRT once seen at that point was gloo meeting the interpreter's teardown: see
            # common.distributed.run_entry_point.)
            barrier()
        except Exception as error:
            # Before shutdown() below ends this rank's connections: the other ranks, whose collectives with this
            # one then fail, must find the failure already written (common.distributed.FailureBoard).
            record_failure(error)
            raise
        finally:
            self.logger.close()
            shutdown()

    @property
    def exit_status(self) -> int:
        """What train.py exits with: 0 when the run is finished, PREEMPTED_EXIT_CODE when a signal stopped it."""
        return PREEMPTED_EXIT_CODE if self.stopped_by is not None else 0

    def stop_if_requested(self) -> bool:
        """Between two optimizer steps, on every rank: whether a stop signal reached some rank. All ranks agree (one
        all-reduce), so every rank stops after the same step, even when the signal reached only some."""
        if any_rank(self.stop_requests.received is not None)[0]:
            self.stopped_by = self.stop_requests.received or "a stop signal sent to another rank"
        return self.stopped_by is not None

    def save_where_stopped(self) -> None:
        """After a stop signal: a checkpoint of the step reached (unless one was just written), and how to go on."""
        if self.saved_at != self.iteration:
            self.save(f"{self.epoch + 1}_{self.batches_done_in_epoch}" if self.batches_done_in_epoch else self.epoch)
        if self.context.is_main:
            saved = "nothing was saved (--no-save)" if self.settings.no_save else f"saved {self.last_checkpoint}"
            print(f"stopped by {self.stopped_by} after step {self.iteration}: {saved}; the same command with "
                  f"--resume-from-last continues exactly from there (exit status {PREEMPTED_EXIT_CODE})", flush=True)

    def train_epoch(self) -> bool:
        """Train the rest of the epoch in progress; False if --max-updates or a stop signal ended it early."""
        settings = self.settings
        self.model.train()
        self.train_sampler.set_epoch(self.epoch, skip_batches=self.batches_done_in_epoch)
        if hasattr(self.data.train, "set_epoch"):
            self.data.train.set_epoch(self.epoch)
        self.loader_generator.manual_seed(settings.seed * 7 + self.epoch)  # worker seeds, without touching torch's RNG
        remaining = len(self.train_sampler)
        epoch_start = time.perf_counter()
        progress = self._progress_bar(remaining)
        with stop_signals_held():
            batches = iter(self.train_loader)
        while remaining > 0:
            step_start = time.perf_counter()
            micro_batches = self.next_micro_batches(batches, min(settings.grad_accumulation, remaining))
            remaining -= len(micro_batches)
            stepped_before, skipped_before = self.iteration, self.skipped_steps
            record = self.train_step(micro_batches)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            step_time = time.perf_counter() - step_start
            self.batches_done_in_epoch += len(micro_batches)
            if math.isfinite(record["train_loss"]):
                self.epoch_sums += torch.tensor([record["train_loss"], 1.0, record["items"]], dtype=torch.float64)
            record = {"train_loss": record.pop("train_loss"), "train_items_per_sec": record.pop("items") / step_time,
                      "train_iter_time": step_time, **record}
            self.logger.log([self.epoch + 1, self.batches_done_in_epoch], record,
                            echo=progress is None and not settings.quiet)
            self.logger.scalars(self.iteration, {f"train/{name}": value for name, value in record.items()})
            if progress is not None:
                progress.set_postfix(loss=f"{record['train_loss']:.4f}")
                progress.update(len(micro_batches))
            if self.iteration != stepped_before:
                self.after_update(epoch_ends=remaining == 0)
            self.stop_if_diverged(skipped=self.skipped_steps != skipped_before)
            if remaining and (self.finished() or self.stop_if_requested()):
                return False
        if progress is not None:
            progress.close()
        epoch_time = time.perf_counter() - epoch_start
        loss_sum, steps, items = self.epoch_sums.tolist()
        self.epoch_throughputs.append(items / epoch_time)
        self.logger.log([self.epoch + 1], {
            "train_loss": loss_sum / max(steps, 1),  # the mean over the epoch's steps, not the last one
            "train_items_per_sec": items / epoch_time, "train_epoch_time": epoch_time,
            "skipped_steps": self.skipped_steps,
        })
        return True

    def next_micro_batches(self, batches, count: int) -> list:
        """The epoch's next `count` batches. A broken file met while loading them (here or in a worker process: the
        error names the file and its filelist line) ends the run on every rank, not only on the rank that met it."""
        failure = None
        try:
            micro_batches = [next(batches) for _ in range(count)]
        except UserError as error:
            micro_batches, failure = [], error
        fail_together(failure)
        return micro_batches

    def stop_if_diverged(self, skipped: bool) -> None:
        """--max-skipped-steps N: N steps in a row skipped for a non-finite loss or gradient end the run. Skipped
        steps change no weights, so the last checkpoint holds the weights from before them. Every rank skips the
        same steps, so every rank stops here together."""
        self.skipped_in_a_row = self.skipped_in_a_row + 1 if skipped else 0
        limit = self.settings.max_skipped_steps
        if limit and self.skipped_in_a_row >= limit:
            remedy = "a lower learning rate, or bf16 or fp32 instead of --amp"
            what_to_do = (f"the last checkpoint, {self.last_checkpoint}, holds the weights from before them: resume "
                          f"from it with --checkpoint-path and {remedy}" if self.last_checkpoint
                          else f"no checkpoint was written before them: start again with {remedy}")
            raise UserError(f"--max-skipped-steps {limit}: {limit} steps in a row had a non-finite loss or gradient "
                            f"(the last at epoch {self.epoch + 1}, batch {self.batches_done_in_epoch}); {what_to_do}")

    def after_update(self, epoch_ends: bool) -> None:
        """Validation and checkpoints every N updates (--val-interval-updates, --save-interval-updates)."""
        settings = self.settings
        if settings.val_interval_updates and self.iteration % settings.val_interval_updates == 0:
            self.validate()
        if settings.save_interval_updates and self.iteration % settings.save_interval_updates == 0:
            if epoch_ends:
                self.save_due = True  # saved by end_epoch, once the epoch is validated and counted
            else:
                self.save(f"{self.epoch + 1}_{self.batches_done_in_epoch}")  # epoch in progress, batches done

    def end_epoch(self) -> None:
        """Validate (every --val-interval-epochs epochs and at the end), count the epoch, checkpoint (every
        --epochs-per-checkpoint epochs and at the end), then heed a stop signal."""
        settings = self.settings
        epochs_done = self.epoch + 1
        if not settings.val_interval_updates and (epochs_done % settings.val_interval_epochs == 0
                                              or self.finished(epochs_done)):
            self.validate(epoch_end=True)
        self.epoch = epochs_done
        self.batches_done_in_epoch = 0
        self.epoch_sums.zero_()
        if ((settings.epochs_per_checkpoint and self.epoch % settings.epochs_per_checkpoint == 0) or self.finished()
                or self.save_due):
            self.save(self.epoch)
            self.save_due = False
        if not self.finished():
            self.stop_if_requested()

    # ---- one optimizer step ------------------------------------------------------------------------------------

    def train_step(self, micro_batches: list) -> dict:
        """Forward and backward of the micro-batches of one step, then the optimizer step(s). Returns the record to
        log: the step's mean loss over every rank, its items, the recipe's metrics and gradient norms."""
        recipe, settings = self.recipe, self.settings
        multiplier = self.schedule.multiplier(self.epoch, self.iteration)
        if recipe.set_num_updates is not None:
            recipe.set_num_updates(self.model, self.iteration)
        for optimizer in self.optimizers.values():
            for group in optimizer.param_groups:
                group["lr"] = group["initial_lr"] * multiplier
        self.grad_norms = {}
        if recipe.train_step is not None:  # e.g. a GAN: the recipe orders its own backward passes and steps
            batches = [recipe.batch_to_device(batch, self.device) for batch in micro_batches]
            outputs = [(recipe.train_step(self.parts, batches, settings, self), 1.0)]
        else:
            outputs = self.accumulate_gradients(micro_batches)
            self.step("model")
        if self.grad_norms:  # an optimizer stepped (not every loss of the step was skipped)
            self.iteration += 1

        # One all-reduce for the record: loss, metrics (weighted like the gradient) and items over every rank.
        names = sorted(outputs[0][0].metrics)
        local = torch.zeros(3 + len(names), dtype=torch.float64)  # loss * weight, weight, items, metric * weight
        for output, weight in outputs:
            local += torch.tensor([output.loss.item() * weight, weight, output.items,
                                   *(float(output.metrics[name]) * weight for name in names)], dtype=torch.float64)
        loss_sum, weight_sum, items, *metric_sums = all_reduce_sum(local).tolist()
        record = {"train_loss": loss_sum / weight_sum, "items": items,
                  "lr": self.optimizers[next(iter(self.optimizers))].param_groups[0]["lr"]}
        record.update({f"train_{name}": value / weight_sum for name, value in zip(names, metric_sums)})
        record.update({f"grad_norm_{name}" if len(self.optimizers) > 1 else "grad_norm": float(norm)
                       for name, norm in self.grad_norms.items()})
        return record

    def accumulate_gradients(self, micro_batches: list) -> list[tuple[StepOutput, float]]:
        """Backward of each micro-batch, weighted so that the step's gradient is the mean over all its loss items on
        every rank; only the last backward synchronises gradients across ranks. Stops at a loss that is not finite
        on some rank (the step is then skipped). Returns the (output, weight) pairs."""
        recipe, model = self.recipe, self.parts["model"]
        weights = [float(recipe.loss_items(batch, self.settings)) if recipe.loss_items is not None else 1.0
                   for batch in micro_batches]
        total_weight = all_reduce_sum(torch.tensor(sum(weights), dtype=torch.float64)).item()
        outputs = []
        for index, (batch, weight) in enumerate(zip(micro_batches, weights)):
            batch = recipe.batch_to_device(batch, self.device)
            with self.gradient_sync("model", index == len(micro_batches) - 1):
                with self.autocast():
                    output = recipe.compute_loss(model, batch, self.settings)
                outputs.append((output, weight))
                # DDP averages gradients over ranks, hence world_size in the numerator.
                if not self.backward(output.loss, "model", weight * self.context.world_size / total_weight):
                    break
        return outputs

    # The building blocks of a step, for recipes' own train_step too (a GAN: D backward and step, then G's): what
    # common.recipe.TrainerView types, with device, iteration, model and optimizers.

    def gradient_sync(self, part: str, enabled: bool):
        """Context for backward passes of `part`: with enabled=False (an accumulation micro-batch before the last)
        DDP keeps the gradients local instead of all-reducing them."""
        wrapped = self.parts[part]
        return wrapped.no_sync() if self.context.is_distributed and not enabled else nullcontext()

    def backward(self, loss: torch.Tensor, name: str, weight: float = 1.0) -> bool:
        """Backward of loss * weight into the gradients optimizer `name` will apply, through its loss scaler. A loss
        that is not finite on some rank (every rank agrees, or DDP would hang) marks that optimizer's step as
        skipped and is not back-propagated; returns whether it was."""
        finite = all_reduce_sum(torch.tensor(float(torch.isfinite(loss.detach()).item()), device=self.device))
        if finite.item() != self.context.world_size:
            self.step_skipped.add(name)
            return False
        self.scalers[name].scale(loss * weight if weight != 1.0 else loss).backward()
        return True

    def step(self, name: str) -> bool:
        """Apply optimizer `name`: unscale, clip (unless --grad-clip-thresh is 0), step and update its loss scaler,
        then clear its gradients. A step marked skipped by backward() is dropped and counted, and so is an fp16
        overflow. Returns whether the step was applied."""
        optimizer, scaler = self.optimizers[name], self.scalers[name]
        if name in self.step_skipped:
            self.step_skipped.discard(name)
            self.skipped_steps += 1
            optimizer.zero_grad(set_to_none=True)
            return False
        scaler.unscale_(optimizer)
        parameters = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if self.settings.grad_clip_thresh > 0:
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, self.settings.grad_clip_thresh)
        else:
            grad_norm = torch.nn.utils.get_total_norm([p.grad for p in parameters])
        if not scaler.is_enabled() and not torch.isfinite(grad_norm):
            # A finite loss whose gradient overflowed (no loss scaler to catch it): skipped, as the scaler would.
            self.skipped_steps += 1
            optimizer.zero_grad(set_to_none=True)
            return False
        scale_before = scaler.get_scale() if scaler.is_enabled() else None
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        self.grad_norms[name] = grad_norm.detach()
        if scale_before is not None and scaler.get_scale() < scale_before:
            self.skipped_steps += 1  # fp16 overflow: the scaler skipped this step
            return False
        return True

    # ---- validation and checkpoints ----------------------------------------------------------------------------

    @torch.no_grad()
    def validate(self, epoch_end: bool = False) -> None:
        """The loss (and the recipe's corpus-level metrics) over the whole validation set, every rank taking its
        share and the sums added across ranks; then the recipe's report on one batch, on rank 0."""
        settings, recipe = self.settings, self.recipe
        # Validation's random draws (Tacotron 2's always-on prenet dropout, WaveGlow's sampling noise) must not move
        # training's random stream: a run validated at other points trains the same.
        training_rng = rng_state()
        self.model.eval()
        loader = DataLoader(self.data.validation, batch_sampler=self.batch_sampler(self.data.validation, False),
                            collate_fn=self.data.collate, num_workers=0)
        loss_sums = torch.zeros(2, dtype=torch.float64)  # loss * items, items
        metric_sums: dict[str, float] = {}
        output_sums: dict[str, float] = {}
        first_batch = None
        start = time.perf_counter()
        failure = None
        try:
            for batch in loader:
                batch = recipe.batch_to_device(batch, self.device)
                first_batch = batch if first_batch is None else first_batch
                with self.autocast():
                    output = recipe.compute_loss(self.model, batch, settings)
                # Weighted by items (frames or samples): the mean over the whole set, whatever the batch sizes.
                loss_sums += torch.tensor([output.loss.item() * output.items, output.items], dtype=torch.float64)
                for name, value in output.metrics.items():  # the loss's parts and the like, weighted as the loss
                    output_sums[name] = output_sums.get(name, 0.0) + float(value) * output.items
                for name, value in output.sums.items():  # corpus-level counts, added as they are
                    metric_sums[name] = metric_sums.get(name, 0.0) + float(value)
        except UserError as error:  # a broken file: every rank stops, instead of the others waiting for this one
            failure = error
        fail_together(failure)
        loss_sum, items = all_reduce_sum(loss_sums).tolist()
        elapsed = time.perf_counter() - start
        record = {"val_loss": loss_sum / items if items > 0 else float("nan"),
                  "val_items_per_sec": items / max(elapsed, 1e-9)}
        if items > 0:
            record.update({f"val_{name}": value / items for name, value in summed_over_ranks(output_sums).items()})
        totals = summed_over_ranks(metric_sums)
        if totals:
            record.update(recipe.validation_metrics(totals) if recipe.validation_metrics is not None
                          else {f"val_{name}": value for name, value in totals.items()})
        if self.context.is_main and recipe.validation_report is not None and first_batch is not None:
            report = recipe.validation_report(self.model, first_batch, settings)
            record.update(report.get("scalars", {}))
            for name, image in report.get("images", {}).items():
                self.logger.image(f"validation/{name}", image, self.iteration)
            for name, audio in report.get("audio", {}).items():
                self.logger.audio(f"validation/{name}", audio, self.iteration, self.audio_params.sampling_rate)
        step = [self.epoch + 1] if epoch_end else [self.epoch + 1, self.batches_done_in_epoch]
        self.logger.log(step, record)
        self.logger.scalars(self.iteration, {f"validation/{name}": value for name, value in record.items()})
        self.model.train()
        set_rng_state(training_rng)
        self.validated_at = self.iteration
        best = recipe.best_checkpoint_metric
        if best is not None and math.isfinite(record.get(best, math.nan)) and record[best] < self.best_metric_value:
            self.best_metric_value = record[best]
            self.save("best", point_last=False)
            if self.context.is_main:
                print(f"new best {best} {record[best]:.4f}", flush=True)

    def save(self, name_epoch: int | str, point_last: bool = True) -> None:
        """checkpoint_<model>_<name_epoch>.pt, written by rank 0 for every rank. point_last: a periodic checkpoint,
        which the `last` link then points at and --keep-last-checkpoints prunes; the best checkpoint is not one.
        A failed write (a full disk) ends every rank with the error."""
        if self.settings.no_save:
            return
        rng_states = all_gather_objects(rng_state_for_checkpoint(rng_state()))  # every rank takes part
        path = ckpt.checkpoint_path(self.settings.output, self.recipe.name, name_epoch)
        outdated: list[str] = []
        if point_last:
            milestone = self.retention.is_milestone(self.iteration, name_epoch if isinstance(name_epoch, int) else None)
            self.retained_checkpoints, outdated = self.retention.after_writing(self.retained_checkpoints, path.name,
                                                                               milestone)
        failure = None
        if self.context.is_main:
            try:
                self.write_checkpoint(path, rng_states, point_last, outdated)
            except UserError as error:
                failure = error
        fail_together(failure)  # also what holds the other ranks until the checkpoint is written
        if point_last:
            self.saved_at, self.last_checkpoint = self.iteration, path

    def remove_stale_temporaries(self) -> None:
        """At start-up, on rank 0: the half-written checkpoints a killed run left in the output folder (see
        common.checkpoint.remove_stale_temporaries), said once."""
        removed = ckpt.remove_stale_temporaries(self.settings.output, self.recipe.name)
        if removed:
            print(f"removed {len(removed)} half-written checkpoint file(s) left by a run killed while saving: "
                  f"{', '.join(path.name for path in removed)}", flush=True)

    def write_checkpoint(self, path: Path, rng_states: list, point_last: bool, outdated: list[str]) -> None:
        """Rank 0's part of save(): the file, the `last` link, only then the deletion of outdated checkpoints, and a
        note of the space left on the disk (a warning when the next checkpoint would not fit)."""
        ckpt.save_checkpoint(training_state(self, rng_states), path)
        if point_last:
            ckpt.point_last_checkpoint_to(self.settings.output, self.recipe.name, path)
        for name in outdated:
            (path.parent / name).unlink(missing_ok=True)
        space = disk_space_after_writing(path)
        print(f"saved checkpoint {path} ({ckpt.bytes_in_words(space.checkpoint_bytes)}, "
              f"{ckpt.bytes_in_words(space.free_bytes)} left on its disk)", flush=True)
        self.logger.log([], {"iteration": self.iteration, "checkpoint_bytes": space.checkpoint_bytes,
                             "disk_free_bytes": space.free_bytes}, echo=False)
        if not space.next_checkpoint_fits:
            print(f"warning: {ckpt.bytes_in_words(space.free_bytes)} left on the disk of {path.parent}, less than "
                  f"the last checkpoint ({ckpt.bytes_in_words(space.checkpoint_bytes)}): the next save will fail; "
                  "free space, or keep fewer checkpoints (--keep-last-checkpoints)", file=sys.stderr, flush=True)

    # ---- logging helpers ---------------------------------------------------------------------------------------

    def log_run_summary(self) -> None:
        summary = {"run_time": time.time() - self.logger.start_time, "epochs": self.epoch,
                   "iterations": self.iteration, "skipped_steps": self.skipped_steps}
        last = self.settings.benchmark_epochs_num
        last_epochs = self.epoch_throughputs[-last:] if last else []
        if last_epochs:  # NVIDIA's benchmark figure: the mean throughput of the last N epochs of this job
            summary["train_benchmark_items_per_sec"] = sum(last_epochs) / len(last_epochs)
        self.logger.log([], summary)

    def log_parameters(self) -> None:
        unit, settings = self.recipe.items_unit, self.settings
        batch_size = getattr(self.train_sampler, "batch_size", None)  # None when batches vary (max-tokens)
        global_batch = batch_size * self.context.world_size * settings.grad_accumulation if batch_size else None
        self.logger.parameters({"model_name": self.recipe.name, "world_size": self.context.world_size,
                                "device": str(self.device), "global_batch_size": global_batch,
                                **flag_values(settings), "precision": self.precision, **self.audio_params.to_dict(),
                                "model_config": self.model_config})
        for metric, metric_unit in [("train_loss", None), ("val_loss", None), ("train_items_per_sec", f"{unit}/s"),
                                    ("val_items_per_sec", f"{unit}/s"), ("train_iter_time", "s"),
                                    ("train_epoch_time", "s"), ("run_time", "s")]:
            self.logger.metadata(metric, metric_unit)
        if self.context.is_main:
            parameters = sum(p.numel() for p in self.model.parameters())
            batching = f", global batch {global_batch}" if global_batch else ""
            print(f"{self.recipe.name}: {parameters:,} parameters, {len(self.data.train)} training and "
                  f"{len(self.data.validation)} validation items, {self.context.world_size} process(es) on "
                  f"{self.device} in {self.precision}{batching}", flush=True)

    def _progress_bar(self, total: int):
        """A tqdm bar on a terminal; in a log file (no terminal) per-iteration DLL lines instead."""
        if self.settings.quiet or not self.context.is_main or not sys.stderr.isatty():
            return None
        from tqdm import tqdm

        limit = f"/{self.settings.epochs}" if self.settings.epochs else ""
        return tqdm(total=total, desc=f"epoch {self.epoch + 1}{limit}", leave=False, dynamic_ncols=True)
