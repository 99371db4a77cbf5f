"""NVIDIA's command lines (issue 21): every flag that NVIDIA's launch scripts pass to train.py, for Tacotron 2,
WaveGlow, HiFi-GAN and wav2vec 2.0 (tests/data/nvidia_command_lines.json), is accepted and means what it means
there, as `train.py --dry-run` resolves it; a flag accepted only for compatibility says so in --help, and the
reference's flags with no counterpart here that would change the run are refused with what to do instead."""
import json
from pathlib import Path

import pytest

import train
from common.errors import exit_on_user_error
from common.arguments import COMPATIBILITY_GROUP
from common.sampler import MaxTokensBatchSampler
from tests.families import run_args
from tests.training_runs import untrained_checkpoint

COMMAND_LINES = {script: entry for script, entry in
                 json.loads((Path(__file__).parent / "data" / "nvidia_command_lines.json").read_text()).items()
                 if not script.startswith("_")}


@pytest.fixture(scope="module")
def placeholders(synthetic_asr_corpus, tmp_path_factory) -> dict:
    """What the dry runs read: the tiny ASR corpus (its dictionary) and a tiny pre-trained wav2vec 2.0 checkpoint
    (fine-tuning takes its architecture)."""
    folder = tmp_path_factory.mktemp("pretrained")
    pretrained = untrained_checkpoint(run_args("wav2vec2", synthetic_asr_corpus, folder), folder / "pretrained.pt")
    return {"{asr_data}": str(synthetic_asr_corpus.directory), "{pretrained}": str(pretrained),
            "{cwd}": str(Path.cwd().resolve())}


def filled(value, placeholders: dict):
    if isinstance(value, str):
        for placeholder, text in placeholders.items():
            value = value.replace(placeholder, text)
    return value


@pytest.mark.slow
@pytest.mark.parametrize("script", COMMAND_LINES)
def test_nvidias_command_line_is_accepted_and_means_what_it_means_there(script, placeholders, capsys):
    entry = COMMAND_LINES[script]
    flags = {token.split("=")[0] for token in entry["argv"] if token.startswith("-")}
    assert flags == {name for name in entry["means"] if name.startswith("-")}, "each flag's meaning is written down"
    capsys.readouterr()
    train.main([filled(token, placeholders) for token in entry["argv"]] + ["--dry-run"])
    resolved = json.loads(capsys.readouterr().out)["args"]
    for flag, (destination, value) in entry["means"].items():
        assert resolved[destination] == filled(value, placeholders), f"{flag} -> {destination}"


def test_flags_accepted_only_for_compatibility_say_so_in_help():
    compatibility_only = {(entry["argv"][1], flag) for entry in COMMAND_LINES.values()
                          for flag, (destination, _) in entry["means"].items() if destination.startswith("compat_")}
    assert {model for model, _ in compatibility_only} == {"HiFiGAN", "wav2vec2"}
    for model, flag in compatibility_only:
        parser = train.build_parser(model)
        action = parser._option_string_actions[flag]
        assert action.help.startswith("compatibility only: ") and len(action.help) > 40, (model, flag)
        group = next(group for group in parser._action_groups if action in group._group_actions)
        assert group.title == COMPATIBILITY_GROUP
        assert COMPATIBILITY_GROUP in parser.format_help()


@pytest.mark.parametrize("model, argv, message", [
    ("wav2vec2", ["--ema", "0.999"], "argument --ema: an EMA of the weights is not implemented"),
    ("wav2vec2", ["--optimizer", "lamb"], "argument --optimizer: invalid choice: 'lamb'"),
    ("wav2vec2", ["--lr_policy", "cosine"], "argument --lr-policy: invalid choice: 'cosine'"),
])
def test_a_reference_flag_that_cannot_mean_the_same_here_is_one_error_line(model, argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: train.main(["-m", model, "-o", str(tmp_path), "-lr", "1", *argv, "--dry-run"]))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {message}"), lines


def test_skip_invalid_size_inputs_leaves_out_the_validation_items_longer_than_max_tokens(capsys):
    lengths = [5, 30, 8, 40, 7]
    with pytest.raises(ValueError, match="2 item\\(s\\) are longer than --max-tokens 20"):
        MaxTokensBatchSampler(lengths, max_tokens=20, shuffle=False, drop_uneven=False)
    batches = list(MaxTokensBatchSampler(lengths, max_tokens=20, shuffle=False, drop_uneven=False,
                                         skip_too_long=True))
    assert sorted(index for batch in batches for index in batch) == [0, 2, 4]
    assert "leaving out 2 of 5 items longer than 20 samples" in capsys.readouterr().out
