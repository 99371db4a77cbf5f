"""torch.distributed set-up for runs launched by torchrun (or `python -m multiproc`, which wraps it).

torchrun sets RANK (global), LOCAL_RANK (on this node) and WORLD_SIZE; multi-node runs work through torchrun's own
rendezvous flags (--nnodes, --node-rank or --rdzv-endpoint). Without those variables the run is one process.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist


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
    return DistributedContext(rank=rank, local_rank=local_rank, world_size=world_size, device=device)


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


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
