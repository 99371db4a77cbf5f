"""The training loop every model shares; a model family plugs in through its Recipe (common/recipe.py).

What it does, in order: set up devices, precision and torch.distributed; seed; build the model, data and optimizer;
resume if asked; then for each epoch train (autocast, loss scaling, gradient accumulation and clipping, skipping
non-finite steps), validate, log and checkpoint. A resumed run reproduces the loss curve of an uninterrupted one:
the checkpoint holds the model, optimizers, scaler, epoch, step, position in the epoch, running epoch sums and the
RNG states of every rank, and the data order is a function of (seed, epoch) alone.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from common import checkpoint as ckpt
from common.audio import AudioParams
from common.distributed import (DistributedContext, all_gather_objects, all_reduce_sum, barrier, init_distributed,
                                shutdown)
from common.logger import RunLogger
from common.recipe import Recipe
from common.sampler import EpochBatchSampler
from common.schedules import EpochAnnealSchedule


# ---------------------------------------------------------------------------------------------------------------
# Set-up helpers


def configure_backends(args: argparse.Namespace) -> None:
    torch.backends.cudnn.enabled = args.cudnn_enabled
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def autocast_context(args: argparse.Namespace, device: torch.device):
    if args.amp:
        return torch.autocast(device.type, dtype=torch.float16)
    if args.bf16:
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


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


def _rng_state_for_checkpoint(state: dict) -> dict:
    """numpy and python RNG states as plain lists/tensors, so the checkpoint loads with weights_only=True."""
    kind, keys, position, has_gauss, cached_gauss = state["numpy"]
    version, internal, gauss_next = state["python"]
    saved = {"torch": state["torch"], "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss,
                                                cached_gauss],
             "python": [version, list(internal), gauss_next]}
    if "cuda" in state:
        saved["cuda"] = state["cuda"]
    return saved


def _rng_state_from_checkpoint(saved: dict) -> dict:
    kind, keys, position, has_gauss, cached_gauss = saved["numpy"]
    version, internal, gauss_next = saved["python"]
    state = {"torch": saved["torch"], "numpy": (kind, keys.numpy().astype(np.uint32), position, has_gauss,
                                                cached_gauss),
             "python": (version, tuple(internal), gauss_next)}
    if "cuda" in saved:
        state["cuda"] = saved["cuda"]
    return state


def initialize_batchnorm_uniform(model: nn.Module) -> None:
    """The reference re-draws every BatchNorm weight from U(0, 1); kept for parity unless disabled."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.affine:
            nn.init.uniform_(module.weight)


def unwrap(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, DistributedDataParallel) else model


def find_resume_checkpoint(args: argparse.Namespace, model_name: str) -> Path | None:
    if args.checkpoint_path:
        return Path(args.checkpoint_path)
    if args.resume_from_last:
        pointer = ckpt.last_checkpoint_pointer(args.output, model_name)
        if pointer.exists():
            return pointer.resolve()
        print(f"--resume-from-last: no {pointer} yet, starting from scratch", flush=True)
    return None


# ---------------------------------------------------------------------------------------------------------------
# The trainer


