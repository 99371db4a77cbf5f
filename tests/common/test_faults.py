"""Real faults met by real runs (docs/long_runs.md, "Failures"): a full disk while a checkpoint or the log is written
(a file-size limit, RLIMIT_FSIZE, in a child process: the write fails with EFBIG as it fails with ENOSPC on a full
disk), on one process and on rank 0 of two gloo ranks; a log file or TensorBoard folder that cannot be made; SIGTERM
sent to a run's whole process group while its data-loader workers run, a second SIGTERM while the checkpoint is
written, and SIGKILL in the middle of the write. The runs are train.py's tiny WaveGlow (tests/families.py) and, for
the log, the toy regression (tests/common/toy_recipes.py), started by tests/common/interrupted_runs.py."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import train
from common.checkpoint import load_checkpoint
from common.errors import exit_on_user_error
from common.logger import is_update_record, read_dllogger_file
from common.preemption import PREEMPTED_EXIT_CODE
from common.trainer import Trainer
from tests.common.interrupted_runs import start_train_py, wait_for
from tests.common.toy_recipes import free_port, toy_args, toy_recipe
from tests.conftest import REPO_ROOT
from tests.families import run_args

RUN_TIMEOUT = 600  # seconds for one tiny run in a child process: generous, as other tests share the CPUs
ONE_MINUTE = 60.0
EFBIG_ADVICE = "raise the file-size limit (ulimit -f) or write to another file system"
# Two epochs of 5 steps, a checkpoint at the end of each, the items loaded by two worker processes.
WAVEGLOW_FLAGS = ("--epochs", "2", "--epochs-per-checkpoint", "1", "--num-workers", "2")


def update_losses(log_file: Path) -> list[tuple[list, float]]:
    """([epoch, batch], train_loss) of every optimizer update the log records."""
    return [(record["step"], record["data"]["train_loss"]) for record in read_dllogger_file(log_file)
            if is_update_record(record)]


def checkpoint_files(folder: Path) -> list[str]:
    """The checkpoints of `folder` and the temporaries of saves, by name."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(("checkpoint_", ".checkpoint_")))


def stderr_lines(stderr: str) -> list[str]:
    return stderr.strip().splitlines()


def finished(process, timeout: float = RUN_TIMEOUT) -> tuple[str, str]:
    """The child's stdout and stderr once it has exited; killed (its whole group) if it outlives `timeout`."""
    try:
        return process.communicate(timeout=timeout)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise


def first_update_logged(log_file: Path) -> bool:
    """The run has taken a step: its workers are up, its stop-signal handlers in place."""
    return log_file.exists() and '"train_loss"' in log_file.read_text()


@pytest.fixture(scope="module")
def waveglow_arguments(synthetic_corpus):
    return lambda output, *extra: run_args("WaveGlow", synthetic_corpus, output, *WAVEGLOW_FLAGS, *extra)


@pytest.fixture(scope="module")
def straight(waveglow_arguments, tmp_path_factory) -> Path:
    """The uninterrupted run, in this process: what every resumed run must equal, and the folder the full-disk tests
    go on from (checkpoints of epochs 1 and 2, `last` at epoch 2). Treat it as read-only."""
    folder = tmp_path_factory.mktemp("straight")
    torch.set_num_threads(1)
    train.main(waveglow_arguments(folder))
    return folder


def copy_of(folder: Path, destination: Path) -> Path:
    return Path(shutil.copytree(folder, destination, symlinks=True))


# ---- a full disk -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_checkpoint_write_that_meets_a_full_disk_is_one_error_line_and_the_checkpoints_before_stay(
        straight, waveglow_arguments, tmp_path):
    """The run goes on from epoch 2 under a file-size limit of half a checkpoint: its log fits, the checkpoint of
    epoch 3 does not. torch.save meets EFBIG (ENOSPC on a full disk) as a RuntimeError ("unexpected pos ...")."""
    run = copy_of(straight, tmp_path / "run")
    limit = (straight / "checkpoint_WaveGlow_2.pt").stat().st_size // 2
    assert (run / "nvlog.json").stat().st_size < limit // 2  # room for this run's records
    process = start_train_py(waveglow_arguments(run, "--epochs", "3", "--resume-from-last"), file_size_limit=limit)
    stdout, stderr = finished(process)
    third = run / "checkpoint_WaveGlow_3.pt"
    assert process.returncode == 2, stderr[-3000:]
    assert stderr_lines(stderr) == [
        f"error: cannot write checkpoint {third}: File too large (nothing half-written was left there, and the "
        f"checkpoints written before are intact); {EFBIG_ADVICE}"]
    assert checkpoint_files(run) == ["checkpoint_WaveGlow_1.pt", "checkpoint_WaveGlow_2.pt",
                                     "checkpoint_WaveGlow_last.pt"]  # the temporary removed
    assert os.readlink(run / "checkpoint_WaveGlow_last.pt") == "checkpoint_WaveGlow_2.pt"
    assert load_checkpoint(run / "checkpoint_WaveGlow_last.pt")["epoch"] == 2
    assert load_checkpoint(run / "checkpoint_WaveGlow_1.pt")["epoch"] == 1
    assert len(update_losses(run / "nvlog.json")) == 15  # epoch 3 was trained and logged whole


