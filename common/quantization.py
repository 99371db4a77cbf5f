"""int8 dynamic quantization for CPU inference (`inference.py --quantize int8`, the Python APIs' `quantize="int8"`).

Dynamic quantization stores the chosen layers' weights as int8 (per tensor, symmetric) and, at each call, quantizes
the activations with a scale measured on them, multiplies in int8 and returns float32 (torch.ao's DynamicQuantized
Linear/LSTM/LSTMCell, FBGEMM's or oneDNN's kernels). The weights take a quarter of the memory and memory traffic, which
is what batch-1 inference of Tacotron 2's LSTMs and wav2vec 2.0's linear layers is bound by. Convolutions over many
channels can be int8 too (Int8Conv1d: wav2vec 2.0's feature extractor), where what is gained is the int8 arithmetic,
faster than float32's on an AVX2 CPU (experiments/cpu_convolution_layouts/ measures it layer by layer). Attention
scores and normalisations stay float32. The outputs differ from float32 by the rounding of the weights and
activations: tests/common/test_quantization.py bounds the difference; the CER it costs is measured before it could
become a default (docs/benchmarks.md).

These kernels exist on the CPU only: on a GPU --quantize is refused. torch.ao.quantization is deprecated in favour of
torchao (not a dependency here), but torchao 0.18 quantizes no LSTM cell and its int8 Linear ran slower than float32's
on an AVX2 CPU (experiments/torchao_int8/: 9.5 times torch.ao's time for a decoder step); torch.ao's dynamic
quantization still works in the torch this project pins, and its deprecation warning is silenced here, where the
choice is made.
"""
from __future__ import annotations

import argparse
import warnings

import torch
from torch import nn
from torch.nn import functional as F

from common.errors import UserError

QUANTIZE_CHOICES = ("none", "int8")


def quantize_help(layers: str, auto: str | None = None) -> str:
    """--quantize's help for a family whose `layers` (words) dynamic quantization covers; auto: what the family's
    default, auto, chooses (None: the default is none)."""
    return (f"int8: {layers} with int8 weights, quantized per call (CPU only; outputs close to, not equal to, "
            "float32's: docs/benchmarks.md). " + (f"Default auto: {auto}" if auto else "Default none"))


def add_quantize_arg(group: argparse._ArgumentGroup, layers: str, auto: str | None = None) -> None:
    """--quantize for a family whose `layers` (words, for --help) dynamic quantization covers. auto: for a family
    that quantizes by default where int8 was measured within its tolerance, what --quantize auto (then the default)
    chooses, in words for --help; the family resolves auto before check_quantize."""
    choices = QUANTIZE_CHOICES if auto is None else ("auto", *QUANTIZE_CHOICES)
    group.add_argument("--quantize", choices=choices, default="none" if auto is None else "auto",
                       help=quantize_help(layers, auto))


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
    version; returns the model. nn.Conv1d in layer_types: the convolutions Int8Conv1d covers (see there). The state
    dict changes (packed int8 weights): quantize after loading a checkpoint, never before saving one."""
    if nn.Conv1d in layer_types:
        replace_conv1d_int8(model)
        layer_types = layer_types - {nn.Conv1d}
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notice: see the module's docstring
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, layer_types, dtype=torch.qint8, inplace=True)


def replace_conv1d_int8(model: nn.Module) -> None:
    """Every nn.Conv1d of model that Int8Conv1d covers (one group, zero padding, more than one input channel) replaced
    in place by it. A convolution over one channel (wav2vec 2.0's first, on the raw waveform) stays float32: its
    products are too small to gain, and 7 bits of waveform would lose the quiet passages."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if (type(child) is nn.Conv1d and child.groups == 1 and child.in_channels > 1
                    and child.padding_mode == "zeros" and not isinstance(child.padding, str)):
                setattr(parent, name, Int8Conv1d(child))


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


class Int8Conv1d(nn.Module):
    """An nn.Conv1d as int8 products: the input is read time-major (B, L, C), where each output frame's receptive
    field is k rows of C values; the fields are laid side by side (k * C columns) and multiplied by the weight
    reordered to match, int8 with one scale per output channel (pack_int8_linear).

    Each field is divided by its own largest magnitude before the product and the product multiplied back: the
    activations get one int8 scale per output frame, not one per call. The activations of wav2vec 2.0's feature
    extractor span a wide range from frame to frame (loud and quiet passages), and with one scale per call its
    quiet frames were rounded away: the demo recognizer's CER on test_voice went from 3.63 to 5.48 %; with one per
    frame it is 3.51 % (wav2vec2/RESULTS.md). torch.ao's dynamic Conv1d was tried first: on GELU outputs its error
    reached 96 % of the output's range.

    The output is a transposed view of a time-major tensor, so a following Int8Conv1d (after element-wise layers,
    which keep that layout) reads it without a copy."""

    # Receptive fields laid out per product, at most (16 MB of float32; slices that stay in cache ran faster than
    # larger ones): long inputs go in slices of frames.
    MAX_FIELD_VALUES = 1 << 22

    def __init__(self, conv: nn.Conv1d):
        super().__init__()
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        (self.kernel_size,), (self.stride,), (self.dilation,), (self.padding,) = (
            conv.kernel_size, conv.stride, conv.dilation, conv.padding)
        weight = conv.weight.detach().permute(0, 2, 1).reshape(self.out_channels, -1)  # (out, k * in), k major
        self.packed = pack_int8_linear(weight)  # the bias is added after the rescaling
        self.bias = None if conv.bias is None else conv.bias.detach().float().clone()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time_major = x.transpose(1, 2).contiguous()  # free when x came from an Int8Conv1d
        if self.padding:
            time_major = F.pad(time_major, (0, 0, self.padding, self.padding))
        batch, length, channels = time_major.shape
        field_size = self.kernel_size * channels
        frames = (length - self.dilation * (self.kernel_size - 1) - 1) // self.stride + 1
        if frames < 1:
            raise ValueError(f"an input of {length - 2 * self.padding} samples is shorter than the convolution's "
                             f"receptive field ({self.dilation * (self.kernel_size - 1) + 1})")
        fields = time_major.as_strided((batch, frames, self.kernel_size, channels),
                                       (length * channels, self.stride * channels, self.dilation * channels, 1))
        step = max(1, self.MAX_FIELD_VALUES // (batch * field_size))
        outputs = []
        for start in range(0, frames, step):
            sliced = fields[:, start:start + step].reshape(batch, -1, field_size)
            scale = sliced.abs().amax(dim=-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
            outputs.append(int8_linear(sliced / scale, self.packed).mul_(scale))
        output = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)
        if self.bias is not None:
            output += self.bias
        return output.transpose(1, 2)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"dilation={self.dilation}, padding={self.padding}, int8 weights per output channel, int8 "
                "activations per output frame")
