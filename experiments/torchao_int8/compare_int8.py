"""int8 dynamic quantization through torchao against torch.ao's (what common/quantization.py uses) and float32.

    pip install torchao==0.18.0 && python -m experiments.torchao_int8.compare_int8 [--width 1024] [--calls 500]

A block of Tacotron 2's decoder at batch 1 (two Linear layers and an LSTMCell of --width), quantized each way: which
layers each API quantizes, the time of one call (median of 5 runs of --calls calls, after a warm-up, on the threads
torch has) and the largest output difference from float32.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from torch import nn

from common.cpu import cpu_description
from common.errors import UserError, exit_on_user_error
from common.quantization import quantize_int8


class DecoderBlock(nn.Module):
    """Two projections and a recurrent cell at one width, as a decoder step of Tacotron 2 has them."""

    def __init__(self, width: int):
        super().__init__()
        self.prenet = nn.Linear(width, width)
        self.cell = nn.LSTMCell(width, width)
        self.projection = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.cell(torch.relu(self.prenet(x)))
        return self.projection(hidden)


def quantized_layers(model: nn.Module) -> list[str]:
    """The names of the layers whose weights are no longer plain float tensors."""
    found = []
    for name, module in model.named_modules():
        if name.endswith("_packed_params"):  # inside a torch.ao quantized layer, already counted
            continue
        weights = [value for key, value in vars(module).get("_parameters", {}).items() if key.startswith("weight")]
        quantized_module = type(module).__module__.startswith(("torch.ao.nn.quantized", "torch.nn.quantized"))
        if quantized_module or any(type(weight).__name__ not in ("Parameter", "Tensor") for weight in weights):
            found.append(name)
    return found


def time_per_call(model: nn.Module, x: torch.Tensor, calls: int) -> float:
    with torch.no_grad():
        for _ in range(20):
            model(x)
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                model(x)
            runs.append((time.perf_counter() - start) / calls)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args(argv)
    try:
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    except ImportError:
        raise UserError("this experiment needs torchao: pip install torchao==0.18.0") from None
    torch.manual_seed(0)
    float32 = DecoderBlock(args.width).eval()
    torch_ao = quantize_int8(copy.deepcopy(float32), {nn.Linear, nn.LSTMCell})
    torchao = copy.deepcopy(float32)
    quantize_(torchao, Int8DynamicActivationInt8WeightConfig())
    x = torch.randn(1, args.width)
    with torch.no_grad():
        reference = float32(x)
    print(f"{cpu_description()}; torch {torch.__version__}, {torch.get_num_threads()} threads; width {args.width}")
    for name, model in (("float32", float32), ("torch.ao", torch_ao), ("torchao", torchao)):
        with torch.no_grad():
            difference = (model(x) - reference).abs().max().item()
        print(f"{name:9s} {time_per_call(model, x, args.calls) * 1e6:8.1f} us per call; largest difference "
              f"{difference:.2e}; int8 layers: {', '.join(quantized_layers(model)) or 'none'}")


if __name__ == "__main__":
    exit_on_user_error(main)
