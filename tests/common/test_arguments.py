"""common/arguments.py: flags generated from a config dataclass, and NVIDIA's spellings read once for every family."""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import train
from common.arguments import (COMPATIBILITY_GROUP, UNDERSCORE_SPELLING, add_dataclass_args, audio_flag, config_dict,
                              config_from_args, flag, positive_int, read_reference_spellings)
from common.errors import UserError, exit_on_user_error
from common.inference_args import add_inference_args, inference_dtype
from common.registry import RECIPES


@dataclass
class ToyConfig:
    n_mel_channels: int = audio_flag("n_mel_channels")
    width: int = flag(16, "channels", type=positive_int)
    rates: list[int] = flag([2, 4], "one per stage")
    scale: float | None = flag(None, "None: automatic")
    mode: str = flag("fast", "how", choices=["fast", "slow"], aliases=["--toy-mode"])
    off_switch: bool = flag(False, "a switch, off by default")
    on_switch: bool = flag(True, "a switch, on by default")
    divisor: int = flag(1, "recorded only when changed", saved_if_changed=True)


def toy_parser(**keywords) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_dataclass_args(parser.add_argument_group("toy"), ToyConfig, **keywords)
    parser.add_argument("--n-mel-channels", type=int, default=80)
    return parser


def test_each_field_is_a_flag_with_its_default_type_help_and_aliases():
    parser = toy_parser()
    args = parser.parse_args([])
    assert (args.width, args.rates, args.scale, args.mode, args.off_switch, args.on_switch) == (
        16, [2, 4], None, "fast", False, True)
    args = parser.parse_args(["--width", "8", "--rates", "3", "5", "7", "--scale", "0.5", "--toy-mode", "slow",
                              "--off-switch", "--no-on-switch"])
    assert (args.width, args.rates, args.scale, args.mode, args.off_switch, args.on_switch) == (
        8, [3, 5, 7], 0.5, "slow", True, False)
    assert parser.parse_args([]).rates is not ToyConfig().rates  # a fresh list each time
    assert "--no-off-switch" not in parser._option_string_actions  # a switch that is off by default has no --no-
    assert "--n-mel-channels" in parser._option_string_actions and "channels" in parser.format_help()
    with pytest.raises(SystemExit):
        parser.parse_args(["--width", "0"])  # the field's value checker


def test_the_config_is_built_from_the_flags_and_saved_as_a_plain_dict():
    args = toy_parser().parse_args(["--width", "8", "--n-mel-channels", "40"])
    config = config_from_args(ToyConfig, args, mode="slow")
    assert config == ToyConfig(n_mel_channels=40, width=8, mode="slow")
    assert config_dict(config) == {"n_mel_channels": 40, "width": 8, "rates": [2, 4], "scale": None,
                                   "mode": "slow", "off_switch": False, "on_switch": True}
    assert config_dict(ToyConfig(divisor=2))["divisor"] == 2


def test_defaults_named_leaves_every_flag_unset_and_says_the_default_in_help():
    parser = toy_parser(defaults_named="Base")
    args = parser.parse_args([])
    assert (args.width, args.rates, args.on_switch, args.off_switch) == (None, None, None, None)
    assert parser.parse_args(["--off-switch"]).off_switch is True
    assert parser.parse_args(["--no-on-switch"]).on_switch is False
    assert "(Base: 16)" in parser.format_help()


def test_underscore_spellings_and_renamed_flags_are_read_as_ours_and_values_are_kept():
    parser = toy_parser()
    parser.add_argument("--learning-rate", type=float)
    argv = ["--width", "4", "--toy_mode=slow", "--rates", "1", "2", "--lr", "0.5", "--off_switch", "--no_on_switch",
            "--scale", "-1"]
    translated = read_reference_spellings(argv, parser, renamed={"--lr": "--learning-rate"})
    assert translated == ["--width", "4", "--toy-mode=slow", "--rates", "1", "2", "--learning-rate", "0.5",
                          "--off-switch", "--no-on-switch", "--scale", "-1"]
    assert read_reference_spellings(["--learning_rate", "1"], parser, renamed={"--learning_rate": "--lr"}) == [
        "--learning-rate", "1"]  # a flag of ours is never renamed
    assert read_reference_spellings(["--widht_x", "1"], parser) == ["--widht_x", "1"]  # left for argparse to refuse


