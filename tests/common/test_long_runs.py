"""Long runs that survive: checkpoint retention and the disk space left, stopping on SIGTERM / SIGUSR1
with a checkpoint and an exact resume (one process and two gloo ranks), an output folder that cannot be made, a broken file met mid-run (one process and two ranks: every rank exits), runs
that diverge (--max-skipped-steps), and --epochs-this-job. Mostly on the toy recipes of tests/common/toy_recipes.py;
the one-process stop and the broken files on a real family (WaveGlow, tiny) through train.py. A full disk and
signals to a run's whole process group: tests/common/test_faults.py."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import soundfile
import torch

import train
from common import checkpoint as ckpt
from common.checkpoint import load_checkpoint
from common.errors import UserError, exit_on_user_error
from common.logger import read_dllogger_file
from common.preemption import PREEMPTED_EXIT_CODE
from common.trainer import Trainer
from tests.common.toy_recipes import regression_loss, run_ranks_as_processes, toy_args, toy_recipe
from tests.conftest import REPO_ROOT
from tests.families import run_args
from tests.training_runs import train_losses


def step_losses(folder: Path) -> list:
    return [(r["step"], r["data"]["train_loss"]) for r in read_dllogger_file(folder / "nvlog.json")
            if isinstance(r["step"], list) and len(r["step"]) == 2 and "train_loss" in r["data"]]


def checkpoint_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(("checkpoint_", ".checkpoint_")))


# ---- retention ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_retention_keeps_the_newest_the_milestones_and_last_and_the_resume_is_exact(tmp_path):
    """10 saves (one per update, 6 updates an epoch): the newest 2, the milestones at updates 4 and 8 and at the end of
    epoch 1, and the `last` link; older ones are deleted once a newer one is written. Then a resume goes on."""
    flags = ("--epochs", "100", "--save-interval-updates", "1", "--keep-last-checkpoints", "2",
             "--keep-every-updates", "4", "--keep-every-epochs", "1")
    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "stopped", *flags, "--max-updates", "10")).train()
    assert checkpoint_files(tmp_path / "stopped") == [
        "checkpoint_Toy_1.pt",  # the end of epoch 1 (update 6): an epoch milestone
        "checkpoint_Toy_1_4.pt", "checkpoint_Toy_2_2.pt",  # updates 4 and 8: update milestones
        "checkpoint_Toy_2_3.pt", "checkpoint_Toy_2_4.pt",  # updates 9 and 10: the newest two
        "checkpoint_Toy_last.pt"]
    assert os.readlink(tmp_path / "stopped" / "checkpoint_Toy_last.pt") == "checkpoint_Toy_2_4.pt"
    saves = [r["data"] for r in read_dllogger_file(tmp_path / "stopped" / "nvlog.json")
             if "checkpoint_bytes" in r["data"]]
    assert [save["iteration"] for save in saves] == list(range(1, 11))  # and the disk space left at each
    assert all(save["checkpoint_bytes"] > 0 and save["disk_free_bytes"] > 0 for save in saves)

    Trainer.from_args(toy_recipe(),
                      toy_args(tmp_path / "stopped", *flags, "--max-updates", "14", "--resume-from-last")).train()
    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "straight", *flags, "--max-updates", "14")).train()
    assert step_losses(tmp_path / "stopped") == step_losses(tmp_path / "straight")
    # The resumed run went on deleting the first run's files (2_3 and 2_4 are gone) and kept its milestones; the
    # end of epoch 2 (update 12) is one.
    assert checkpoint_files(tmp_path / "stopped") == checkpoint_files(tmp_path / "straight") == [
        "checkpoint_Toy_1.pt", "checkpoint_Toy_1_4.pt", "checkpoint_Toy_2.pt", "checkpoint_Toy_2_2.pt",
        "checkpoint_Toy_3_1.pt", "checkpoint_Toy_3_2.pt", "checkpoint_Toy_last.pt"]


def test_by_default_every_checkpoint_is_kept_and_a_warning_comes_before_the_disk_is_full(tmp_path, monkeypatch,
                                                                                         capsys):
    monkeypatch.setattr("common.checkpoint_retention.shutil.disk_usage",
                        lambda path: type("Usage", (), {"free": 1000})())  # less than one toy checkpoint
    Trainer.from_args(toy_recipe(), toy_args(tmp_path, "--epochs", "3", "--epochs-per-checkpoint", "1")).train()
    assert checkpoint_files(tmp_path) == ["checkpoint_Toy_1.pt", "checkpoint_Toy_2.pt", "checkpoint_Toy_3.pt",
                                          "checkpoint_Toy_last.pt"]
    captured = capsys.readouterr()
    size = ckpt.bytes_in_words((tmp_path / "checkpoint_Toy_3.pt").stat().st_size)
    assert f"saved checkpoint {tmp_path / 'checkpoint_Toy_3.pt'} ({size}, 1000 B left on its disk)" in captured.out
    assert (f"warning: 1000 B left on the disk of {tmp_path}, less than the last checkpoint ({size}): the next save "
            "will fail" in captured.err)


# ---- stopping on a signal ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_stops_one_process_after_its_step_with_a_checkpoint_and_the_resume_is_exact(synthetic_corpus,
                                                                                             tmp_path):
    """train.py on a real family, signalled from outside as a batch system does, once training has begun."""
    stopped = tmp_path / "stopped"
    command = [sys.executable, str(REPO_ROOT / "train.py"), *run_args("WaveGlow", synthetic_corpus, stopped,
                                                                       "--epochs", "2")]
    process = subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = stopped / "nvlog.json"
    deadline = time.monotonic() + 120
    while not (log.exists() and "PARAMETER" in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)  # the parameters are logged once the signal handlers are in place
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == PREEMPTED_EXIT_CODE, stderr[-2000:]
    stopped_at = load_checkpoint(stopped / "checkpoint_WaveGlow_last.pt")
    assert 0 < stopped_at["iteration"] < 10  # 2 epochs of 5 steps
    assert f"stopped by SIGTERM after step {stopped_at['iteration']}: saved " in stdout
    assert "--resume-from-last continues exactly" in stdout and not list(stopped.glob(".*tmp*"))

    torch.set_num_threads(1)
    train.main(run_args("WaveGlow", synthetic_corpus, stopped, "--epochs", "2", "--resume-from-last"))
    train.main(run_args("WaveGlow", synthetic_corpus, tmp_path / "straight", "--epochs", "2"))
    assert train_losses(log, 2) == train_losses(tmp_path / "straight" / "nvlog.json", 2)
    assert len(train_losses(log, 2)) == 10


@pytest.mark.slow
def test_a_signal_to_one_of_two_ranks_stops_both_after_the_same_step_and_the_resume_is_exact(tmp_path):
    """SIGUSR1 reaches rank 1 only, in the middle of a step: both ranks finish that step, rank 0 writes the
    checkpoint, both exit with PREEMPTED_EXIT_CODE; resumed on 2 ranks the curve is the uninterrupted one's."""
    flags = ("--epochs", "3", "-bs", "1")
    signal_rank_1 = {"RANK_TO_SIGNAL": "1", "SIGNAL_TO_SEND": "SIGUSR1"}
    ranks = run_ranks_as_processes("signalling", tmp_path / "stopped", *flags, environment=signal_rank_1)
    assert [rank.returncode for rank in ranks] == [PREEMPTED_EXIT_CODE] * 2, [rank.stderr[-2000:] for rank in ranks]
    stopped_at = load_checkpoint(tmp_path / "stopped" / "checkpoint_Toy_last.pt")
    assert 0 < stopped_at["iteration"] < 18 and stopped_at["world_size"] == 2  # 3 epochs of 6 steps of 2 x 1
    assert f"stopped by a stop signal sent to another rank after step {stopped_at['iteration']}" in ranks[0].stdout

    ranks = run_ranks_as_processes("signalling", tmp_path / "stopped", *flags, "--resume-from-last",
                                   environment=signal_rank_1)  # its output folder remembers the signal was sent
    assert [rank.returncode for rank in ranks] == [0, 0], [rank.stderr[-2000:] for rank in ranks]
    ranks = run_ranks_as_processes("regression", tmp_path / "straight", *flags)
    assert [rank.returncode for rank in ranks] == [0, 0], [rank.stderr[-2000:] for rank in ranks]
    assert step_losses(tmp_path / "stopped") == step_losses(tmp_path / "straight")
    assert len(step_losses(tmp_path / "straight")) == 18


