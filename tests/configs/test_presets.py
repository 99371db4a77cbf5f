"""Every preset in configs/ is accepted by train.py for its model, and its values reach the resolved flags.

A preset's model is its file name's first word (configs/README.md): tacotron2_nvidia.json is for `-m Tacotron2`.
"""
import json
from pathlib import Path

import pytest

import train
from common.registry import RECIPES

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted(ROOT.glob("configs/*.json"))


def model_of(preset: Path) -> str:
    prefix = preset.stem.split("_")[0]
    names = {name.lower(): name for name in RECIPES}
    assert prefix in names, f"{preset.name}: the name must start with a model ({', '.join(names)}) and '_'"
    return names[prefix]


def flat_settings(preset: Path) -> dict:
    """{dest: value} of a preset, its sections flattened (as common.arguments.read_config_file reads it)."""
    settings = {}
    for key, value in json.loads(preset.read_text()).items():
        for name, setting in (value.items() if isinstance(value, dict) else [(key, value)]):
            settings[name.replace("-", "_")] = setting
    return settings


def test_there_are_presets():
    assert {"tacotron2_demo.json", "tacotron2_nvidia.json", "waveglow_nvidia.json"} <= {p.name for p in PRESETS}


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS, ids=lambda path: path.name)
def test_preset_dry_run_resolves_its_values(preset, synthetic_corpus, tmp_path, capsys):
    command_line = {"output": str(tmp_path / "run"), "dataset_path": str(synthetic_corpus.dataset_dir),
                    "training_files": str(synthetic_corpus.train_filelist),
                    "validation_files": str(synthetic_corpus.val_filelist)}
    train.main(["-m", model_of(preset), "--config-file", str(preset), "--dry-run",
                *(token for dest, value in command_line.items() for token in ("--" + dest.replace("_", "-"), value))])
    printed = json.loads(capsys.readouterr().out)
    assert printed["model_name"] == model_of(preset)
    settings = flat_settings(preset)
    assert settings, f"{preset.name} sets nothing"
    for dest, value in settings.items():
        if dest in command_line:  # the command line wins over a preset: checked by the next test
            continue
        assert printed["args"][dest] == value, f"{preset.name}: {dest}"


def test_command_line_wins_over_the_preset(synthetic_corpus, tmp_path, capsys):
    train.main(["-m", "WaveGlow", "--config-file", str(ROOT / "configs/waveglow_nvidia.json"), "--dry-run",
                "-o", str(tmp_path), "-d", str(synthetic_corpus.dataset_dir), "-bs", "3", "--segment-length", "4000"])
    args = json.loads(capsys.readouterr().out)["args"]
    assert (args["batch_size"], args["segment_length"], args["learning_rate"]) == (3, 4000, 1e-4)
