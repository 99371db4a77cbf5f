"""NVIDIA's command lines: every flag that NVIDIA's launch scripts pass to train.py, for Tacotron 2,
WaveGlow, HiFi-GAN and wav2vec 2.0 (tests/data/nvidia_command_lines.json), and to inference.py
(tests/data/nvidia_inference_command_lines.json), is accepted and means what it means there, as `train.py --dry-run`
and `inference.py --dry-run` resolve it; a flag accepted only for compatibility says so in --help, and the
reference's flags with no counterpart here that would change the run are refused with what to do instead.
tests/wav2vec2/test_inference.py runs NVIDIA's wav2vec 2.0 inference command line for real."""
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

import inference
import train
from common.errors import UserError, exit_on_user_error
from common.arguments import COMPATIBILITY_GROUP
from common.sampler import MaxTokensBatchSampler
from tests.families import run_args
from tests.nvidia_command_lines import COMMAND_LINES, INFERENCE_COMMAND_LINES, filled
from tests.training_runs import untrained_checkpoint

# What the inference dry runs put for the data file's placeholders (a dry run reads none of them).
INFERENCE_PLACEHOLDERS = {"{checkpoint}": "results/finetune_base_960h/wav2vec2_update320000.pt",
                          "{asr_data}": "/datasets/LibriSpeech", "{subset}": "test-other",
                          "{output}": "results/inference", "{tacotron2}": "output/checkpoint_Tacotron2_last.pt",
                          "{waveglow}": "output/checkpoint_WaveGlow_last.pt", "{cwd}": str(Path.cwd().resolve())}


@pytest.fixture(scope="module")
def placeholders(synthetic_asr_corpus, tmp_path_factory) -> dict:
    """What the dry runs read: the tiny ASR corpus (its dictionary) and a tiny pre-trained wav2vec 2.0 checkpoint
    (fine-tuning takes its architecture)."""
    folder = tmp_path_factory.mktemp("pretrained")
    pretrained = untrained_checkpoint(run_args("wav2vec2", synthetic_asr_corpus, folder), folder / "pretrained.pt")
    return {"{asr_data}": str(synthetic_asr_corpus.directory), "{pretrained}": str(pretrained),
            "{cwd}": str(Path.cwd().resolve())}


@pytest.mark.slow
@pytest.mark.parametrize("script", COMMAND_LINES)
def test_nvidias_command_line_is_accepted_and_means_what_it_means_there(script, placeholders, capsys):
    assert_resolves_as_written(COMMAND_LINES[script], train.main, placeholders, capsys)


def assert_resolves_as_written(entry: dict, main, placeholders: dict, capsys) -> None:
    """main(entry's argv + --dry-run) resolves each flag to what entry["means"] says, and every flag is there."""
    flags = {token.split("=")[0] for token in entry["argv"] if token.startswith("-") and not token[1].isdigit()}
    assert flags == {name for name in entry["means"] if name.startswith("-")}, "each flag's meaning is written down"
    capsys.readouterr()
    main(filled(entry["argv"], placeholders) + ["--dry-run"])
    resolved = json.loads(capsys.readouterr().out)["args"]
    for flag, (destination, value) in entry["means"].items():
        assert resolved[destination] == filled(value, placeholders), f"{flag} -> {destination}"


def test_flags_accepted_only_for_compatibility_say_so_in_help():
    compatibility_only = {(entry["argv"][1], flag) for entry in COMMAND_LINES.values()
                          for flag, (destination, _) in entry["means"].items() if destination.startswith("compat_")}
    assert {model for model, _ in compatibility_only} == {"HiFiGAN", "wav2vec2"}
    for model, flag in compatibility_only:
        assert_listed_as_compatibility_only(train.build_parser(model), flag)


def assert_listed_as_compatibility_only(parser, flag: str) -> None:
    action = parser._option_string_actions[flag]
    assert action.help.startswith("compatibility only: ") and len(action.help) > 40, flag
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


@pytest.mark.parametrize("script", [script for script, entry in INFERENCE_COMMAND_LINES.items() if "means" in entry])
def test_nvidias_inference_command_line_is_accepted_and_means_what_it_means_there(script, capsys):
    assert_resolves_as_written(INFERENCE_COMMAND_LINES[script], inference.main, INFERENCE_PLACEHOLDERS, capsys)


@pytest.mark.parametrize("script", [script for script, entry in INFERENCE_COMMAND_LINES.items() if "error" in entry])
def test_an_inference_flag_that_cannot_be_honoured_here_is_one_error_line(script, capsys):
    entry = INFERENCE_COMMAND_LINES[script]
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: inference.main(filled(entry["argv"], INFERENCE_PLACEHOLDERS) + ["--dry-run"]))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {entry['error']}"), lines