@pytest.mark.parametrize("model, argv, destination, value", [
    ("WaveGlow", ["--segment_length", "8000", "--wn_channels", "256"], "segment_length", 8000),
    ("HiFiGAN", ["--segment_size", "4096"], "segment_length", 4096),
    ("HiFiGAN", ["--segment-size", "4096"], "segment_length", 4096),
    ("HiFiGAN", ["--upsample_initial_channel", "256", "--lr_decay", "0.999"], "lr_decay", 0.999),
    ("wav2vec2", ["--sample_rate", "8000"], "sampling_rate", 8000),
    ("wav2vec2", ["--sample-rate", "8000"], "sampling_rate", 8000),
    ("Tacotron2", ["--decoder_rnn_dim", "512"], "decoder_rnn_dim", 512),
])
def test_every_family_reads_nvidias_spellings(model, argv, destination, value, tmp_path, capsys):
    train.main(["-m", model, "-o", str(tmp_path), "-lr", "1", *argv, "--dry-run"])
    assert json.loads(capsys.readouterr().out)["args"][destination] == value


@pytest.mark.parametrize("model, flag_name", [("HiFiGAN", "--segment_sise"), ("wav2vec2", "--max_tokenz"),
                                              ("WaveGlow", "--wn_channel")])
def test_a_misspelt_underscore_flag_is_one_error_line(model, flag_name, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: train.main(["-m", model, "-o", str(tmp_path), "-lr", "1", flag_name, "1",
                                               "--dry-run"]))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1 and f"unrecognized arguments: {flag_name} 1" in lines[0]


@pytest.mark.parametrize("model", RECIPES)
def test_help_says_which_spellings_are_read_for_compatibility(model):
    help_text = " ".join(train.build_parser(model).format_help().split())
    assert COMPATIBILITY_GROUP in help_text and UNDERSCORE_SPELLING in help_text
    if model == "wav2vec2":
        assert "--lr for --learning-rate" in help_text and "--sample_rate for --sampling-rate" in help_text


def test_a_preset_may_name_a_flag_by_its_alias(tmp_path, capsys):
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps({"data": {"segment-size": 4096}}))
    train.main(["-m", "HiFiGAN", "-o", str(tmp_path), "-lr", "1", "--config-file", str(preset), "--dry-run"])
    assert json.loads(capsys.readouterr().out)["args"]["segment_length"] == 4096


@pytest.mark.parametrize("flags, expected", [([], "bf16"), (["--fp32"], "fp32"), (["--amp"], "amp"),
                                             (["--fp32", "--bf16"], "bf16"), (["--amp", "--fp32"], "fp32")])
def test_the_last_precision_named_wins_over_the_preset_and_earlier_flags(flags, expected, tmp_path, capsys):
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps({"run": {"bf16": True}}))
    train.main(["-m", "HiFiGAN", "-o", str(tmp_path), "-lr", "1", "--config-file", str(preset), "--dry-run", *flags])
    args = json.loads(capsys.readouterr().out)["args"]
    assert [name for name in ("amp", "bf16", "fp32") if args[name]] == [expected]


@pytest.mark.parametrize("flags, dtype", [([], torch.float32), (["--amp"], torch.float16),
                                          (["--amp", "--bf16"], torch.bfloat16), (["--bf16", "--fp32"], torch.float32)])
def test_inference_runs_in_the_last_precision_named(flags, dtype):
    parser = argparse.ArgumentParser()
    add_inference_args(parser)
    assert inference_dtype(parser.parse_args(["-o", "out", *flags])) == dtype


# ---- presets: each value goes through its flag's own checks and action, as on the command line ------------------

PRESETS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.json"))


def command_line_of(preset: Path, parser: argparse.ArgumentParser) -> list[str]:
    """The preset written as flags: a switch as --name (true) or --no-name / nothing (false), null as nothing (its
    flag's default is null), a list as its values, a list of lists as one JSON token."""
    tokens = []
    for key, value in json.loads(preset.read_text()).items():
        for name, setting in (value.items() if isinstance(value, dict) else [(key, value)]):
            flag_name = "--" + name.replace("_", "-")
            if isinstance(setting, bool):
                no_flag = "--no-" + flag_name[2:]
                tokens += [flag_name] if setting else [no_flag] if no_flag in parser._option_string_actions else []
            elif setting is None:
                continue
            elif isinstance(setting, list):
                values = [json.dumps(setting)] if any(isinstance(item, list) for item in setting) else setting
                tokens += [flag_name, *map(str, values)]
            else:
                tokens += [flag_name, str(setting)]
    return tokens


