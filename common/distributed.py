"""torch.distributed set-up for runs launched by torchrun (or `python -m multiproc`, which wraps it).

torchrun sets RANK (global), LOCAL_RANK (on this node) and WORLD_SIZE; multi-node runs work through torchrun's own
rendezvous flags (--nnodes, --node-rank or --rdzv-endpoint). Without those variables the run is one process.

A rank that fails stops every rank at once. A failure every rank meets at the same point (fail_together: a broken
file, a full disk) ends each with its own line. Any other exception on one rank (a bug, a RuntimeError in a save, a
user error met by that rank alone) is written to the process group's store as the run's first failure (FailureBoard);
once every rank has read it, the failing rank exits, the others' collectives with it fail, and each prints
`error: rank N stopped the run: <its message>` and exits with its status (1 a bug, 2 a user error), instead of
waiting for the process-group timeout (--distributed-timeout). A rank that does not reach a collective (stuck, or
waiting on a backend that does not notice a rank that has left, as NCCL) is ended by its FailureBoard's watcher
FAILURE_GRACE_SECONDS after the failure.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Callable, NoReturn

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from common.errors import USER_ERROR_EXIT_CODE, UserError, exit_on_user_error, one_line


_joined_a_process_group = False  # set by init_distributed; run_entry_point then leaves without interpreter teardown

BUG_EXIT_CODE = 1  # what Python exits with on an uncaught exception
# How long a rank may take, once another has failed, to reach a collective that fails and leave on its own; a
# checkpoint being written by rank 0 then has that long to be finished. Short enough that every rank has ended
# within a minute of the first failure.
FAILURE_GRACE_SECONDS = 30.0
_WATCH_INTERVAL_SECONDS = 1.0  # one small request to the store per second and rank
# How long a rank that is leaving waits for the others (FailureBoard.leave): at most, not usually.
_LEAVE_WAIT_SECONDS = 10.0


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
        global _joined_a_process_group, _failure_board
        _joined_a_process_group = True
        _failure_board = FailureBoard(dist.distributed_c10d._get_default_store(), rank, world_size)
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


def unwrapped(model: nn.Module) -> nn.Module:
    """The model inside a DDP wrapper (a recipe's compute_loss may get either)."""
    return model.module if isinstance(model, DistributedDataParallel) else model


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
        raise mark_raised_on_every_rank(failure)
    rank, message = next((rank, message) for rank, message in enumerate(messages) if message is not None)
    raise mark_raised_on_every_rank(UserError(f"rank {rank} stopped the run: {message}"))


# ---- a rank that fails -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankFailure:
    """The first failure of a run: which rank, the status it exits with, its message on one line."""
    rank: int
    status: int
    message: str

    @classmethod
    def of(cls, error: Exception, rank: int) -> RankFailure:
        if isinstance(error, UserError):
            return cls(rank, USER_ERROR_EXIT_CODE, one_line(str(error)))
        text = one_line(str(error))
        return cls(rank, BUG_EXIT_CODE, f"{type(error).__name__}: {text}" if text else type(error).__name__)

    def to_text(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_text(cls, text: bytes | str) -> RankFailure:
        return cls(**json.loads(text))

    def stopped_the_run(self) -> str:
        return f"error: rank {self.rank} stopped the run: {self.message}"


# What the store may raise once its host has gone (torch.distributed.DistError is a RuntimeError).
_STORE_ERRORS = (RuntimeError, OSError, ValueError)


class FailureBoard:
    """The run's first failure, kept in the process group's store: the TCPStore at MASTER_ADDR:MASTER_PORT that rank
    0 serves (or torchrun's), which every rank reaches without a collective. The first rank to write its failure
    wins (compare_set); a later one, such as the connection error of a rank left waiting for the first, reads it.

    A gloo rank's connections close only when its process ends (DDP holds its process group, so neither abort nor
    destroy closes them), and the store ends with rank 0's process. So the failing rank waits, before it exits,
    until every other rank has seen its failure: a watcher thread on each rank reads the board every second. Once
    the failing rank has exited, the others' collectives with it fail, and each prints the failure it has already
    read, touching the store no more. A rank that reaches no such collective within FAILURE_GRACE_SECONDS (stuck,
    or waiting in an NCCL collective, which does not notice a rank that has left) is ended by its watcher."""

    def __init__(self, store: dist.Store, rank: int, world_size: int):
        self.store, self.rank, self.world_size = store, rank, world_size
        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")  # torchrun's restarts share its store
        self.failure_key, self.seen_key, self.left_key = (f"{name}/{attempt}" for name in
                                                          ("first_failure", "failure_seen", "ranks_left"))
        # Rank 0 serves the store unless torchrun's agent does; the store ends with the process that serves it.
        self.hosts_the_store = rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
        self.first: RankFailure | None = None
        self.own_error: Exception | None = None  # this rank's exception, when it was the first failure
        self.learning = threading.Lock()  # the main thread and the watcher: one of them acknowledges the failure
        self.reporting = threading.Lock()  # held by the thread that prints this process's last words and exits
        self.stop_watching = threading.Event()
        self.watcher = threading.Thread(target=self._watch, name="rank-failure-watcher", daemon=True)
        self.watcher.start()

    def record(self, error: Exception) -> RankFailure | None:
        """Write this rank's failure unless another's came first; returns the first (None: the store is gone)."""
        with self.learning:
            if self.first is None:
                mine = RankFailure.of(error, self.rank)
                try:
                    self._learn(RankFailure.from_text(self.store.compare_set(self.failure_key, "", mine.to_text())))
                except _STORE_ERRORS:
                    return None
                if self.first.rank == self.rank:
                    self.own_error = error
            return self.first

    def recorded(self) -> RankFailure | None:
        """The run's first failure, if some rank has written one."""
        with self.learning:
            if self.first is None and self.store.check([self.failure_key]):
                self._learn(RankFailure.from_text(self.store.get(self.failure_key)))
            return self.first

    def _learn(self, first: RankFailure) -> None:
        """Keep the first failure; another rank's is acknowledged (once), so that its rank may exit."""
        self.first = first
        if first.rank != self.rank:
            self.store.add(self.seen_key, 1)

    def report(self, error: Exception) -> int:
        """Print why this process ends after `error` (raised here, past exit_on_user_error: not a user error): its
        traceback when this rank failed first, else the first failing rank's line. Returns the exit status."""
        self.reporting.acquire()  # never released: the process exits; the watcher then stays silent
        first = self.first or self.record(error)
        if first is None or first.rank == self.rank:
            traceback.print_exception(error)
            return BUG_EXIT_CODE
        print(first.stopped_the_run(), file=sys.stderr, flush=True)
        return first.status

    def leave(self) -> None:
        """Before this process exits. After a failure, the rank that failed first waits (_LEAVE_WAIT_SECONDS at
        most) until every other rank has seen it; the others, which may outlive the store, do not touch it again.
        Otherwise the rank that hosts the store waits until every rank has stopped watching it, as reading a store
        that has gone prints a C++ stack on stderr."""
        self.stop_watching.set()
        if threading.current_thread() is not self.watcher:
            self.watcher.join(timeout=5)
        if self.first is not None and self.first.rank != self.rank:
            return
        count_key, waits, expected = ((self.seen_key, True, self.world_size - 1) if self.first is not None else
                                      (self.left_key, self.hosts_the_store, self.world_size))
        try:
            count = self.store.add(count_key, 0 if self.first is not None else 1)
            deadline = time.monotonic() + _LEAVE_WAIT_SECONDS
            while waits and count < expected and time.monotonic() < deadline:
                time.sleep(0.05)
                count = self.store.add(count_key, 0)
        except _STORE_ERRORS:
            pass

    def _watch(self) -> None:
        failure = None
        while failure is None:
            if self.stop_watching.wait(_WATCH_INTERVAL_SECONDS):
                return
            try:
                failure = self.recorded()
            except _STORE_ERRORS:
                return  # its host has left: the run is over
        if self.stop_watching.wait(FAILURE_GRACE_SECONDS) or not self.reporting.acquire(blocking=False):
            return  # this process left, or is leaving, on its own
        # Still here: stuck outside any collective, or in one that its backend does not end when a rank leaves.
        if failure.rank != self.rank:
            print(failure.stopped_the_run(), file=sys.stderr)
        elif self.own_error is not None:
            traceback.print_exception(self.own_error)
        self.leave()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(failure.status)


_failure_board: FailureBoard | None = None  # made by init_distributed once this process has joined a group


def mark_raised_on_every_rank(error: Exception) -> Exception:
    """An error that every rank raises at the same point (fail_together): each rank prints its own, and it is not
    the run's failure to share."""
    error.raised_on_every_rank = True
    return error


def record_failure(error: Exception) -> None:
    """Make `error`, raised on this rank alone, the run's failure unless another rank's came first, then abandon
    this rank's process group. Call it as soon as the error is caught: before anything that may end this rank's
    connections, or the others' collectives could fail before the failure is on the board."""
    if _failure_board is None or vars(error).get("raised_on_every_rank"):
        return
    _failure_board.record(error)
    abandon_process_group()


@contextmanager
def failure_stops_every_rank():
    """record_failure for any exception raised in the block, which then goes on."""
    try:
        yield
    except Exception as error:
        record_failure(error)
        raise


def abandon_process_group() -> None:
    """End this rank's process group after a failure without waiting for the other ranks: abort, not destroy,
    which for NCCL can wait for collectives that will never complete. (The other ranks notice only once this
    process has exited: DDP still holds the group, whose gloo connections stay open until then.)"""
    if not (dist.is_available() and dist.is_initialized()):
        return
    try:
        dist.distributed_c10d._abort_process_group()
    except (RuntimeError, ValueError):  # a backend without abort
        dist.destroy_process_group()


def run_entry_point(main: Callable[[], object]) -> NoReturn:
    """Run a training entry point's main() through exit_on_user_error and exit with its status.

    In a distributed run, an exception on this rank alone stops every rank (record_failure), and a rank stopped by
    another's failure prints that rank's line, `error: rank N stopped the run: <message>`, and exits with its status.

    A process that joined a process group leaves without Python's interpreter teardown, once the exit handlers
    (atexit) have run and stdout and stderr are flushed. gloo's worker threads free a collective's tensors just after
    the collective has returned, and need the GIL for that; one that asks for it while the interpreter is tearing
    itself down is ended by Python inside a C++ destructor, and the whole process aborts (SIGABRT, "terminate called
    without an active exception") instead of exiting with its status. Seen in about one run in ten that ended right
    after a collective (a broken file met on one of two ranks)."""
    def main_stopping_every_rank_on_failure() -> None:
        with failure_stops_every_rank():  # before exit_on_user_error turns a user error into SystemExit
            main()

    try:
        exit_on_user_error(main_stopping_every_rank_on_failure)
        status = 0
    except SystemExit as exit_request:
        status = exit_request.code  # a number or None: exit_on_user_error has made a message into an error line
    except Exception as error:  # a bug, or a collective that failed because another rank did
        if _failure_board is None:
            raise  # one process: Python's traceback and status 1
        status = _failure_board.report(error)
    if not _joined_a_process_group:
        sys.exit(status)
    if _failure_board is not None:
        _failure_board.leave()
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
