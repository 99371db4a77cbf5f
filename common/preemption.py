"""Stopping a run on request: SIGTERM (what SLURM, Kubernetes and torchrun send before killing a job) or SIGUSR1
(what `#SBATCH --signal=USR1@120` sends ahead of the time limit).

The handler only notes the signal. The trainer looks at the note between optimizer steps, all ranks together (one
all-reduce), so every rank stops after the same step even when the signal reached only some of them; rank 0 then
writes a checkpoint for all of them and the run exits with PREEMPTED_EXIT_CODE. Running the same command with
--resume-from-last continues exactly where it stopped.

Data-loader workers ignore both signals (ignore_stop_signals): a batch system signals every process of a job, and a
worker killed by it would end the run before its checkpoint. So that they still end with the run, even one ended
by an error, whose traceback keeps its loader alive until the interpreter exits, the workers are killed at exit
instead of being sent the SIGTERM of multiprocessing's own exit handler, which they would ignore.
"""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import signal

# EX_TEMPFAIL of sysexits.h ("a temporary failure; the user is invited to retry"): the run saved a checkpoint and
# stopped before its end, so a job script can tell "requeue me" (75) from "finished" (0) and "fix me" (2).
PREEMPTED_EXIT_CODE = 75
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class StopRequests:
    """While entered, SIGTERM and SIGUSR1 set `received` (the signal's name) instead of ending the process."""

    def __init__(self):
        self.received: str | None = None
        self._previous_handlers: dict = {}

    def _note(self, signal_number: int, frame) -> None:
        self.received = signal.Signals(signal_number).name

    def __enter__(self) -> "StopRequests":
        self._previous_handlers = {number: signal.signal(number, self._note) for number in STOP_SIGNALS}
        # Registered after multiprocessing's exit handler (torch is imported by now), so it runs before it.
        atexit.unregister(kill_data_loader_workers)
        atexit.register(kill_data_loader_workers)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous_handlers.items():
            # Once a stop was asked for, the run has saved and is on its way out with PREEMPTED_EXIT_CODE: a second
            # signal (a batch system repeats its SIGTERM) must not turn that status into death by signal, which a
            # job script would not requeue.
            signal.signal(number, signal.SIG_IGN if self.received is not None else handler)


@contextlib.contextmanager
def stop_signals_held():
    """Hold the stop signals back while data-loader workers start (wrap `iter(loader)`). A worker's first act is to
    install torch's own SIGTERM handler, which kills it; only later does its worker_init_fn ignore the signal. A
    SIGTERM in between would kill the worker and end the run before its checkpoint. Blocked here, the signal waits in
    the forked worker until ignore_stop_signals, and in this process until the workers are up."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def ignore_stop_signals(worker_id: int) -> None:
    """DataLoader's worker_init_fn: the stop signals are the main process's to act on."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # held back by stop_signals_held while it started


def kill_data_loader_workers() -> None:
    """At exit: SIGKILL to the daemonic child processes (data-loader workers), which ignore SIGTERM."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # torch's handler would report each killed worker as an error
    for child in multiprocessing.active_children():
        if child.daemon:
            child.kill()