@pytest.mark.parametrize("preset", PRESETS, ids=lambda path: path.name)
def test_a_preset_means_what_the_same_flags_on_the_command_line_mean(preset, tmp_path, capsys, request):
    model = {name.lower(): name for name in RECIPES}[preset.stem.split("_")[0]]
    data = []
    if model == "wav2vec2":  # fine-tuning's model config reads the dictionary of --data
        data = ["--data", str(request.getfixturevalue("synthetic_asr_corpus").directory)]
        data += ["finetune"] if "finetune" in preset.stem or "asr" in preset.stem else []
    run = ["-m", model, *data, "-o", str(tmp_path), "--dry-run"]
    train.main(run + ["--config-file", str(preset)])
    from_preset = json.loads(capsys.readouterr().out)
    train.main(run + command_line_of(preset, train.build_parser(model)))
    from_flags = json.loads(capsys.readouterr().out)
    del from_preset["args"]["config_file"], from_flags["args"]["config_file"]
    assert from_preset == from_flags


@pytest.mark.parametrize("model, preset, destination, value", [
    ("Tacotron2", {"training": {"epochs": "7"}}, "epochs", 7),  # converted by the flag's type, as "7" on the line
    ("Tacotron2", {"cudnn_enabled": False}, "cudnn_enabled", False),  # its --no- form
    ("Tacotron2", {"guided-attn-weight": 2}, "guided_attn_weight", 2.0),
    ("wav2vec2", {"lr_policy": "exp"}, "lr_schedule", "tri-stage"),  # the flag's action runs
    ("wav2vec2", {"conv-bias": True}, "conv_bias", True),
    ("HiFiGAN", {"resblock-dilation-sizes": [[1, 2], [2, 6], [3]]}, "resblock_dilation_sizes", [[1, 2], [2, 6], [3]]),
    ("HiFiGAN", {"mpd_periods": [2, 3]}, "mpd_periods", [2, 3]),
    ("HiFiGAN", {"mel-fmax-loss": None}, "mel_fmax_loss", None),
])
def test_a_preset_value_is_converted_by_its_flag(model, preset, destination, value, tmp_path, capsys):
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    train.main(["-m", model, "-o", str(tmp_path), "-lr", "1", "--config-file", str(path), "--dry-run"])
    assert json.loads(capsys.readouterr().out)["args"][destination] == value


@pytest.mark.parametrize("preset, message", [
    ({"keep_last_checkpoints": -1}, "keep_last_checkpoints: must be >= 0, got -1"),
    ({"data": {"segment-size": 2048.5}}, "segment-size: invalid int value: '2048.5'"),
    ({"hifigan-preset": "v9"}, "hifigan-preset: invalid choice: 'v9' (choose from 'v1', 'v2', 'v3')"),
    ({"mpd-periods": [2, -3]}, "mpd-periods: expected a list of positive integers, got '2 -3'"),
    ({"adam-betas": [{"beta1": 0.8}, 0.99]}, 'adam-betas: expected a value or a list of values, got [{"beta1": 0.8}, '
                                             '0.99]'),
    ({"adam-betas": [0.8, 0.99, 0.9]}, "adam-betas: expected a list of 2 values, got [0.8, 0.99, 0.9]"),
    ({"amp": 1}, "amp: expected true or false, got 1"),
])
def test_a_preset_value_its_flag_refuses_is_an_error_naming_the_file_and_key(preset, message, tmp_path):
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    with pytest.raises(UserError) as refused:
        train.main(["-m", "HiFiGAN", "-o", str(tmp_path), "-lr", "1", "--config-file", str(path), "--dry-run"])
    assert str(refused.value) == f"--config-file {path}: {message}"


def test_the_mel_checks_are_for_the_families_that_compute_mels(tmp_path, capsys):
    # wav2vec 2.0 reads 8 kHz audio with the mel flags' defaults untouched: they mean nothing to it
    train.main(["-m", "wav2vec2", "-o", str(tmp_path), "-lr", "1", "--sampling-rate", "8000", "--dry-run"])
    assert json.loads(capsys.readouterr().out)["args"]["sampling_rate"] == 8000
    for model in ("Tacotron2", "WaveGlow", "WaveNet", "HiFiGAN", "MelInverter"):
        with pytest.raises(UserError, match=r"^--mel-fmax 8000 is above the Nyquist frequency of --sampling-rate "
                                            r"8000 \(4000 Hz\)"):
            train.main(["-m", model, "-o", str(tmp_path), "-lr", "1", "--sampling-rate", "8000", "--dry-run"])
    train.main(["-m", "Tacotron2", "-o", str(tmp_path), "-lr", "1", "--sampling-rate", "8000", "--mel-fmax", "4000",
                "--dry-run"])
