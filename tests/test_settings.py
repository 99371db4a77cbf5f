"""Settings reach the library typed: `common/` and the Python APIs read no parsed command line by name
(`getattr(args, ...)`, `setattr(args, ...)`); the command line's layer turns its flags into the settings dataclasses
(common.arguments.config_from_args). The trainer and every recipe hook take TrainingSettings (a family's subclass),
and a run built from them in Python equals the same run from train.py's flags."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from common.training_settings import TrainingSettings

ROOT = Path(__file__).resolve().parents[1]


def namespace_lookups(path: Path) -> list[str]:
    """`getattr(args, ...)` and `setattr(args, ...)` calls in a file, as 'file:line'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "args"):
            found.append(f"{path}:{node.lineno}")
    return found


def test_common_and_the_python_apis_read_no_command_line_by_name():
    files = sorted((ROOT / "common").rglob("*.py")) + sorted(ROOT.glob("*/api.py"))
    assert len(files) > 30 and ROOT / "tacotron2" / "api.py" in files
    assert [lookup for path in files for lookup in namespace_lookups(path)] == []


def test_the_check_finds_a_lookup_by_name(tmp_path):
    module = tmp_path / "common" / "module.py"
    module.parent.mkdir()
    module.write_text("def f(args, name):\n    return getattr(args, name, None)\n\n"
                      "def g(args):\n    setattr(args, 'x', 1)\n    return getattr(other, 'y')\n")
    assert [lookup.rsplit(":", 1)[1] for lookup in namespace_lookups(module)] == ["2", "5"]


# ---- training: the trainer and the recipes' hooks take typed settings ---------------------------------------------

# The command line's doors: they turn parsed flags into the settings, or parse (the model's flags, and the checks
# across parsed flags that check_after_parsing runs, named check_...).
COMMAND_LINE_FUNCTIONS = {"from_args", "model_config", "add_args", "translate_argv"}


def namespace_parameters(path: Path) -> list[str]:
    """Parameters annotated argparse.Namespace in a file's functions other than the command line's doors, as
    'file:line function'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.FunctionDef) and node.name not in COMMAND_LINE_FUNCTIONS
                and not node.name.startswith("check_")):
            for argument in node.args.args + node.args.kwonlyargs:
                if argument.annotation is not None and ast.unparse(argument.annotation) == "argparse.Namespace":
                    found.append(f"{path}:{node.lineno} {node.name}")
    return found


def test_the_trainer_and_every_recipe_take_typed_settings():
    from common.registry import RECIPES, get_recipe

    files = [ROOT / "common" / name for name in ("trainer.py", "training_state.py", "schedules.py", "sampler.py",
                                                 "checkpoint_retention.py", "mel_audio_data.py", "recipe.py")]
    for name in RECIPES:
        recipe = get_recipe(name)
        assert issubclass(recipe.settings, TrainingSettings), name
    files += sorted(ROOT.glob("*/recipe.py")) + sorted(ROOT.glob("*/data_function.py"))
    assert [found for path in files for found in namespace_parameters(path)] == []


def test_the_check_finds_a_namespace_parameter(tmp_path):
    module = tmp_path / "recipe.py"
    module.write_text("import argparse\n\ndef build_data(args: argparse.Namespace, config: dict):\n    pass\n\n"
                      "def model_config(args: argparse.Namespace) -> dict:\n    return {}\n")
    assert [found.rsplit(":", 1)[1] for found in namespace_parameters(module)] == ["3 build_data"]


def test_a_run_built_from_typed_settings_equals_the_same_run_from_the_command_line(tmp_path, request):
    """The Python API's way in (settings and a model config, no parser) trains exactly as train.py's flags do."""
    import torch

    from common.arguments import config_dict
    from common.audio import AudioParams
    from common.trainer import Trainer
    from tests.families import corpus_of, family_of, run_args
    from train import parse_run_args
    from waveglow.arg_parser import WaveGlowConfig, WaveGlowTrainingSettings
    from waveglow.recipe import RECIPE

    corpus, family = corpus_of("WaveGlow", request), family_of("WaveGlow")
    from_flags = Trainer.from_args(RECIPE, parse_run_args(run_args("WaveGlow", corpus, tmp_path / "flags",
                                                                   "--max-updates", "2", "--no-save")))
    from_flags.train()
    settings = WaveGlowTrainingSettings(
        output=str(tmp_path / "api"), learning_rate=family.learning_rate, seed=family.seed, max_updates=2,
        batch_size=family.batch_size, dataset_path=str(corpus.dataset_dir), training_files=str(corpus.train_filelist),
        validation_files=str(corpus.val_filelist), num_workers=0, quiet=True, cpu=True, no_save=True,
        segment_length=2048, weight_decay=0.0, audio=AudioParams())
    model_config = config_dict(WaveGlowConfig(flows=4, early_every=2, early_size=2, wn_channels=16, wn_layers=2))
    from_api = Trainer(RECIPE, settings, model_config)
    from_api.train()
    assert from_api.model_config == from_flags.model_config and from_api.iteration == from_flags.iteration == 2
    for (name, weight), (_, expected) in zip(from_api.model.state_dict().items(),
                                              from_flags.model.state_dict().items()):
        torch.testing.assert_close(weight, expected, rtol=0, atol=0, msg=name)
    with pytest.raises(TypeError, match="WaveGlowTrainingSettings"):  # another family's settings lack its flags
        Trainer(RECIPE, TrainingSettings(output=str(tmp_path / "api"), learning_rate=1e-3, epochs=1), model_config)
