"""Every shell script parses, and every train.py command line a launch script builds is accepted by train.py's parser
and resolves to NVIDIA's hyper-parameters."""
import contextlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import train
from common.arguments import parse_args
from common.registry import model_name_in

ROOT = Path(__file__).resolve().parents[2]
SHELL_SCRIPTS = sorted([*ROOT.glob("scripts/*.sh"), *ROOT.glob("scripts/*/*.sh"), *ROOT.glob("experiments/*/*.sh"),
                        *ROOT.glob("platform/*.sh"), ROOT / ".ci" / "run"])
PLATFORM_FILES = sorted(ROOT.glob("platform/*_train.sh"))
DRY_RUN_ENV = {**os.environ, "DRY_RUN": "1", "PYTHON": "python"}


def printed_command(script, *arguments, environment=None):
    """Run a launch script with DRY_RUN=1 and check its train.py command line with train.py's own parser."""
    command, _ = printed_command_and_args(script, *arguments, environment=environment)
    return command


def printed_command_and_args(script, *arguments, environment=None):
    """The command line a launch script prints with DRY_RUN=1, and the flags train.py resolves from it."""
    completed = subprocess.run(["bash", str(script), *arguments], env={**DRY_RUN_ENV, **(environment or {})},
                               capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert completed.returncode == 0, completed.stderr[-2000:]
    command = completed.stdout.strip()
    argv = shlex.split(command)
    argv = argv[argv.index("train.py") + 1:]
    with contextlib.chdir(ROOT):  # the scripts name their presets relative to the repository root
        args = parse_args(train.build_parser(model_name_in(argv)), argv)  # exits naming an unknown flag
    return command, args


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_shell_script_parses(script):
    completed = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_platform_covers_every_machine_precision_and_gpu_count():
    names = {path.name for path in PLATFORM_FILES}
    for machine, precisions in {"DGX1": ["AMP", "FP32"], "DGXA100": ["AMP", "TF32"],
                                "DGXH100": ["AMP", "BF16", "TF32"]}.items():
        for model in ("tacotron2", "waveglow", "hifigan"):
            for precision in precisions:
                for gpus in (1, 4, 8):
                    assert f"{machine}_{model}_{precision}_{gpus}NGPU_train.sh" in names


@pytest.mark.parametrize("script", PLATFORM_FILES, ids=lambda path: path.name)
def test_platform_script_flags_are_accepted_and_gpu_count_is_used(script):
    command = printed_command(script)
    gpus = int(re.search(r"_(\d)NGPU_", script.name).group(1))
    if gpus == 1:
        assert "torchrun" not in command
    else:
        assert f"--nproc-per-node {gpus}" in command
    precision = script.name.split("_")[2]
    expected_flag = {"AMP": "--amp", "BF16": "--bf16", "TF32": "--tf32", "FP32": "--no-tf32"}[precision]
    assert expected_flag in command.split()


# NVIDIA's platform recipes, per (machine, model, precision): per-GPU batch size, anneal factor (Tacotron 2) or
# gradient clipping threshold (WaveGlow; 0 is "off", which NVIDIA wrote as the float32 maximum).
NVIDIA_PLATFORM_VALUES = {
    ("DGX1", "tacotron2", "AMP"): (104, 0.3), ("DGX1", "tacotron2", "FP32"): (48, 0.1),
    ("DGXA100", "tacotron2", "AMP"): (128, 0.3), ("DGXA100", "tacotron2", "TF32"): (128, 0.1),
    ("DGXH100", "tacotron2", "AMP"): (128, 0.3), ("DGXH100", "tacotron2", "BF16"): (128, 0.3),
    ("DGXH100", "tacotron2", "TF32"): (128, 0.1),
    ("DGX1", "waveglow", "AMP"): (10, 65504.0), ("DGX1", "waveglow", "FP32"): (4, 0.0),
    ("DGXA100", "waveglow", "AMP"): (10, 65504.0), ("DGXA100", "waveglow", "TF32"): (4, 0.0),
    ("DGXH100", "waveglow", "AMP"): (10, 65504.0), ("DGXH100", "waveglow", "BF16"): (10, 0.0),
    ("DGXH100", "waveglow", "TF32"): (4, 0.0),
}


@pytest.mark.parametrize("machine, model, precision", sorted(NVIDIA_PLATFORM_VALUES),
                         ids=["_".join(key) for key in sorted(NVIDIA_PLATFORM_VALUES)])
def test_platform_scripts_resolve_to_nvidia_hyper_parameters(machine, model, precision):
    command, args = printed_command_and_args(ROOT / f"platform/{machine}_{model}_{precision}_8NGPU_train.sh")
    assert f"--config-file configs/{model}_nvidia.json" in command
    batch_size, tuned_value = NVIDIA_PLATFORM_VALUES[machine, model, precision]
    assert args.batch_size == batch_size
    assert args.weight_decay == {"tacotron2": 1e-6, "waveglow": 0.0}[model]
    if model == "tacotron2":
        assert (args.learning_rate, args.epochs, args.anneal_steps) == (1e-3, 1501, [500, 1000, 1500])
        assert (args.anneal_factor, args.grad_clip_thresh) == (tuned_value, 1.0)
        assert args.load_mel_from_disk and args.training_files == "filelists/ljs_mel_text_train_filelist.txt"
    else:
        assert (args.learning_rate, args.epochs, args.segment_length) == (1e-4, 1001, 8000)
        assert args.grad_clip_thresh == tuned_value and args.cudnn_benchmark


# HiFi-GAN: NVIDIA's global batch of 128 as (per-GPU batch, gradient accumulation) per (machine, precision, GPUs).
HIFIGAN_PLATFORM_VALUES = {
    ("DGX1", "AMP", 1): (64, 2), ("DGX1", "FP32", 1): (32, 4), ("DGX1", "AMP", 4): (32, 1), ("DGX1", "FP32", 8): (16, 1),
    ("DGXA100", "AMP", 1): (128, 1), ("DGXA100", "TF32", 1): (128, 1), ("DGXA100", "TF32", 4): (32, 1),
    ("DGXA100", "AMP", 8): (16, 1), ("DGXH100", "BF16", 1): (128, 1), ("DGXH100", "TF32", 8): (16, 1),
}


@pytest.mark.parametrize("machine, precision, gpus", sorted(HIFIGAN_PLATFORM_VALUES),
                         ids=[f"{m}_{p}_{g}" for m, p, g in sorted(HIFIGAN_PLATFORM_VALUES)])
def test_hifigan_platform_scripts_resolve_to_nvidias_global_batch(machine, precision, gpus):
    command, args = printed_command_and_args(ROOT / f"platform/{machine}_hifigan_{precision}_{gpus}NGPU_train.sh")
    assert "-m HiFiGAN --training-files filelists/ljs_audio_text_train_filelist.txt" in command
    assert (args.batch_size, args.grad_accumulation) == HIFIGAN_PLATFORM_VALUES[machine, precision, gpus]
    assert args.batch_size * args.grad_accumulation * gpus == 128
    assert (args.learning_rate, args.lr_decay, args.epochs, args.segment_length) == (3e-4, 0.9998, 6500, 8192)


def test_hifigan_training_and_fine_tuning_scripts():
    command, args = printed_command_and_args(ROOT / "scripts/hifigan/train_hifigan.sh", environment={
        "NUM_GPUS": "8", "PRECISION": "amp", "BATCH_SIZE": "16", "GRAD_ACCUMULATION": "2"})
    assert "--nproc-per-node 8" in command and "--config-file configs/hifigan_nvidia.json" in command
    assert (args.batch_size, args.grad_accumulation, args.amp, args.output) == (16, 2, True, "./output/hifigan")
    command, args = printed_command_and_args(ROOT / "scripts/hifigan/fine_tune_hifigan.sh", environment={
        "FINE_TUNE_FROM": "output/hifigan/checkpoint_HiFiGAN_last.pt", "DATA_DIR": "data/ljs"})
    assert args.fine_tune_from == "output/hifigan/checkpoint_HiFiGAN_last.pt"
    assert (args.input_mels_dir, args.fine_tune_lr_factor, args.epochs) == ("data/ljs/mels-gta", 3.0, 3500)
    assert args.learning_rate * args.fine_tune_lr_factor == pytest.approx(3e-4 * 0.9998 ** 6500 * 3, rel=1e-3)
    assert args.output == "./output/hifigan_ft"  # not the base run's folder, whose checkpoints rotate
    completed = subprocess.run(["bash", "scripts/hifigan/fine_tune_hifigan.sh"], env=DRY_RUN_ENV, capture_output=True,
                               text=True, cwd=ROOT)
    assert completed.returncode == 2 and "set FINE_TUNE_FROM" in completed.stderr


def test_platform_environment_overrides_the_preset():
    _, args = printed_command_and_args(ROOT / "platform/DGXA100_tacotron2_AMP_1NGPU_train.sh", "--epochs", "2",
                                       environment={"BATCH_SIZE": "7", "EPOCHS": "5", "OUTPUT_DIR": "out/x"})
    assert (args.batch_size, args.epochs, args.output) == (7, 2, "out/x")  # flags after the script's own win


@pytest.mark.parametrize("script, environment", [
    ("scripts/train_tacotron2.sh", {"NUM_GPUS": "8", "PRECISION": "amp", "BATCH_SIZE": "104"}),
    ("scripts/train_tacotron2.sh", {"PRECISION": "fp32"}),
    ("scripts/train_waveglow.sh", {"NUM_GPUS": "4", "PRECISION": "bf16"}),
    ("scripts/train_waveglow.sh", {"PRECISION": "amp"}),
])
def test_training_scripts_are_accepted_by_train_py(script, environment):
    command, args = printed_command_and_args(ROOT / script, environment=environment)
    model = Path(script).stem.removeprefix("train_")
    assert f"--config-file configs/{model}_nvidia.json" in command
    nvidia_batch_size = {"tacotron2": 48, "waveglow": 4}[model]  # the preset's, on a 16 GB V100 in fp32
    assert args.batch_size == int(environment.get("BATCH_SIZE", nvidia_batch_size))
    if environment.get("NUM_GPUS", "1") != "1":
        assert f"--nproc-per-node {environment['NUM_GPUS']}" in command
    if "BATCH_SIZE" in environment:
        assert f"-bs {environment['BATCH_SIZE']}" in command


def test_a_launch_script_with_an_unknown_flag_is_caught(capsys):
    with pytest.raises(SystemExit):
        printed_command(ROOT / "platform/launch.sh", "DGXA100", "tacotron2", "AMP", "8", "--no-such-flag")
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_multiproc_builds_a_torchrun_command(monkeypatch):
    sys.path.insert(0, str(ROOT))
    import multiproc

    monkeypatch.setenv("NPROC_PER_NODE", "3")
    assert multiproc.torchrun_arguments(["train.py", "-m", "WaveGlow"]) == [
        "--standalone", "--nproc-per-node=3", "train.py", "-m", "WaveGlow"]
    with pytest.raises(SystemExit, match="usage"):
        multiproc.torchrun_arguments([])


def test_multiproc_passes_a_failed_rank_s_exit_status_on_without_torchrun_s_traceback(tmp_path):
    """A user's mistake under two ranks ends as it does in one process: its error line and exit status 2."""
    env = {**os.environ, "NPROC_PER_NODE": "2", "OMP_NUM_THREADS": "1"}
    completed = subprocess.run([sys.executable, "-m", "multiproc", "train.py", "-m", "Tacotron2", "-o",
                                str(tmp_path / "out"), "-lr", "1e-3", "--no-such-flag"],
                               cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "unrecognized arguments: --no-such-flag" in completed.stderr
    assert "Traceback" not in completed.stderr and "ChildFailedError" not in completed.stderr
