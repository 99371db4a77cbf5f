"""int8 dynamic quantization for CPU inference (`inference.py --quantize int8`, the Python APIs' `quantize="int8"`).

Dynamic quantization stores the chosen layers' weights as int8 (per tensor, symmetric) and, at each call, quantizes
the activations with a scale measured on them, multiplies in int8 and returns float32 (torch.ao's DynamicQuantized
Linear/LSTM/LSTMCell, FBGEMM's or oneDNN's kernels). The weights take a quarter of the memory and memory traffic, which
is what batch-1 inference of Tacotron 2's LSTMs and wav2vec 2.0's linear layers is bound by. Convolutions, attention
scores and normalisations stay float32. The outputs differ from float32 by the rounding of the weights and
activations: tests/common/test_quantization.py bounds the difference; the CER it costs is measured before it could
become a default (docs/benchmarks.md).

These kernels exist on the CPU only: on a GPU --quantize is refused. torch.ao.quantization is deprecated in favour of
torchao (not a dependency here); its dynamic quantization still works in the torch this project pins, and its
deprecation warning is silenced here, where the choice is made.
"""
from __future__ import annotations

import argparse
import warnings

import torch
from torch import nn

from common.errors import UserError

QUANTIZE_CHOICES = ("none", "int8")


def add_quantize_arg(group: argparse._ArgumentGroup, layers: str) -> None:
    """--quantize for a family whose `layers` (words, for --help) dynamic quantization covers."""
    group.add_argument("--quantize", choices=QUANTIZE_CHOICES, default="none",
                       help=f"int8: {layers} with int8 weights, quantized per call (CPU only; outputs close to, not "
                            "equal to, float32's: docs/benchmarks.md). Default none")


def check_quantize(quantize: str | None, device: torch.device, dtype: torch.dtype = torch.float32,
                   flag: str = "--quantize") -> bool:
    """Whether to quantize: `quantize` is None/'none' or 'int8'; int8 is refused on a GPU (no kernels there) and
    with --bf16/--amp (the int8 kernels take and give float32)."""
    if quantize in (None, "none"):
        return False
    if quantize not in QUANTIZE_CHOICES:
        raise UserError(f"{flag} {quantize}: choose one of {', '.join(QUANTIZE_CHOICES)}")
    if device.type != "cpu":
        raise UserError(f"{flag} int8 runs on the CPU only (dynamic quantization has no {device.type} kernels): "
                        "add --cpu, or drop the flag")
    if dtype != torch.float32:
        raise UserError(f"{flag} int8 computes between float32 activations; it cannot be combined with "
                        f"{'--bf16' if dtype == torch.bfloat16 else '--amp'}: drop one of them")
    return True


def quantize_int8(model: nn.Module, layer_types: set[type[nn.Module]]) -> nn.Module:
    """model (in eval mode) with every submodule of layer_types replaced in place by its int8 dynamic-quantized
    version; returns the model. The state dict changes (packed int8 weights): quantize after loading a checkpoint,
    never before saving one."""
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice: see the module's docstring
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, layer_types, dtype=torch.qint8, inplace=True)


def pack_int8_linear(weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.ScriptObject:
    """A (out, in) weight as int8, one symmetric scale per output row (max |row| / 127), prepacked with its bias
    for int8_linear: for products that are not an nn.Linear (Tacotron 2's merged fast-decoder weights)."""
    weight = weight.detach().float()
    scales = (weight.abs().amax(dim=1) / 127).clamp_min(torch.finfo(torch.float32).tiny).double()
    with warnings.catch_warnings():  # quantized tensors are deprecated with torch.ao: see the module's docstring
        warnings.filterwarnings("ignore", message=".*quantize_per.*")
        int8 = torch.quantize_per_channel(weight, scales, torch.zeros_like(scales, dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(int8, None if bias is None else bias.detach().float())


def int8_linear(x: torch.Tensor, packed: torch.ScriptObject, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear for a weight packed by pack_int8_linear (its bias is inside: `bias` is ignored). The activations
    are quantized per call over 7 bits, as torch.ao's dynamic Linear does (the x86 kernels' 16-bit sums must not
    saturate)."""
    return torch.ops.quantized.linear_dynamic(x, packed, reduce_range=True)