def test_epochs_this_job_stops_at_an_epoch_end_with_a_checkpoint_and_exit_status_0(tmp_path):
    first = Trainer.from_args(toy_recipe(), toy_args(tmp_path / "jobs", "--epochs", "3", "--epochs-this-job", "2"))
    first.train()
    assert (first.epoch, first.exit_status) == (2, 0)
    assert load_checkpoint(tmp_path / "jobs" / "checkpoint_Toy_last.pt")["epoch"] == 2
    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "jobs", "--epochs", "3", "--epochs-this-job", "2",
                                   "--resume-from-last")).train()
    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "straight", "--epochs", "3")).train()
    assert step_losses(tmp_path / "jobs") == step_losses(tmp_path / "straight")


# ---- what cannot be written --------------------------------------------------------------------------------------


@pytest.mark.parametrize("output", ["a_file", "a_file/run"])
def test_an_output_folder_that_cannot_be_made_is_an_error_at_start_up(tmp_path, output):
    (tmp_path / "a_file").write_text("")
    built = []
    recipe = toy_recipe(build_model=lambda config: built.append("model") or torch.nn.Linear(4, 1))
    with pytest.raises(UserError, match=f"-o/--output {tmp_path / output}"):
        Trainer.from_args(recipe, toy_args(tmp_path / output))
    assert not built  # before the model, the data and the first epoch