def test_inference_flags_accepted_only_for_compatibility_say_so_in_help():
    compatibility_only = {("wav2vec2" if "wav2vec2" in entry["argv"] else "Tacotron2", flag)
                          for entry in INFERENCE_COMMAND_LINES.values()
                          for flag, (destination, _) in entry.get("means", {}).items()
                          if destination.startswith("compat_")}
    assert {flag for _, flag in compatibility_only} >= {"--cuda", "--speaker", "--mask_prob", "--apply_mask", "-sr"}
    for model, flag in compatibility_only:
        assert_listed_as_compatibility_only(inference.build_parser(model), flag)


@pytest.mark.parametrize("argv, message", [
    (["-m", "wav2vec2", "--w2v_path", "c.pt", "--valid_subset", "dev", "-o", "out"],
     "--valid_subset names a manifest in NVIDIA's --data folder: give --data DIR too"),
    (["-m", "wav2vec2", "--w2v_path", "c.pt", "--data", "d", "-i", "a.wav", "-o", "out"],
     "give -i or NVIDIA's --data (with --valid_subset), not both"),
    (["-m", "wav2vec2", "--w2v_path", "c.pt", "-i", "a.wav", "-o", "out", "--ema", "0.999"],
     "argument --ema: an EMA of the weights is not implemented"),
    (["--tacotron2", "t.pt", "-i", "p.txt", "-o", "out", "--speaker", "3"],
     "argument --speaker: Tacotron 2 here has one speaker, 0; got 3"),
    (["--tacotron2", "t.pt", "-i", "p.txt", "-o", "out", "--repeats", "0"], "argument --repeats: must be >= 1"),
])
def test_a_mistake_in_nvidias_inference_flags_is_one_error_line(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: inference.main([*argv, "--dry-run"]))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {message}"), lines


def test_a_log_file_that_begins_with_the_output_folder_is_read_from_the_current_folder():
    from common.inference_args import log_file_path

    def path(output, log_file):
        return log_file_path(inference.build_parser().parse_args(
            ["--tacotron2", "t.pt", "-i", "p.txt", "-o", output, "--log-file", log_file]))

    assert path("out/a", "nvlog.json") == Path("out/a/nvlog.json")  # ours: relative to --output
    assert path("./out/a", "./out/a/nvlog_infer.json") == Path("out/a/nvlog_infer.json")  # NVIDIA's scripts'
    assert path("out/a", "/tmp/log.json") == Path("/tmp/log.json")
    assert path("out/a", "out/nvlog.json") == Path("out/a/out/nvlog.json")


def test_warmup_steps_is_the_number_of_warm_up_runs():
    from common.inference_args import WARMUP_RUNS, warm_up

    def runs(*argv, force=False):
        seeds = []
        args = inference.parse_inference_args(["--tacotron2", "t.pt", "-i", "p.txt", "-o", "out", *argv])
        warm_up(seeds.append, args, force=force)
        return seeds

    assert runs() == [] and runs("--include-warmup") == runs(force=True) == [1234 + n for n in range(WARMUP_RUNS)]
    assert runs("--warmup_steps", "5") == [1234 + n for n in range(5)] and runs("--warmup-steps", "0", force=True) == []


@pytest.mark.slow
def test_nvidias_tsv_filelist_gives_the_wavs_of_its_text_column(tacotron2_checkpoint, tmp_path):
    """HiFi-GAN's inference_example.sh reads a .tsv filelist (header mel, output, text): its text lines give the
    wavs the same text gives as a plain text file (each named by its line in the file, the header being line 1)."""
    texts = ["Hello world.", "A second, longer sentence."]
    (tmp_path / "phrases.txt").write_text("".join(text + "\n" for text in texts))
    (tmp_path / "devset.tsv").write_text("mel\toutput\ttext\n" + "".join(
        f"mels/LJ0{n}.pt\tLJ0{n}.wav\t{text}\n" for n, text in enumerate(texts)))
    for name in ("phrases.txt", "devset.tsv"):
        inference.main(["-i", str(tmp_path / name), "-o", str(tmp_path / name[:-4]), "--tacotron2",
                        str(tacotron2_checkpoint), "--cpu", "--quiet", "--griffin-lim-iters", "2", "--cuda",
                        "--speaker", "0", "--dataset-path", str(tmp_path), "--repeats", "1"])
    for number in range(1, len(texts) + 1):
        from_text, _ = soundfile.read(str(tmp_path / "phrases" / f"audio_{number}.wav"))
        from_tsv, _ = soundfile.read(str(tmp_path / "devset" / f"audio_{number + 1}.wav"))
        np.testing.assert_array_equal(from_tsv, from_text)
    (tmp_path / "bad.tsv").write_text("mel\toutput\nmels/a.pt\ta.wav\n")
    with pytest.raises(UserError, match="a .tsv's first line names its columns, and one must be `text`"):
        inference.main(["-i", str(tmp_path / "bad.tsv"), "-o", str(tmp_path / "bad"), "--tacotron2",
                        str(tacotron2_checkpoint), "--cpu", "--quiet"])
