"""experiments/torchao_int8: without torchao (not a dependency) it says what to install in one line; its block and
its layer census are right."""
import subprocess
import sys

import pytest
import torch
from torch import nn

from common.quantization import quantize_int8
from experiments.torchao_int8.compare_int8 import DecoderBlock, quantized_layers
from tests.conftest import REPO_ROOT


def test_the_census_names_the_int8_layers_of_torch_ao_and_none_of_float32():
    block = DecoderBlock(16).eval()
    assert quantized_layers(block) == []
    quantized = quantize_int8(DecoderBlock(16).eval(), {nn.Linear, nn.LSTMCell})
    assert quantized_layers(quantized) == ["prenet", "cell", "projection"]
    assert quantized(torch.randn(1, 16)).shape == (1, 16)


def test_without_torchao_it_says_what_to_install(tmp_path):
    try:
        import torchao  # noqa: F401
        pytest.skip("torchao is installed here: the run itself is the experiment")
    except ImportError:
        pass
    completed = subprocess.run([sys.executable, "-m", "experiments.torchao_int8.compare_int8", "--width", "16"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == "error: this experiment needs torchao: pip install torchao==0.18.0\n"