# ---- broken data mid-run -----------------------------------------------------------------------------------------


def corpus_with_a_broken_file(synthetic_corpus, folder: Path, kind: str) -> Path:
    """A copy of the corpus's wavs in which the file of the training filelist's fourth line is broken (it still
    exists: start-up checks only that)."""
    shutil.copytree(synthetic_corpus.dataset_dir / "wavs", folder / "wavs")
    wav = folder / synthetic_corpus.train_filelist.read_text().splitlines()[3].split("|")[0]
    if kind == "empty":
        wav.write_bytes(b"")
    elif kind == "not audio":
        wav.write_bytes(b"this is no wav file" * 100)
    else:  # "wrong rate"
        audio, _ = soundfile.read(wav)
        soundfile.write(wav, audio, 16000)
    return wav


def one_error_line(main, capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(main)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.slow
def test_a_broken_audio_file_met_by_a_worker_mid_run_ends_it_with_one_line_naming_it(synthetic_corpus, tmp_path,
                                                                                       capsys):
    broken_wav = corpus_with_a_broken_file(synthetic_corpus, tmp_path / "corpus", "empty")
    arguments = run_args("WaveGlow", synthetic_corpus, tmp_path / "run", "--epochs", "1", "--num-workers", "1",
                         batch_size=2)  # 11 batches of 2: every item is met
    arguments[arguments.index("-d") + 1] = str(tmp_path / "corpus")
    line = one_error_line(lambda: train.main(arguments), capsys)
    assert line == (f"error: {synthetic_corpus.train_filelist}:4: cannot read audio file {broken_wav}: Error opening "
                    f"'{broken_wav}': Format not recognised.")


@pytest.mark.parametrize("kind, reason", [("not audio", "cannot read audio file {wav}: Error opening"),
                                          ("wrong rate", "{wav}: sampling rate is 16000 Hz, expected 22050 Hz")])
def test_each_kind_of_broken_audio_file_is_named_with_its_filelist_line(synthetic_corpus, tmp_path, capsys, kind,
                                                                        reason):
    from common.audio import AudioParams
    from common.audio_crops import AudioCropDataset

    broken_wav = corpus_with_a_broken_file(synthetic_corpus, tmp_path, kind)
    dataset = AudioCropDataset(synthetic_corpus.train_filelist, tmp_path, AudioParams(), segment_length=2048)
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=1)
    line = one_error_line(lambda: list(loader), capsys)
    assert line.startswith(f"error: {synthetic_corpus.train_filelist}:4: {reason.format(wav=broken_wav)}")


@pytest.mark.slow
def test_a_broken_file_on_one_of_two_ranks_ends_both_and_neither_hangs(tmp_path):
    ranks = run_ranks_as_processes("broken_item", tmp_path, "--epochs", "2", "-bs", "1", "--num-workers", "1")
    message = "train.txt:6: cannot read audio file wavs/5.wav: Format not recognised"
    assert [rank.returncode for rank in ranks] == [2, 2]
    errors = [rank.stderr.strip().splitlines() for rank in ranks]
    assert all(len(lines) == 1 for lines in errors), errors
    met_it = [rank for rank, lines in enumerate(errors) if lines == [f"error: {message}"]]  # item 5: one rank's
    assert len(met_it) == 1
    assert errors[1 - met_it[0]] == [f"error: rank {met_it[0]} stopped the run: {message}"]



@pytest.mark.parametrize("main_body, status, stderr", [
    ("pass", 0, ""),
    ("raise UserError('train.txt:6: unreadable')", 2, "error: train.txt:6: unreadable\n"),
    ("sys.exit(75)", 75, ""),
    ("sys.exit('error: --epochs must be positive')", 2, "error: --epochs must be positive\n")])
def test_a_process_that_joined_a_process_group_exits_with_its_status_and_runs_its_exit_handlers(main_body, status,
                                                                                                 stderr):
    """run_entry_point leaves such a process with os._exit (see its docstring): the status, the output still
    buffered and the atexit handlers must all survive that."""
    program = "\n".join([
        "import atexit, sys",
        "import common.distributed as distributed",
        "from common.errors import UserError",
        "distributed._joined_a_process_group = True  # as init_distributed sets it",
        "atexit.register(lambda: print('exit handler ran'))",
        "def main():",
        "    print('buffered', end='')",
        f"    {main_body}",
        "distributed.run_entry_point(main)"])
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (status, "bufferedexit handler ran\n", stderr)