class Trainer:
    def __init__(self, recipe: Recipe, args: argparse.Namespace):
        self.recipe, self.args = recipe, args
        self.context: DistributedContext = init_distributed(force_cpu=args.cpu, backend=args.dist_backend)
        self.device = self.context.device
        configure_backends(args)
        seed_everything(args.seed + self.context.rank)
        Path(args.output).mkdir(parents=True, exist_ok=True)

        self.audio_params = AudioParams.from_args(args)
        self.text = None
        if recipe.uses_text:
            from common.text import TextProcessor

            self.text = TextProcessor(args.text_cleaners)
        self.model_config = recipe.model_config(args)
        model = recipe.build_model(self.model_config)
        if not args.disable_uniform_initialize_bn_weight:
            initialize_batchnorm_uniform(model)
        self.model = model.to(self.device)
        if recipe.build_optimizers is not None:
            self.optimizers = recipe.build_optimizers(self.model, args)
        else:
            self.optimizers = {"model": torch.optim.Adam(self.model.parameters(), lr=args.learning_rate,
                                                         weight_decay=args.weight_decay)}
        if recipe.train_step is not None and args.grad_accumulation != 1:
            raise ValueError(f"--grad-accumulation is not supported by {recipe.name}'s own training step")
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=args.amp)  # one scaler serves every optimizer
        self.schedule = (recipe.lr_schedule(args) if recipe.lr_schedule is not None
                         else EpochAnnealSchedule(args.learning_rate, args.anneal_steps, args.anneal_factor))

        self.data = recipe.build_data(args, self.audio_params)
        self.train_sampler = EpochBatchSampler(
            len(self.data.train), args.batch_size, shuffle=True, drop_last=True, seed=args.seed,
            rank=self.context.rank, world_size=self.context.world_size,
            lengths=getattr(self.data.train, "bucket_lengths", None) if getattr(args, "bucket_by_length", False)
            else None)
        self.loader_generator = torch.Generator()
        self.train_loader = DataLoader(self.data.train, batch_sampler=self.train_sampler, collate_fn=self.data.collate,
                                       num_workers=args.num_workers, generator=self.loader_generator,
                                       persistent_workers=False, pin_memory=self.device.type == "cuda")

        # Training progress; everything here goes into the checkpoint.
        self.epoch = 0  # index of the epoch in progress (epochs completed once it ends)
        self.iteration = 0  # optimizer steps taken
        self.batches_done_in_epoch = 0
        self.epoch_sums = torch.zeros(3, dtype=torch.float64)  # loss * batches, batches, items
        self.skipped_steps = 0

        resume_from = find_resume_checkpoint(args, recipe.name)
        if resume_from is not None:
            self.restore(resume_from)
        if self.context.is_distributed:
            self.model = DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)

        self.logger = RunLogger(Path(args.output) / args.log_file, args.tensorboard_dir,
                                enabled=self.context.is_main)

    # ---- checkpoints ------------------------------------------------------------------------------------------

    def checkpoint_state(self) -> dict:
        rng_states = all_gather_objects(_rng_state_for_checkpoint(rng_state()))
        return {
            "format_version": ckpt.FORMAT_VERSION,
            "model_name": self.recipe.name,
            "model_config": self.model_config,
            "audio_params": self.audio_params.to_dict(),
            "text": self.text.to_dict() if self.text is not None else None,
            "state_dict": unwrap(self.model).state_dict(),
            "optimizers": {name: optimizer.state_dict() for name, optimizer in self.optimizers.items()},
            "scaler": self.scaler.state_dict(),
            "lr_schedule": self.schedule.state_dict(),
            "epoch": self.epoch,
            "iteration": self.iteration,
            "batches_done_in_epoch": self.batches_done_in_epoch,
            "epoch_sums": self.epoch_sums.clone(),
            "skipped_steps": self.skipped_steps,
            "world_size": self.context.world_size,
            "rng_states": rng_states,
            "args": {key: value for key, value in vars(self.args).items()
                     if isinstance(value, (str, int, float, bool, list, type(None)))},
        }

    def save(self, name_epoch: int | str) -> None:
        state = self.checkpoint_state()  # every rank takes part in gathering the RNG states
        if self.context.is_main:
            path = ckpt.checkpoint_path(self.args.output, self.recipe.name, name_epoch)
            ckpt.save_checkpoint(state, path)
            ckpt.point_last_checkpoint_to(self.args.output, self.recipe.name, path)
            print(f"saved checkpoint {path}", flush=True)
        barrier()

    def restore(self, path: Path) -> None:
        state = ckpt.load_checkpoint(path, expected_model=self.recipe.name)
        for key in ("model_config", "audio_params", "optimizers", "epoch", "iteration", "rng_states"):
            if key not in state:
                raise ValueError(f"{path} is not a training checkpoint of this project (no '{key}'); "
                                 "to start from its weights use it for inference or fine-tuning instead")
        if state["model_config"] != self.model_config:
            changed = sorted(key for key in set(state["model_config"]) | set(self.model_config)
                             if state["model_config"].get(key) != self.model_config.get(key))
            raise ValueError(f"cannot resume from {path}: model flags differ from the checkpoint's in {changed}")
        AudioParams.from_dict(state["audio_params"]).check_matches(self.audio_params, str(path), "this run's flags")
        ckpt.load_model_state(self.model, ckpt.model_state_from_checkpoint(state), str(path))
        if sorted(state["optimizers"]) != sorted(self.optimizers):
            raise ValueError(f"{path} holds optimizers {sorted(state['optimizers'])}, this run has "
                             f"{sorted(self.optimizers)}")
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state["optimizers"][name])
        self.scaler.load_state_dict(state["scaler"])
        self.epoch, self.iteration = state["epoch"], state["iteration"]
        self.batches_done_in_epoch = state["batches_done_in_epoch"]
        self.epoch_sums = state["epoch_sums"].clone()
        self.skipped_steps = state["skipped_steps"]
        if state["world_size"] == self.context.world_size:
            set_rng_state(_rng_state_from_checkpoint(state["rng_states"][self.context.rank]))
        else:
            print(f"resuming on {self.context.world_size} ranks from a {state['world_size']}-rank checkpoint: "
                  "RNG streams are re-seeded, so the run will not match the original exactly", flush=True)
            seed_everything(self.args.seed + 7919 * self.epoch + self.context.rank)
        print(f"resumed from {path}: epoch {self.epoch}, step {self.iteration}, "
              f"{self.batches_done_in_epoch} batches into the epoch", flush=True)

    # ---- one optimizer step ------------------------------------------------------------------------------------

    def all_ranks_finite(self, loss: torch.Tensor) -> bool:
        # Every rank must agree to skip, or DDP's collectives would hang.
        finite = all_reduce_sum(torch.tensor(float(torch.isfinite(loss.detach()).item()), device=self.device))
        return finite.item() == self.context.world_size

    def step_optimizer(self, name: str) -> torch.Tensor:
        """Unscale, clip and apply the gradients of one optimizer; returns the gradient norm before clipping."""
        optimizer = self.optimizers[name]
        self.scaler.unscale_(optimizer)
        parameters = [p for group in optimizer.param_groups for p in group["params"]]
        grad_norm = torch.nn.utils.clip_grad_norm_(parameters, self.args.grad_clip_thresh)
        self.scaler.step(optimizer)
        optimizer.zero_grad(set_to_none=True)
        return grad_norm.detach()

    def backward_and_step(self, loss: torch.Tensor, name: str) -> bool:
        """For a recipe's own train_step: backward of `loss` and a step of optimizer `name`, unless the loss is
        not finite on some rank (then the step is skipped and counted). Returns whether it stepped."""
        # Gradients left on these parameters by another loss's backward (the generator's loss runs through the
        # discriminator) must not leak into this step.
        self.optimizers[name].zero_grad(set_to_none=True)
        if not self.all_ranks_finite(loss):
            self.skipped_steps += 1
            return False
        self.scaler.scale(loss).backward()
        self.grad_norms[name] = self.step_optimizer(name)
        return True

    def train_batch(self, batch, batch_index: int, accumulate_more: bool) -> tuple[torch.Tensor, int, dict]:
        """Forward and backward of one batch; steps the optimizer(s) unless more batches are to be accumulated."""
        args = self.args
        scale_before = self.scaler.get_scale() if self.scaler.is_enabled() else None
        self.grad_norms = {}
        if self.recipe.train_step is not None:  # e.g. a GAN: the recipe orders its own optimizer steps
            output = self.recipe.train_step(self.model, batch, args, self)
        else:
            sync = self.model.no_sync() if accumulate_more and self.context.is_distributed else nullcontext()
            with sync:
                with self.autocast():
                    output = self.recipe.compute_loss(self.model, batch, args)
                if not self.all_ranks_finite(output.loss):
                    self.skipped_steps += 1
                    self.optimizers["model"].zero_grad(set_to_none=True)
                    return output.loss.detach(), output.items, output.metrics
                self.scaler.scale(output.loss / args.grad_accumulation).backward()
            if accumulate_more:
                return output.loss.detach(), output.items, output.metrics
            self.grad_norms["model"] = self.step_optimizer("model")
        if not self.grad_norms:  # nothing stepped (every loss of the batch was skipped)
            return output.loss.detach(), output.items, output.metrics
        self.scaler.update()
        if scale_before is not None and self.scaler.get_scale() < scale_before:
            self.skipped_steps += 1  # fp16 overflow: the scaler skipped this step
        self.iteration += 1
        norms = {f"grad_norm_{name}" if len(self.optimizers) > 1 else "grad_norm": norm
                 for name, norm in self.grad_norms.items()}
        return output.loss.detach(), output.items, {**output.metrics, **norms}

    def autocast(self):
        """The precision context of this run (--amp, --bf16 or none), for recipes' own train steps too."""
        return autocast_context(self.args, self.device)

    # ---- epochs ------------------------------------------------------------------------------------------------

    def train(self) -> None:
        args = self.args
        self.log_parameters()
        if self.epoch >= args.epochs and self.context.is_main:
            print(f"nothing to train: the resumed run has done {self.epoch} epochs and --epochs is {args.epochs}; "
                  "raise --epochs to train further", file=sys.stderr)
        try:
            while self.epoch < args.epochs:
                self.train_epoch()
                self.validate()
                self.epoch += 1
                self.batches_done_in_epoch = 0
                self.epoch_sums.zero_()
                if self.epoch % args.epochs_per_checkpoint == 0 or self.epoch == args.epochs:
                    self.save(self.epoch)
            self.logger.log([], {"run_time": time.time() - self.logger.start_time, "epochs": self.epoch,
                                 "iterations": self.iteration, "skipped_steps": self.skipped_steps})
        finally:
            self.logger.close()
            shutdown()

    def train_epoch(self) -> None:
        args, recipe = self.args, self.recipe
        self.model.train()
        self.train_sampler.set_epoch(self.epoch, skip_batches=self.batches_done_in_epoch)
        if hasattr(self.data.train, "set_epoch"):
            self.data.train.set_epoch(self.epoch)
        self.loader_generator.manual_seed(args.seed * 7 + self.epoch)  # worker seeds, without touching torch's RNG
        batches_per_epoch = self.batches_done_in_epoch + len(self.train_sampler)
        epoch_start = time.perf_counter()
        progress = self._progress_bar(len(self.train_sampler))
        iteration_start = time.perf_counter()
        for batch in self.train_loader:
            learning_rate = self.schedule.lr_at(self.epoch, self.iteration)
            for optimizer in self.optimizers.values():
                for group in optimizer.param_groups:
                    group["lr"] = learning_rate
            batch = recipe.batch_to_device(batch, self.device)
            index = self.batches_done_in_epoch
            accumulate_more = (index + 1) % args.grad_accumulation != 0 and index + 1 < batches_per_epoch
            loss, items, metrics = self.train_batch(batch, index, accumulate_more)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            iteration_time = time.perf_counter() - iteration_start
            totals = all_reduce_sum(torch.tensor([loss.item(), float(items)], dtype=torch.float64))
            mean_loss = totals[0].item() / self.context.world_size
            if math.isfinite(mean_loss):
                self.epoch_sums += torch.tensor([mean_loss, 1.0, totals[1].item()], dtype=torch.float64)
            self.batches_done_in_epoch += 1
            record = {"train_loss": mean_loss, "train_items_per_sec": totals[1].item() / iteration_time,
                      "train_iter_time": iteration_time, "lr": learning_rate}
            record.update({f"train_{name}": float(value) for name, value in metrics.items()})
            self.logger.log([self.epoch + 1, self.batches_done_in_epoch], record,
                            echo=progress is None and not args.quiet)
            self.logger.scalars(self.iteration, {f"train/{name}": value for name, value in record.items()})
            if progress is not None:
                progress.set_postfix(loss=f"{mean_loss:.4f}")
                progress.update(1)
            if args.iters_per_checkpoint and not accumulate_more and self.iteration % args.iters_per_checkpoint == 0:
                self.save(f"{self.epoch + 1}_{self.batches_done_in_epoch}")  # epoch in progress, batches done
            iteration_start = time.perf_counter()
        if progress is not None:
            progress.close()
        epoch_time = time.perf_counter() - epoch_start
        loss_sum, batches, items = self.epoch_sums.tolist()
        self.logger.log([self.epoch + 1], {
            "train_loss": loss_sum / max(batches, 1),  # the mean over the epoch's batches, not the last one
            "train_items_per_sec": items / epoch_time, "train_epoch_time": epoch_time,
            "skipped_steps": self.skipped_steps,
        })

    @torch.no_grad()
    def validate(self) -> None:
        args, recipe = self.args, self.recipe
        model = unwrap(self.model)
        model.eval()
        sampler = EpochBatchSampler(len(self.data.validation), args.batch_size, shuffle=False, drop_last=False,
                                    rank=self.context.rank, world_size=self.context.world_size) \
            if len(self.data.validation) >= self.context.world_size else []
        loader = DataLoader(self.data.validation, batch_sampler=sampler, collate_fn=self.data.collate,
                            num_workers=0)
        sums = torch.zeros(3, dtype=torch.float64)  # loss * items, items, items
        first_batch = None
        start = time.perf_counter()
        for batch in loader:
            batch = recipe.batch_to_device(batch, self.device)
            first_batch = batch if first_batch is None else first_batch
            with self.autocast():
                output = recipe.compute_loss(model, batch, args)
            # Weighted by items (frames or samples): the mean over the whole set, whatever the batch sizes.
            sums += torch.tensor([output.loss.item() * output.items, output.items, output.items],
                                 dtype=torch.float64)
        sums = all_reduce_sum(sums)
        elapsed = time.perf_counter() - start
        record = {"val_loss": (sums[0] / sums[1]).item() if sums[1] > 0 else float("nan"),
                  "val_items_per_sec": sums[2].item() / max(elapsed, 1e-9)}
        if self.context.is_main and recipe.validation_report is not None and first_batch is not None:
            report = recipe.validation_report(model, first_batch, args)
            record.update(report.get("scalars", {}))
            for name, image in report.get("images", {}).items():
                self.logger.image(f"validation/{name}", image, self.iteration)
            for name, audio in report.get("audio", {}).items():
                self.logger.audio(f"validation/{name}", audio, self.iteration, self.audio_params.sampling_rate)
        self.logger.log([self.epoch + 1], record)
        self.logger.scalars(self.iteration, {f"validation/{name}": value for name, value in record.items()})
        model.train()

    # ---- logging helpers ---------------------------------------------------------------------------------------

    def log_parameters(self) -> None:
        unit = self.recipe.items_unit
        self.logger.parameters({"model_name": self.recipe.name, "world_size": self.context.world_size,
                                "device": str(self.device), "global_batch_size":
                                self.args.batch_size * self.context.world_size * self.args.grad_accumulation,
                                **vars(self.args)})
        for metric, metric_unit in [("train_loss", None), ("val_loss", None), ("train_items_per_sec", f"{unit}/s"),
                                    ("val_items_per_sec", f"{unit}/s"), ("train_iter_time", "s"),
                                    ("train_epoch_time", "s"), ("run_time", "s")]:
            self.logger.metadata(metric, metric_unit)
        if self.context.is_main:
            parameters = sum(p.numel() for p in self.model.parameters())
            print(f"{self.recipe.name}: {parameters:,} parameters, {len(self.data.train)} training and "
                  f"{len(self.data.validation)} validation items, {self.context.world_size} process(es) on "
                  f"{self.device}, global batch {self.args.batch_size * self.context.world_size}", flush=True)

    def _progress_bar(self, total: int):
        """A tqdm bar on a terminal; in a log file (no terminal) per-iteration DLL lines instead."""
        if self.args.quiet or not self.context.is_main or not sys.stderr.isatty():
            return None
        from tqdm import tqdm

        return tqdm(total=total, desc=f"epoch {self.epoch + 1}/{self.args.epochs}", leave=False, dynamic_ncols=True)
