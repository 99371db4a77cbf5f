"""scripts/wav2vec2/demo_asr.sh (`make demo-asr`): every step end to end in QUICK=1 mode (a tiny corpus and a tiny
model), and the report it leaves (scripts/wav2vec2/report_asr_demo.py). The CER of a 4-update model means nothing:
only the fields are checked here; what the real demo reaches is in wav2vec2/RESULTS.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import train
from scripts.data.asr_corpus import HELD_OUT_VOICES
from wav2vec2.model import parse_conv_feature_layers

ROOT = Path(__file__).resolve().parents[2]


def run_demo(data: Path, output: Path, *flags: str, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/wav2vec2/demo_asr.sh", *flags], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHON": sys.executable, "QUICK": "1",
                                            "DATA_DIR": str(data), "OUTPUT_DIR": str(output),
                                            "OMP_NUM_THREADS": "1", **environment})


@pytest.mark.slow
def test_quick_demo_builds_a_re_spoken_copy_trains_tests_and_reports(tmp_path):
    data, output = tmp_path / "asr", tmp_path / "demo"
    completed = run_demo(data, output)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]

    # the corpus, with the stamp of its arguments
    assert (data / ".demo_asr_corpus").read_text().split() == [
        "--num-utterances", "12", "--seed", "1234", "--text", "open", "--open-utterances", "8",
        "--everyday-sentences", "2"]
    assert {"train.tsv", "valid.tsv", "test_sentences.tsv", "test_voice.tsv", "test_everyday.tsv",
            "test_everyday_voices.tsv", "dict.ltr.txt"} <= {path.name for path in data.iterdir()}
    # trained on the copy with made-up accents, tested on the corpus
    parameters = json.loads((output / "nvlog.json").read_text().splitlines()[0][5:])["data"]
    assert parameters["data"] == str(tmp_path / "asr_accent")
    # training, then one inference folder per test split: 2 held-out template sentences, 2 everyday sentences (by
    # training voices, then by each of the 4 held-out voices)
    sizes = {"test_sentences": 2, "test_voice": 2, "test_everyday": 2, "test_everyday_voices": 8}
    assert (output / "checkpoint_wav2vec2_last.pt").exists()
    for split, size in sizes.items():
        for decoded in (split, f"{split}_lm"):  # greedy, and the beam search with the 2-gram language model
            predictions = (output / decoded / "predictions.txt").read_text().splitlines()
            assert len(predictions) == size
    # the language model knows the transcripts' words and each of the lexicon's 20,000, and English word pairs
    arpa = (output / "lm_2gram.arpa").read_text()
    assert arpa.startswith("\n\\data\\\nngram 1=") and int(arpa.split("ngram 1=")[1].split()[0]) > 20000
    assert int(arpa.split("ngram 2=")[1].split()[0]) > 200000 and "\tTHE RIVER\n" in arpa

    report = json.loads((output / "report.json").read_text())
    assert report["updates"] == 4 and report["checkpoint"] == str(output / "checkpoint_wav2vec2_last.pt")
    assert report["total_seconds"] >= report["train_seconds"] >= 0
    # 8 template sentences less 1 the TTS demo is judged on, and 8 word runs
    assert report["corpus"]["train"]["utterances"] == 15 and report["corpus"]["train"]["minutes"] > 0
    assert set(report["valid"]) == {"wer", "cer"}
    assert list(report["splits"]) == list(sizes)
    for name, split in report["splits"].items():
        assert split["utterances"] == sizes[name] and split["audio_seconds"] > 0
        assert split["wer"] >= 0 and split["cer"] >= 0
        assert len(split["examples"]) == min(3, sizes[name])
        assert all(example["reference"] for example in split["examples"])
        with_lm = json.loads((output / f"{name}_lm" / "nvlog.json").read_text().splitlines()[-1][5:])["data"]
        assert split["lm"] == {"wer": with_lm["wer"], "cer": with_lm["cer"]}
    held_out = report["splits"]["test_everyday_voices"]["voices"]
    assert sorted(held_out) == sorted(HELD_OUT_VOICES) and {v["utterances"] for v in held_out.values()} == {2}
    assert report["target_cer"] == 15.0
    assert report["target_met"] == (report["splits"]["test_sentences"]["cer"] < 15.0)
    # eSpeak NG saying the TTS demo's 25 test sentences: the ceiling of the score the recognizer gives `make demo`
    ceiling = json.loads((output / "tts_ceiling" / "intelligibility.json").read_text())["espeak"]
    assert len(ceiling["files"]) == 25 and (output / "tts_ceiling" / "espeak" / "audio_25.wav").is_file()
    assert report["tts_ceiling"] == {"utterances": 25, "wer": ceiling["wer"], "cer": ceiling["cer"],
                                     "lm": {"wer": ceiling["with_lm"]["wer"], "cer": ceiling["with_lm"]["cer"]}}
    everyday, everyday_voices = report["splits"]["test_everyday"], report["splits"]["test_everyday_voices"]
    assert report["targets"] == {
        "test_everyday": {"cer": 10.0, "met": everyday["cer"] <= 10.0, "met_with_lm": everyday["lm"]["cer"] <= 10.0},
        "test_everyday_voices": {"cer": 15.0, "met": everyday_voices["cer"] <= 15.0,
                                 "met_with_lm": everyday_voices["lm"]["cer"] <= 15.0},
        "tts_ceiling": {"cer": 1.8, "met": ceiling["cer"] <= 1.8}}
    text = (output / "report.txt").read_text()
    assert all(name in text for name in sizes) and "CER" in text and "en-029+f5 (2 utterances)" in text
    assert "eSpeak NG saying the TTS demo's 25 test sentences" in text and "with the language model" in text
    assert text in completed.stdout  # the report file holds what was printed
    copy = tmp_path / "asr_accent"
    assert (copy / ".accent_copy").read_text() == ((data / ".demo_asr_corpus").read_text().strip()
                                                   + " | --share 0.5 --variants wide --seed 1234 --keep-voices en-us\n")
    assert "training utterances re-spoken (with a made-up accent, wide variants)" in completed.stdout
    # the TTS judge's voice is never re-spoken
    voices = {line.split("|")[0]: line.split("|")[2]
              for line in (data / "utterances.csv").read_text().splitlines() if "|train|" in line}
    plain = [row.split("\t")[0] for row in (data / "train.tsv").read_text().splitlines()[1:]
             if voices[row.split("\t")[0].split("/")[-1].removesuffix(".wav")] == "en-us"]
    assert plain and all((copy / relative).read_bytes() == (data / relative).read_bytes() for relative in plain)
    # the copy's training manifest is its own; its test manifests and labels are the corpus's
    assert (copy / "train.tsv").read_text().splitlines()[0] == str(copy.resolve())
    assert (copy / "test_everyday_voices.tsv").read_text() == (data / "test_everyday_voices.tsv").read_text()
    assert (copy / "train.wrd").read_text() == (data / "train.wrd").read_text()


def test_accent_share_0_trains_on_the_corpus_as_built(tmp_path, python_stand_in):
    """The script's wiring, with a stand-in for Python: training reads DATA_DIR itself, and no copy is made."""
    data, output = tmp_path / "asr", tmp_path / "demo"
    completed = run_demo(data, output, PYTHON=str(python_stand_in.path), ACCENT_SHARE="0")
    assert completed.returncode == 0, completed.stderr
    commands = python_stand_in.commands()
    training = [command for command in commands if command[0] == "train.py"]
    assert len(training) == 1 and training[0][training[0].index("--data") + 1] == str(data)
    assert not any("accent_perturbed_corpus" in " ".join(command) for command in commands)
    assert not (tmp_path / "asr_accent").exists()