# ---- diverging runs ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_max_skipped_steps_ends_a_diverged_run_naming_the_last_checkpoint(tmp_path):
    def diverging_from_step_7(model, batch, args):
        output = regression_loss(model, batch, args)
        if model.training:
            diverging_from_step_7.steps += 1
            if diverging_from_step_7.steps >= 7:
                output.loss = output.loss * float("inf")
        return output
    diverging_from_step_7.steps = 0

    trainer = Trainer.from_args(toy_recipe(compute_loss=diverging_from_step_7),
                      toy_args(tmp_path, "--epochs", "5", "--save-interval-updates", "3", "--max-skipped-steps", "4"))
    with pytest.raises(UserError, match=r"--max-skipped-steps 4: 4 steps in a row had a non-finite loss or gradient "
                                        r"\(the last at epoch 2, batch 4\); the last checkpoint, "
                                        f"{tmp_path / 'checkpoint_Toy_1.pt'}, holds the weights from before them"):
        trainer.train()
    assert trainer.iteration == 6 and trainer.skipped_steps == 4


def test_a_finite_loss_with_a_non_finite_gradient_is_skipped_not_applied(tmp_path):
    def loss_with_a_nan_gradient(model, batch, args):
        output = regression_loss(model, batch, args)
        total = model.weight.sum()
        output.loss = output.loss + torch.sqrt(total - total)  # 0, whose gradient is 0 x inf
        return output

    for clipping in ("1.0", "0"):
        trainer = Trainer.from_args(toy_recipe(compute_loss=loss_with_a_nan_gradient),
                          toy_args(tmp_path / clipping, "--grad-clip-thresh", clipping))
        trainer.train()
        assert trainer.skipped_steps == 6 and trainer.iteration == 0
        assert torch.isfinite(trainer.model.weight).all()


@pytest.mark.slow
def test_val_interval_epochs_checkpoint_only_at_the_end_no_save_and_the_benchmark_figure(tmp_path):
    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "a", "--epochs", "5", "--val-interval-epochs", "2",
                                   "--epochs-per-checkpoint", "0", "--benchmark-epochs-num", "2")).train()
    records = read_dllogger_file(tmp_path / "a" / "nvlog.json")
    assert [r["step"] for r in records if "val_loss" in r["data"]] == [[2], [4], [5]]
    assert checkpoint_files(tmp_path / "a") == ["checkpoint_Toy_5.pt", "checkpoint_Toy_last.pt"]
    throughputs = [r["data"]["train_items_per_sec"] for r in records if r["step"] in ([4], [5])
                   and "train_items_per_sec" in r["data"]]
    summary = [r["data"] for r in records if r["step"] == [] and "run_time" in r["data"]][0]
    assert summary["train_benchmark_items_per_sec"] == pytest.approx(sum(throughputs) / 2)

    Trainer.from_args(toy_recipe(), toy_args(tmp_path / "b", "--epochs", "2", "--no-save")).train()
    assert checkpoint_files(tmp_path / "b") == []


@pytest.mark.parametrize("train_status, requeued", [(PREEMPTED_EXIT_CODE, True), (0, False), (2, False)])
def test_the_slurm_job_runs_every_rank_resuming_and_requeues_itself_only_when_stopped(tmp_path, train_status,
                                                                                      requeued):
    """platform/slurm_preemptible.sh with stand-ins for srun (runs the ranks' command once, as rank 0, with a
    stand-in python that records its arguments) and scontrol."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    stand_ins = {
        "srun": 'SLURM_PROCID=0 SLURM_LOCALID=0 "$@"',
        "python": f'echo "RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE $*" >> {tmp_path}/calls\n'
                  f"exit {train_status}",
        "scontrol": f'if [ "$1" = show ]; then echo node1; echo node2; else echo "scontrol $*" >> {tmp_path}/calls; '
                    "fi",
    }
    for name, body in stand_ins.items():
        (bin_folder / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (bin_folder / name).chmod(0o755)
    environment = {**os.environ, "PATH": f"{bin_folder}:{os.environ['PATH']}", "SLURM_JOB_ID": "42",
                   "SLURM_JOB_NAME": "tts", "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_NTASKS": "16"}
    completed = subprocess.run(["bash", str(REPO_ROOT / "platform" / "slurm_preemptible.sh"), "-m", "WaveGlow",
                                "--epochs", "3"], cwd=tmp_path, env=environment, capture_output=True, text=True,
                               timeout=60)
    assert completed.returncode == train_status, completed.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == ("RANK=0 LOCAL_RANK=0 WORLD_SIZE=16 train.py -o ./output/tts --resume-from-last -m WaveGlow "
                        "--epochs 3")
    assert calls[1:] == (["scontrol requeue 42"] if requeued else [])
