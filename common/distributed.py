"""torch.distributed set-up for runs launched by torchrun (or `python -m multiproc`, which wraps it).

torchrun sets RANK (global), LOCAL_RANK (on this node) and WORLD_SIZE; multi-node runs work through torchrun's own
rendezvous flags (--nnodes, --node-rank or --rdzv-endpoint). Without those variables the run is one process.
"""
from __future__ import annotations

import atexit
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, NoReturn

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from common.errors import UserError, exit_on_user_error, one_line


_joined_a_process_group = False  # set by init_distributed; run_entry_point then leaves without interpreter teardown


@dataclass
class DistributedContext:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def choose_device(force_cpu: bool, local_rank: int = 0) -> torch.device:
    if force_cpu or not torch.cuda.is_available():
        return torch.device("cpu")
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
    return torch.device("cuda", local_rank % torch.cuda.device_count())


def init_distributed(force_cpu: bool = False, backend: str | None = None,
                     timeout_minutes: float = 30) -> DistributedContext:
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    device = choose_device(force_cpu, local_rank)
    if world_size > 1 and not dist.is_initialized():
        backend = backend or ("nccl" if device.type == "cuda" else "gloo")
        dist.init_process_group(backend=backend, timeout=timedelta(minutes=timeout_minutes),
                                device_id=device if device.type == "cuda" else None)
        global _joined_a_process_group
        _joined_a_process_group = True
    return DistributedContext(rank=rank, local_rank=local_rank, world_size=world_size, device=device)


class ModelParts(dict):
    """A model's trainable parts by name, each wrapped for DDP when the run is distributed; `parts.generator` reads
    like the model's own attribute, so a recipe's train_step is written once for one process and for many."""

    def __getattr__(self, name: str) -> nn.Module:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"the model has no trained part '{name}'; its parts are {sorted(self)}") from None


def wrap_parts(model: nn.Module, part_names: tuple[str, ...], context: DistributedContext,
               find_unused_parameters: bool = False) -> ModelParts:
    """One DistributedDataParallel per part, so a GAN's generator and discriminator steps each synchronise their
    own gradients; with no part names the whole model is the one part "model"."""
    parts = {name: getattr(model, name) for name in part_names} if part_names else {"model": model}
    if part_names:
        covered = {id(p) for part in parts.values() for p in part.parameters()}
        outside = [name for name, p in model.named_parameters() if p.requires_grad and id(p) not in covered]
        if outside:
            raise ValueError(f"parameters outside the recipe's parts {list(part_names)} would not be trained "
                             f"in step on every rank: {outside[:3]}")
    if context.is_distributed:
        device_ids = [context.device.index] if context.device.type == "cuda" else None
        parts = {name: DistributedDataParallel(part, device_ids=device_ids,
                                               find_unused_parameters=find_unused_parameters)
                 for name, part in parts.items()}
    return ModelParts(parts)


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum a tensor over ranks (a no-op in a single process). Returns a new tensor."""
    values = values.detach().clone()
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def all_gather_objects(obj) -> list:
    if dist.is_available() and dist.is_initialized():
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, obj)
        return gathered
    return [obj]


def any_rank(*flags: bool) -> list[bool]:
    """For each flag, whether it is set on some rank (one all-reduce for all of them)."""
    counts = all_reduce_sum(torch.tensor([float(flag) for flag in flags], dtype=torch.float64))
    return [count > 0 for count in counts.tolist()]


def fail_together(failure: UserError | None) -> None:
    """Every rank calls this at the same point of the run, with the user error it met there (a broken audio file, a
    full disk) or None. If any rank met one, every rank raises, so that none waits forever in a later collective for
    a rank that has stopped: the rank that met it raises its own, the others one naming that rank."""
    if any_rank(failure is not None)[0]:
        raise_on_every_rank(failure)


def raise_on_every_rank(failure: UserError | None) -> None:
    """The raising half of fail_together, for a caller that already knows (through any_rank) that some rank failed."""
    messages = all_gather_objects(None if failure is None else one_line(str(failure)))
    if failure is not None:
        raise failure
    rank, message = next((rank, message) for rank, message in enumerate(messages) if message is not None)
    raise UserError(f"rank {rank} stopped the run: {message}")


def run_entry_point(main: Callable[[], object]) -> NoReturn:
    """Run a training entry point's main() through exit_on_user_error and exit with its status.

    A process that joined a process group leaves without Python's interpreter teardown, once the exit handlers
    (atexit) have run and stdout and stderr are flushed. gloo's worker threads free a collective's tensors just after
    the collective has returned, and need the GIL for that; one that asks for it while the interpreter is tearing
    itself down is ended by Python inside a C++ destructor, and the whole process aborts (SIGABRT, "terminate called
    without an active exception") instead of exiting with its status. Seen in about one run in ten that ended right
    after a collective (a broken file met on one of two ranks)."""
    try:
        exit_on_user_error(main)
        status = 0
    except SystemExit as exit_request:
        status = exit_request.code  # a number or None: exit_on_user_error has made a message into an error line
    if not _joined_a_process_group:
        sys.exit(status)
    atexit._run_exitfuncs()  # e.g. multiprocessing's, which ends the DataLoader workers
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
