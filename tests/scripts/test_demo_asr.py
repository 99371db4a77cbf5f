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
from wav2vec2.model import parse_conv_feature_layers

ROOT = Path(__file__).resolve().parents[2]


def run_demo(data: Path, output: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/wav2vec2/demo_asr.sh", *flags], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHON": sys.executable, "QUICK": "1",
                                            "DATA_DIR": str(data), "OUTPUT_DIR": str(output),
                                            "OMP_NUM_THREADS": "1"})


@pytest.mark.slow
def test_quick_demo_builds_trains_tests_and_reports(tmp_path):
    data, output = tmp_path / "asr", tmp_path / "demo"
    completed = run_demo(data, output)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]

    # the corpus, with the stamp of its arguments
    assert (data / ".demo_asr_corpus").read_text().split() == ["--num-utterances", "12", "--seed", "1234"]
    assert {"train.tsv", "valid.tsv", "test_sentences.tsv", "test_voice.tsv", "dict.ltr.txt"} <= {
        path.name for path in data.iterdir()}
    # training, then one inference folder per test split
    assert (output / "checkpoint_wav2vec2_last.pt").exists()
    for split in ("test_sentences", "test_voice"):
        predictions = (output / split / "predictions.txt").read_text().splitlines()
        assert len(predictions) == 2  # the tiny corpus holds 2 held-out sentences

    report = json.loads((output / "report.json").read_text())
    assert report["updates"] == 4 and report["checkpoint"] == str(output / "checkpoint_wav2vec2_last.pt")
    assert report["total_seconds"] >= report["train_seconds"] >= 0
    assert report["corpus"]["train"]["utterances"] == 8 and report["corpus"]["train"]["minutes"] > 0
    assert set(report["valid"]) == {"wer", "cer"}
    assert set(report["splits"]) == {"test_sentences", "test_voice"}
    for split in report["splits"].values():
        assert split["utterances"] == 2 and split["audio_seconds"] > 0
        assert split["wer"] >= 0 and split["cer"] >= 0
        assert len(split["examples"]) == 2 and all(example["reference"] for example in split["examples"])
    assert report["target_cer"] == 15.0
    assert report["target_met"] == (report["splits"]["test_sentences"]["cer"] < 15.0)
    text = (output / "report.txt").read_text()
    assert "test_sentences" in text and "test_voice" in text and "CER" in text
    assert text in completed.stdout  # the report file holds what was printed


def test_demo_preset_is_a_small_from_scratch_ctc_model():
    """The preset trains every part from scratch: no --w2v-path, the conv extractor learning (fine-tuning's default
    freezes it), a small model at 20 ms frames, on the CPU."""
    args = train.parse_run_args(["-m", "wav2vec2", "finetune", "--config-file",
                                 str(ROOT / "configs/wav2vec2_asr_demo.json"), "-o", "unused", "--data", "unused"])
    assert args.mode == "finetune" and args.w2v_path is None and args.cpu
    assert args.feature_grad_mult == 1.0 and args.freeze_finetune_updates == 0
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
    assert completed.stdout.split("\n")[:2] == ["bash scripts/setup.sh", "bash scripts/wav2vec2/demo_asr.sh"]