def test_training_takes_train_pys_precision_unless_the_user_gives_one(tmp_path, python_stand_in):
    """No precision flag of the script's own or the preset's: train.py's default chooses by the CPU (bf16 where it is
    native: tests/common/test_trainer_precision.py); the user's own flag reaches train.py."""
    for extra in ([], ["--bf16"]):
        completed = run_demo(tmp_path / "asr", tmp_path / "demo", *extra, PYTHON=str(python_stand_in.path),
                             ACCENT_SHARE="0")
        assert completed.returncode == 0, completed.stderr
        training = [command for command in python_stand_in.commands() if command[0] == "train.py"][-1]
        assert [flag for flag in training if flag in ("--amp", "--bf16", "--fp32")] == extra
    preset = json.loads((ROOT / "configs/wav2vec2_asr_demo.json").read_text())
    assert not {key for section in preset.values() for key in section} & {"amp", "bf16", "fp32"}


# The stamp of a corpus of NUM_UTTERANCES=12 OPEN_UTTERANCES=8, what run_corpus_function builds.
SMALL_CORPUS_STAMP = "--num-utterances 12 --seed 1234 --text open --open-utterances 8\n"


def run_corpus_function(call: str, **environment: str) -> subprocess.CompletedProcess:
    """One function of scripts/wav2vec2/demo_corpus.sh, with `true` for Python: what the demo would build is not
    built, only the folders are checked and stamped."""
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source scripts/wav2vec2/demo_corpus.sh; {call}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHON": "true", "NUM_UTTERANCES": "12", "OPEN_UTTERANCES": "8",
                               **environment})


