"""Every shell recipe parses, and every train.py command line it builds is accepted by train.py's parser."""
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
SHELL_SCRIPTS = sorted([*ROOT.glob("scripts/*.sh"), *ROOT.glob("scripts/docker/*.sh"), *ROOT.glob("platform/*.sh"),
                        ROOT / ".ci" / "run"])
PLATFORM_FILES = sorted(ROOT.glob("platform/*_train.sh"))
DRY_RUN_ENV = {**os.environ, "DRY_RUN": "1", "PYTHON": "python"}


def printed_command(script, *arguments, environment=None):
    """Run a recipe with DRY_RUN=1 and check its train.py command line with train.py's own parser."""
    completed = subprocess.run(["bash", str(script), *arguments], env={**DRY_RUN_ENV, **(environment or {})},
                               capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert completed.returncode == 0, completed.stderr[-2000:]
    command = completed.stdout.strip()
    argv = shlex.split(command)
    argv = argv[argv.index("train.py") + 1:]
    parse_args(train.build_parser(model_name_in(argv)), argv)  # exits with the unknown flag's name on error
    return command


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_shell_script_parses(script):
    completed = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_platform_covers_every_machine_precision_and_gpu_count():
    names = {path.name for path in PLATFORM_FILES}
    for machine, precisions in {"DGX1": ["AMP", "FP32"], "DGXA100": ["AMP", "TF32"],
                                "DGXH100": ["AMP", "BF16", "TF32"]}.items():
        for model in ("tacotron2", "waveglow"):
            for precision in precisions:
                for gpus in (1, 4, 8):
                    assert f"{machine}_{model}_{precision}_{gpus}NGPU_train.sh" in names


@pytest.mark.parametrize("script", PLATFORM_FILES, ids=lambda path: path.name)
def test_platform_recipe_flags_are_accepted_and_gpu_count_is_used(script):
    command = printed_command(script)
    gpus = int(re.search(r"_(\d)NGPU_", script.name).group(1))
    if gpus == 1:
        assert "torchrun" not in command
    else:
        assert f"--nproc-per-node {gpus}" in command
    precision = script.name.split("_")[2]
    expected_flag = {"AMP": "--amp", "BF16": "--bf16", "TF32": "--tf32", "FP32": "--no-tf32"}[precision]
    assert expected_flag in command.split()


@pytest.mark.parametrize("script, environment", [
    ("scripts/train_tacotron2.sh", {"NUM_GPUS": "8", "PRECISION": "amp", "BATCH_SIZE": "104"}),
    ("scripts/train_tacotron2.sh", {"PRECISION": "fp32"}),
    ("scripts/train_waveglow.sh", {"NUM_GPUS": "4", "PRECISION": "bf16"}),
    ("scripts/train_waveglow.sh", {"PRECISION": "amp"}),
])
def test_training_recipes_are_accepted_by_train_py(script, environment):
    command = printed_command(ROOT / script, environment=environment)
    if environment.get("NUM_GPUS", "1") != "1":
        assert f"--nproc-per-node {environment['NUM_GPUS']}" in command
    if "BATCH_SIZE" in environment:
        assert f"-bs {environment['BATCH_SIZE']}" in command


def test_a_recipe_with_an_unknown_flag_is_caught(capsys):
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
