"""Training runs in child processes that meet real faults: a file-size limit (RLIMIT_FSIZE, what `ulimit -f` sets),
under which a write past the limit fails with EFBIG as a write to a full disk fails with ENOSPC, and real signals
sent to the run's whole process group (the training process and its data-loader workers), as a batch system sends
them.

Run as a module (`python -m tests.common.interrupted_runs <train.py flags>`) it is train.py, except that with
PAUSE_CHECKPOINT_WRITE=N in its environment its N-th checkpoint write stops halfway: half the file is written and
flushed to the save's temporary, the file `writing` is made in PAUSE_FOLDER, and the write goes on only once the
test has made `go_on` there (or after PAUSE_LONGEST_SECONDS). So a test can signal, or kill, the run while it is
writing a checkpoint; the signal itself is a real one."""
from __future__ import annotations

import io
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAUSE_LONGEST_SECONDS = 120.0  # a paused write goes on after this long even if no test said so (no process left)


def start_train_py(arguments: list[str], *, file_size_limit: int | None = None, pause_save: int | None = None,
                   pause_folder: Path | None = None, environment: dict | None = None,
                   module: str = "tests.common.interrupted_runs") -> subprocess.Popen:
    """train.py `arguments` in a child process that leads a process group of its own (its data-loader workers join
    it), so that os.killpg signals every process of the run and nothing else. file_size_limit: bytes that no file it
    writes may exceed (SIGXFSZ ignored, so such a write fails with EFBIG instead of killing the process);
    pause_save: the checkpoint write that stops halfway (see the module's docstring). module: another module to
    run instead (`tests.common.toy_recipes`: a toy recipe's run, whose arguments start with the recipe's name)."""
    def limit_file_sizes() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # kept across exec
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    pausing = {} if pause_save is None else {"PAUSE_CHECKPOINT_WRITE": str(pause_save),
                                             "PAUSE_FOLDER": str(pause_folder)}
    return subprocess.Popen([sys.executable, "-m", module, *arguments], cwd=ROOT,
                            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **pausing,
                                 **(environment or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=limit_file_sizes if file_size_limit is not None else None)


def wait_for(condition, timeout: float = 300.0, what: str = "the condition") -> None:
    """Poll `condition()` until it holds; fail after `timeout` seconds (generous: other tests share the CPUs)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not come within {timeout} s")
        time.sleep(0.02)


def pause_a_checkpoint_write(save_number: int, folder: Path) -> None:
    """Make torch.save's `save_number`-th call in this process stop halfway through its file (see the module)."""
    import torch

    real_save = torch.save
    saves = 0

    def save_pausing_halfway(obj, file, *args, **keywords):
        nonlocal saves
        saves += 1
        if saves != save_number:
            return real_save(obj, file, *args, **keywords)
        whole = io.BytesIO()
        real_save(obj, whole, *args, **keywords)
        data = whole.getvalue()
        file.write(data[:len(data) // 2])
        file.flush()
        (folder / "writing").touch()
        deadline = time.monotonic() + PAUSE_LONGEST_SECONDS
        while not (folder / "go_on").exists() and time.monotonic() < deadline:
            time.sleep(0.02)  # a signal's Python handler runs here, in the middle of the write
        file.write(data[len(data) // 2:])

    torch.save = save_pausing_halfway


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if "PAUSE_CHECKPOINT_WRITE" in os.environ:
        pause_a_checkpoint_write(int(os.environ["PAUSE_CHECKPOINT_WRITE"]), Path(os.environ["PAUSE_FOLDER"]))
    import train
    from common.distributed import run_entry_point

    run_entry_point(lambda: train.main(sys.argv[1:]))