@pytest.mark.slow
def test_a_full_disk_on_rank_0_of_two_ends_both_within_a_minute_with_its_error(straight, waveglow_arguments,
                                                                               tmp_path):
    """Two train.py ranks started independently, as srun starts them, rank 0 under a file-size limit its first
    checkpoint exceeds: both exit with status 2, rank 0 naming the checkpoint, rank 1 saying that rank 0 stopped
    the run and why, instead of waiting for the process group's timeout."""
    limit = (straight / "checkpoint_WaveGlow_1.pt").stat().st_size // 2
    run = tmp_path / "run"
    shared = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2"}
    ranks = [start_train_py(waveglow_arguments(run, "--epochs", "1", "--dist-backend", "gloo"),
                            file_size_limit=limit if rank == 0 else None,
                            environment={**shared, "RANK": str(rank), "LOCAL_RANK": str(rank)})
             for rank in range(2)]
    try:
        wait_for(lambda: any(rank.poll() is not None for rank in ranks), RUN_TIMEOUT, "the end of a rank")
        first_exit = time.monotonic()
        wait_for(lambda: all(rank.poll() is not None for rank in ranks), ONE_MINUTE, "the other rank's end")
        assert time.monotonic() - first_exit < ONE_MINUTE
    finally:
        outputs = [finished(rank, timeout=5) for rank in ranks]
    message = (f"cannot write checkpoint {run / 'checkpoint_WaveGlow_1.pt'}: File too large (nothing half-written "
               f"was left there, and the checkpoints written before are intact); {EFBIG_ADVICE}")
    assert [rank.returncode for rank in ranks] == [2, 2], [stderr[-3000:] for _, stderr in outputs]
    assert stderr_lines(outputs[0][1]) == [f"error: {message}"]
    assert stderr_lines(outputs[1][1]) == [f"error: rank 0 stopped the run: {message}"]
    assert checkpoint_files(run) == []


@pytest.mark.slow
def test_a_log_write_that_meets_a_full_disk_mid_run_is_one_error_line_and_the_checkpoints_stay(tmp_path):
    """The toy regression saves every epoch (checkpoints of 20 KiB) under a file-size limit that its log, which
    grows by every step's record (about 2 KiB an epoch), reaches after some 25 epochs."""
    limit = 64 * 1024
    process = start_train_py(["regression", str(tmp_path), "--epochs", "1000", "--epochs-per-checkpoint", "1",
                              "--keep-last-checkpoints", "2"], file_size_limit=limit, module="tests.common.toy_recipes")
    stdout, stderr = finished(process)
    log = tmp_path / "nvlog.json"
    assert process.returncode == 2, stderr[-3000:]
    assert stderr_lines(stderr) == [f"error: cannot write the log {log}: File too large (the records before are "
                                    f"intact); {EFBIG_ADVICE}"]
    # The log ends with a whole record (the start of the refused one taken back), and every line reads.
    text = log.read_text()
    assert text.endswith("\n") and len(read_dllogger_file(log)) == len(text.splitlines())
    last = load_checkpoint(tmp_path / "checkpoint_Toy_last.pt")
    assert 1 <= last["epoch"] < 1000
    assert len(checkpoint_files(tmp_path)) in (2, 3) and not list(tmp_path.glob(".checkpoint_*"))