def test_a_folder_of_files_the_demo_did_not_build_is_never_written_over(tmp_path):
    mine = tmp_path / "my_corpus"
    mine.mkdir()
    (mine / "train.tsv").write_text("my own manifest\n")
    completed = run_corpus_function("ensure_asr_demo_corpus", DATA_DIR=str(mine))
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        f"error: DATA_DIR={mine} holds files that no demo built there (it has no .demo_asr_corpus), and building "
        f"the demo's corpus would write over them: name a new or empty folder, or remove this one"]
    corpus = tmp_path / "asr"
    corpus.mkdir()
    (corpus / ".demo_asr_corpus").write_text(SMALL_CORPUS_STAMP)
    completed = run_corpus_function(f"ensure_accent_copy {corpus} {mine} 0.5 wide en-us")
    assert completed.returncode == 2 and "error: TRAIN_DATA_DIR=" in completed.stderr
    assert [path.name for path in mine.iterdir()] == ["train.tsv"]
    assert (mine / "train.tsv").read_text() == "my own manifest\n"


def test_a_new_empty_or_half_built_folder_is_built_and_stamped(tmp_path):
    new, empty, half_built = tmp_path / "new", tmp_path / "empty", tmp_path / "half_built"
    empty.mkdir()
    half_built.mkdir()
    (half_built / ".demo_asr_corpus").write_text("(being built)\n")
    (half_built / "dict.ltr.txt").write_text("| 1\n")
    for folder in (new, empty, half_built):
        completed = run_corpus_function("ensure_asr_demo_corpus", DATA_DIR=str(folder))
        assert completed.returncode == 0, completed.stderr
        assert (folder / ".demo_asr_corpus").read_text() == SMALL_CORPUS_STAMP


def test_an_accent_copy_of_the_same_corpus_and_arguments_is_kept_and_any_other_is_built_again(tmp_path):
    """With `false` for Python, building fails: a kept copy is one the function did not try to build."""
    corpus, copy = tmp_path / "asr", tmp_path / "asr_accent"
    corpus.mkdir()
    copy.mkdir()
    (corpus / ".demo_asr_corpus").write_text(SMALL_CORPUS_STAMP)
    (copy / "train.tsv").write_text("the copy's manifest\n")
    (copy / ".accent_copy").write_text(SMALL_CORPUS_STAMP.strip()
                                       + " | --share 0.5 --variants wide --seed 1234 --keep-voices en-us\n")
    kept = run_corpus_function(f"ensure_accent_copy {corpus} {copy} 0.5 wide en-us", PYTHON="false")
    assert kept.returncode == 0, kept.stderr
    rebuilt = run_corpus_function(f"ensure_accent_copy {corpus} {copy} 0.25 wide en-us", PYTHON="false")
    assert rebuilt.returncode == 1


def test_demo_preset_is_a_small_from_scratch_ctc_model():
    """The preset trains every part from scratch: no --w2v-path, the conv extractor learning (fine-tuning's default
    freezes it), a small model at 20 ms frames, on the CPU."""
    args = train.parse_run_args(["-m", "wav2vec2", "finetune", "--config-file",
                                 str(ROOT / "configs/wav2vec2_asr_demo.json"), "-o", "unused", "--data", "unused"])
    assert args.mode == "finetune" and args.w2v_path is None and args.cpu
    assert args.feature_grad_mult == 1.0 and args.freeze_finetune_updates == 0
    assert args.random_phase_prob == 0.25  # the judge of `make demo` hears through a vocoder's phase
    assert args.max_updates == 6000  # sized to the demo's 30 minutes on 2 cores (wav2vec2/RESULTS.md)
    stride = 1
    for _, _, layer_stride in parse_conv_feature_layers(args.conv_feature_layers):
        stride *= layer_stride
    assert stride == 320  # 20 ms frames at 16 kHz, as wav2vec 2.0's
    assert args.encoder_embed_dim * args.encoder_layers <= 1024


def test_make_target_runs_the_script_after_setup():
    # Under `make test` the inherited MAKELEVEL/MAKEFLAGS would make it print "Entering directory" lines.
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    completed = subprocess.run(["make", "--no-print-directory", "-n", "demo-asr"], cwd=ROOT, capture_output=True,
                               text=True, timeout=60, env=environment)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split("\n")[:2] == ["bash scripts/setup.sh --lm", "bash scripts/wav2vec2/demo_asr.sh"]
