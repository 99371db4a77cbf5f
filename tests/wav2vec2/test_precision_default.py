"""The recognizer's precision when none is asked for (wav2vec2/api.py: BF16_WITHIN_TOLERANCE, INT8_WITHIN_TOLERANCE):
bf16 autocast on a CPU that computes bf16 natively; elsewhere int8 layers where the CPU's int8 products are
vectorized, else fp32; and fp32 whenever int8 is asked for or --fp32 given (no int8 then either); and bf16's output
near fp32's. The CER this was decided on (make demo-asr's recognizer, every test set) is in wav2vec2/RESULTS.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from common.cpu import native_bf16, vectorized_int8_products
from scripts.wav2vec2.benchmark_wav2vec2 import save_random_ctc_checkpoint
from wav2vec2 import api
from wav2vec2.api import Recognizer, default_quantize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NATIVE = torch.bfloat16 if native_bf16() else torch.float32
DEFAULT_QUANTIZE = "int8" if not native_bf16() and vectorized_int8_products() else "none"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ctc") / "ctc.pt"
    save_random_ctc_checkpoint(path, "tiny", None)
    return path


def test_the_default_is_bf16_where_the_cpu_has_it_and_fp32_for_int8_or_when_asked(checkpoint):
    default = Recognizer.from_checkpoint(checkpoint, "cpu")
    assert (default.dtype, default.quantize) == (NATIVE, DEFAULT_QUANTIZE)
    fp32 = Recognizer.from_checkpoint(checkpoint, "cpu", "fp32")
    assert (fp32.dtype, fp32.quantize) == (torch.float32, "none")
    int8 = Recognizer.from_checkpoint(checkpoint, "cpu", quantize="int8")
    assert (int8.dtype, int8.quantize) == (torch.float32, "int8")
    assert Recognizer.from_checkpoint(checkpoint, "cpu", "bf16").quantize == "none"
    assert Recognizer.from_checkpoint(checkpoint, "cpu", quantize="none").dtype == NATIVE


@pytest.mark.parametrize("native, vectorized, device, asked, expected", [
    (False, True, "cpu", False, "int8"), (True, True, "cpu", False, "none"), (False, False, "cpu", False, "none"),
    (False, True, "cpu", True, "none"), (False, True, "meta", False, "none")])
def test_int8_is_the_default_only_without_native_bf16_on_vectorized_int8_products(monkeypatch, native, vectorized,
                                                                                    device, asked, expected):
    """default_quantize's rule, the CPU's answers replaced (the real ones are a subprocess's, below); "meta" stands
    for any device that is not the CPU."""
    monkeypatch.setattr(api, "native_bf16", lambda: native)
    monkeypatch.setattr(api, "vectorized_int8_products", lambda: vectorized)
    assert default_quantize(torch.device(device), precision_asked=asked) == expected


def test_the_int8_default_quantizes_the_layers_and_stays_in_fp32(checkpoint, monkeypatch):
    monkeypatch.setattr(api, "native_bf16", lambda: False)  # a CPU without native bf16, as most AVX2 ones
    monkeypatch.setattr(api, "vectorized_int8_products", lambda: True)
    recognizer = Recognizer.from_checkpoint(checkpoint, "cpu")
    assert (recognizer.quantize, recognizer.dtype) == ("int8", torch.float32)
    assert not any(type(module) in (torch.nn.Linear, torch.nn.Conv1d) and getattr(module, "in_channels", 2) > 1
                   for module in recognizer.model.modules())


def logged_parameters(checkpoint, tmp_path, *flags, environment=None) -> dict:
    wav = tmp_path / "one.wav"
    import soundfile

    soundfile.write(wav, np.random.default_rng(0).standard_normal(16000).astype(np.float32) * 0.1, 16000)
    output = tmp_path / f"out{len(list(tmp_path.iterdir()))}"  # a fresh folder per run: its own log
    subprocess.run([sys.executable, "inference.py", "-m", "wav2vec2", "--checkpoint", str(checkpoint), "-i",
                    str(wav), "-o", str(output), "--cpu", "--quiet", *flags], cwd=ROOT, check=True,
                   env={**os.environ, **(environment or {})}, capture_output=True)
    for line in (output / "nvlog.json").read_text().splitlines():
        record = json.loads(line.removeprefix("DLLL "))
        if record["step"] == "PARAMETER" and "precision" in record["data"]:
            return record["data"]
    raise AssertionError("no precision logged")


def logged_choice(*arguments, **keywords) -> tuple[str, str]:
    parameters = logged_parameters(*arguments, **keywords)
    return parameters["precision"], parameters["quantize"]


def test_inference_py_logs_the_precision_it_chose(checkpoint, tmp_path):
    assert logged_choice(checkpoint, tmp_path) == (str(NATIVE).removeprefix("torch."), DEFAULT_QUANTIZE)
    assert logged_choice(checkpoint, tmp_path, "--fp32") == ("float32", "none")
    assert logged_choice(checkpoint, tmp_path, "--quantize", "int8") == ("float32", "int8")
    # oneDNN held below its bf16 instructions emulates bf16, hundreds of times slower: fp32 then, in int8 layers
    # where int8 products are vectorized (x86 with AVX2 or AVX-512, unless ATEN_CPU_CAPABILITY holds ATen below)
    held = {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert logged_choice(checkpoint, tmp_path, environment=held) == (
        "float32", "int8" if vectorized_int8_products() else "none")
    assert logged_choice(checkpoint, tmp_path, "--fp32", environment=held) == ("float32", "none")
    assert logged_choice(checkpoint, tmp_path, "--quantize", "none", environment=held) == ("float32", "none")
    no_simd = {**held, "ATEN_CPU_CAPABILITY": "default"}
    assert logged_choice(checkpoint, tmp_path, environment=no_simd) == ("float32", "none")


def test_bf16_log_probabilities_stay_near_fp32_s(checkpoint):
    """bf16's rounding (8 bits of mantissa) through the tiny model: its log-probabilities within 0.15 of fp32's, on a
    range of about 7 (make demo-asr's trained recognizer moved by 0.45 at most, and no CER by more than 0.05 points:
    experiments/cpu_bf16)."""
    audio = np.random.default_rng(1).standard_normal(3 * 16000).astype(np.float32) * 0.1
    log_probs = {}
    for precision in ("fp32", "bf16"):
        recognizer = Recognizer.from_checkpoint(checkpoint, "cpu", precision)
        logits, _ = recognizer.logits(recognizer.utterances(audio))
        log_probs[precision] = logits.float().log_softmax(-1)
    assert float((log_probs["bf16"] - log_probs["fp32"]).abs().max()) < 0.15