def one_error_line(main, capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(main)
    assert stopped.value.code == 2
    lines = stderr_lines(capsys.readouterr().err)
    assert len(lines) == 1, lines
    return lines[0]


def test_a_log_file_or_tensorboard_folder_that_cannot_be_made_is_one_error_line_at_start_up(tmp_path, capsys):
    (tmp_path / "logs").mkdir()
    (tmp_path / "a_file").write_text("")
    run = tmp_path / "run"

    def start(*flags):
        return lambda: Trainer.from_args(toy_recipe(), toy_args(run, *flags))

    assert one_error_line(start("--log-file", str(tmp_path / "logs")), capsys) == (
        f"error: --log-file {tmp_path / 'logs'} is a folder; give the name of the log file to write (nvlog.json "
        "unless given)")
    assert one_error_line(start("--log-file", str(tmp_path / "a_file" / "nvlog.json")), capsys) == (
        f"error: --log-file {tmp_path / 'a_file' / 'nvlog.json'}: {tmp_path / 'a_file'} is a file, not a folder; "
        "give a path in a folder")
    assert one_error_line(start("--tensorboard-dir", str(tmp_path / "a_file" / "tb")), capsys) == (
        f"error: --tensorboard-dir {tmp_path / 'a_file' / 'tb'}: {tmp_path / 'a_file'} is a file, not a folder; "
        "give a folder for the TensorBoard events")


def test_half_written_checkpoints_of_a_killed_run_are_removed_at_start_up_and_said_once(tmp_path, capsys):
    """Only the model's own save temporaries: not another model's, nor any other file."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ".checkpoint_Toy_2.pt.tmp-4242").write_bytes(b"half a checkpoint")
    (run / ".checkpoint_Toy_last.pt.tmp-4242").symlink_to("checkpoint_Toy_2.pt")
    (run / ".checkpoint_WaveGlow_2.pt.tmp-4242").write_bytes(b"another model's")
    (run / "notes.tmp-1").write_text("")
    Trainer.from_args(toy_recipe(), toy_args(run)).train()
    said = [line for line in capsys.readouterr().out.splitlines() if "half-written" in line]
    assert said == ["removed 2 half-written checkpoint file(s) left by a run killed while saving: "
                    ".checkpoint_Toy_2.pt.tmp-4242, .checkpoint_Toy_last.pt.tmp-4242"]
    assert sorted(path.name for path in run.iterdir() if "tmp" in path.name) == [
        ".checkpoint_WaveGlow_2.pt.tmp-4242", "notes.tmp-1"]


# ---- signals -----------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_to_the_whole_process_group_with_workers_running_stops_with_a_checkpoint_and_resumes_exactly(
        straight, waveglow_arguments, tmp_path):
    """What a batch system does: SIGTERM to every process of the job, the two data-loader workers included."""
    run = tmp_path / "run"
    process = start_train_py(waveglow_arguments(run))
    wait_for(lambda: first_update_logged(run / "nvlog.json"), RUN_TIMEOUT, "the first step")
    os.killpg(process.pid, signal.SIGTERM)
    stdout, stderr = finished(process)
    assert process.returncode == PREEMPTED_EXIT_CODE, stderr[-3000:]
    stopped_at = load_checkpoint(run / "checkpoint_WaveGlow_last.pt")
    assert 0 < stopped_at["iteration"] < 10
    assert f"stopped by SIGTERM after step {stopped_at['iteration']}: saved " in stdout
    assert not list(run.glob(".checkpoint_*"))

    train.main(waveglow_arguments(run, "--resume-from-last"))
    assert update_losses(run / "nvlog.json") == update_losses(straight / "nvlog.json")


@pytest.mark.slow
def test_a_second_sigterm_while_the_checkpoint_is_written_leaves_it_whole_and_the_resume_is_exact(
        straight, waveglow_arguments, tmp_path):
    run = tmp_path / "run"
    process = start_train_py(waveglow_arguments(run), pause_save=1, pause_folder=tmp_path)
    wait_for(lambda: first_update_logged(run / "nvlog.json"), RUN_TIMEOUT, "the first step")
    os.killpg(process.pid, signal.SIGTERM)
    wait_for(lambda: (tmp_path / "writing").exists(), RUN_TIMEOUT, "the checkpoint write")
    os.killpg(process.pid, signal.SIGTERM)  # half the checkpoint is in its temporary now
    time.sleep(0.5)  # the signal handled while the write is paused
    (tmp_path / "go_on").touch()
    stdout, stderr = finished(process)
    assert process.returncode == PREEMPTED_EXIT_CODE, stderr[-3000:]
    stopped_at = load_checkpoint(run / "checkpoint_WaveGlow_last.pt")
    assert 0 < stopped_at["iteration"] < 10 and not list(run.glob(".checkpoint_*"))

    train.main(waveglow_arguments(run, "--resume-from-last"))
    assert update_losses(run / "nvlog.json") == update_losses(straight / "nvlog.json")


@pytest.mark.slow
def test_sigkill_in_the_middle_of_a_checkpoint_write_leaves_last_at_the_one_before_and_the_resume_is_exact(
        straight, waveglow_arguments, tmp_path, capsys):
    """Killed halfway through the checkpoint of epoch 2: `last` still leads to epoch 1's, no file under a checkpoint
    name is half-written, and the resumed run removes the half-written temporary, saying so, and trains epoch 2
    as the uninterrupted run did."""
    run = tmp_path / "run"
    process = start_train_py(waveglow_arguments(run), pause_save=2, pause_folder=tmp_path)
    wait_for(lambda: (tmp_path / "writing").exists(), RUN_TIMEOUT, "the second checkpoint write")
    os.killpg(process.pid, signal.SIGKILL)
    finished(process)
    assert process.returncode == -signal.SIGKILL
    half_written = f".checkpoint_WaveGlow_2.pt.tmp-{process.pid}"
    assert checkpoint_files(run) == [half_written, "checkpoint_WaveGlow_1.pt", "checkpoint_WaveGlow_last.pt"]
    assert load_checkpoint(run / "checkpoint_WaveGlow_last.pt")["epoch"] == 1

    capsys.readouterr()
    train.main(waveglow_arguments(run, "--resume-from-last", "--log-file", "resumed.json"))
    said = [line for line in capsys.readouterr().out.splitlines() if "half-written" in line]
    assert said == [f"removed 1 half-written checkpoint file(s) left by a run killed while saving: {half_written}"]
    assert checkpoint_files(run) == ["checkpoint_WaveGlow_1.pt", "checkpoint_WaveGlow_2.pt",
                                     "checkpoint_WaveGlow_last.pt"]
    assert update_losses(run / "resumed.json") == [(step, loss) for step, loss in update_losses(
        straight / "nvlog.json") if step[0] == 2]


@pytest.mark.slow
def test_a_sigterm_after_the_stop_checkpoint_does_not_change_the_exit_status():
    """A batch system may repeat its SIGTERM while the stopped run shuts down (after its checkpoint): the process must
    still exit with PREEMPTED_EXIT_CODE, which the job script requeues, not die of the signal (-15)."""
    program = ("import os, signal, sys\n"
               "from common.preemption import StopRequests, PREEMPTED_EXIT_CODE\n"
               "with StopRequests() as requests:\n"
               "    os.kill(os.getpid(), signal.SIGTERM)\n"
               "    assert requests.received == 'SIGTERM'\n"
               "os.kill(os.getpid(), signal.SIGTERM)  # the repeat, after the run has left its training loop\n"
               "sys.exit(PREEMPTED_EXIT_CODE)\n")
    completed = subprocess.run([sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT)
    assert completed.returncode == PREEMPTED_EXIT_CODE, completed.stderr


@pytest.mark.parametrize("held", [True, False])
def test_a_sigterm_while_data_loader_workers_start_is_the_runs_to_act_on(held):
    """The signal sent to the whole process group just as an epoch's workers are forked, before their worker_init_fn
    can ignore it: with stop_signals_held (what the trainer does) every batch still comes and the stop is noted;
    without it, torch's worker handler kills the workers (the case the trainer guards against)."""
    program = ("import contextlib, os, signal, sys\n"
               "from torch.utils.data import DataLoader\n"
               "from common.preemption import StopRequests, ignore_stop_signals, stop_signals_held\n"
               "with StopRequests() as requests:\n"
               "    loader = DataLoader(list(range(8)), batch_size=2, num_workers=2, "
               "worker_init_fn=ignore_stop_signals)\n"
               f"    with {'stop_signals_held()' if held else 'contextlib.nullcontext()'}:\n"
               "        batches = iter(loader)\n"
               "        os.killpg(0, signal.SIGTERM)\n"
               "    print(len(list(batches)), requests.received)\n")
    completed = subprocess.run([sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT, start_new_session=True)
    if held:
        assert (completed.returncode, completed.stdout) == (0, "4 SIGTERM\n"), completed.stderr
    else:
        assert completed.returncode == 1 and "DataLoader worker" in completed.stderr, completed.stderr
