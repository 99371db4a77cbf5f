"""ONNX export checked by execution, for every family's export (hifigan/export.py, tacotron2/export.py,
waveglow/export.py, wav2vec2/export.py; scripts/export_onnx.py is their command line).

A module is captured by torch.export and translated to ONNX by torch's exporter (torch.onnx.export(dynamo=True)) at the
newest opset the installed onnx package knows (or the newest the exporter can convert the graph to, see export_onnx),
with the axes the caller names dynamic. The file is then run with
onnxruntime on inputs of other shapes than the example's and must match the module in PyTorch within a tolerance
(1e-4 by default, fp32), else the export fails with the largest difference: a file that is written has been run.

The export needs the PyPI packages onnx, onnxscript (torch's exporter) and onnxruntime (the check); training and
inference.py do not.
"""
from __future__ import annotations

import contextlib
import logging
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from common.errors import UserError

ONNX_TOLERANCE = 1e-4  # largest absolute difference from PyTorch, fp32


def require_onnx(what: str):
    """The onnxruntime module, or a UserError naming `what` (a flag or a command) and the packages to install."""
    try:
        import onnx  # noqa: F401  (torch's exporter writes with it)
        import onnxruntime
        import onnxscript  # noqa: F401  (torch's exporter translates with it)
    except ImportError as error:
        raise UserError(f"{what} needs the onnx, onnxscript and onnxruntime packages: pip install onnx onnxscript "
                        "onnxruntime") from error
    return onnxruntime


def newest_onnx_opset() -> int:
    import onnx

    return onnx.defs.onnx_opset_version()


@contextlib.contextmanager
def lstm_with_dynamic_lengths() -> Iterator[None]:
    """Export nn.LSTM / torch.lstm with a dynamic sequence length. torch's own decomposition of the LSTM unrolls it
    over the example's length, which fixes that length in the graph (torch.export refuses the dynamic axis, or the
    ONNX file declares the example's length). torch's while-loop decomposition keeps it symbolic; torch.onnx.export
    installs it for its capture only, so the decomposition pass after the capture, which recomputes the shapes,
    must see it too: hence around the whole export. It is a private torch module: without it (another torch
    version) the export goes on as torch does it, and the check by execution catches a wrong file."""
    try:
        from torch.export._patches import register_lstm_while_loop_decomposition
    except ImportError:
        yield
        return
    with register_lstm_while_loop_decomposition():
        yield


def export_onnx(module: torch.nn.Module, path: str | Path, inputs: dict[str, torch.Tensor],
                dynamic_axes: dict[str, dict[int, object]], output_names: list[str], opset: int | None = None
                ) -> int:
    """Write `module(*inputs.values())` as ONNX at `path`; returns the opset written. inputs: example tensors by input
    name, in the order forward takes them; dynamic_axes: per input name, {axis: torch.export.Dim}; the other axes
    are fixed. opset: default the newest the onnx package knows, or, where the exporter cannot convert this graph
    to it, the newest its own converter reaches (onnx 1.23 has no adapter taking Gelu past opset 25: wav2vec 2.0)."""
    requested = opset or newest_onnx_opset()
    program = _export(module, inputs, dynamic_axes, output_names, requested)
    written = _written_opset(program)
    if written != requested:
        # torch's exporter warns and leaves the graph at its own opset with operators of the newer one: not a
        # valid file.
        if opset is not None:
            raise UserError(f"--opset {opset}: torch's exporter cannot convert this model to opset {opset}; give "
                            f"{newest_converted_opset()} or older")
        requested = newest_converted_opset()
        program = _export(module, inputs, dynamic_axes, output_names, requested)
        written = _written_opset(program)
    program.save(str(path))
    return written


def _export(module: torch.nn.Module, inputs: dict[str, torch.Tensor], dynamic_axes: dict[str, dict[int, object]],
            output_names: list[str], opset: int):
    dynamic_shapes = tuple(dynamic_axes.get(name) for name in inputs)
    # The capture and decomposition passes warn about torch internals (deprecations, fake tensors) that say nothing
    # about the file, and a failed opset conversion logs its traceback (export_onnx handles it); the check by
    # execution says whether the file is right.
    converter_logger = logging.getLogger("onnxscript.version_converter")
    level = converter_logger.level
    converter_logger.setLevel(logging.CRITICAL)
    try:
        with torch.no_grad(), lstm_with_dynamic_lengths(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.onnx.export(module, tuple(inputs.values()), dynamo=True, opset_version=opset,
                                     input_names=list(inputs), output_names=output_names,
                                     dynamic_shapes=dynamic_shapes, verbose=False)
    finally:
        converter_logger.setLevel(level)


def _written_opset(program) -> int:
    return next(entry.version for entry in program.model_proto.opset_import if entry.domain in ("", "ai.onnx"))


def newest_converted_opset() -> int:
    """The newest opset onnxscript's version converter (torch's exporter's) reaches itself, without onnx's."""
    try:
        from onnxscript.version_converter._version_converter import SUPPORTED_MAX_ONNX_OPSET
    except ImportError:
        return 18  # the opset torch's exporter writes natively
    return min(SUPPORTED_MAX_ONNX_OPSET, newest_onnx_opset())


def session(path: str | Path, threads: int | None = None):
    """An onnxruntime CPU session of an ONNX file; threads: its intra-op threads (default: onnxruntime's)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only
    if threads:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def largest_difference(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual - expected|; equal entries count 0, so equal infinities (a masked logit's -inf) agree and an
    infinity against a number is an infinite difference."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):  # -inf - -inf, in the branch np.where drops
        return float(np.where(actual == expected, 0.0, np.abs(actual - expected)).max())


def check_onnx(module: torch.nn.Module, path: str | Path, check_inputs: list[dict[str, torch.Tensor]],
               output_names: list[str], tolerance: float = ONNX_TOLERANCE) -> float:
    """Run the ONNX file with onnxruntime on each input set and compare every output with the module's; returns the
    largest difference, or raises RuntimeError naming the output and the shapes when a shape differs or the
    difference exceeds the tolerance."""
    onnx_session = session(path)
    difference = 0.0
    for inputs in check_inputs:
        with torch.no_grad():
            expected = module(*inputs.values())
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        actual = onnx_session.run(output_names, {name: tensor.numpy() for name, tensor in inputs.items()})
        shapes = ", ".join(f"{name} {tuple(tensor.shape)}" for name, tensor in inputs.items())
        for name, got, wanted in zip(output_names, actual, expected):
            wanted = wanted.numpy()
            if got.shape != wanted.shape:
                raise RuntimeError(f"ONNX export of {path}: output {name} has shape {got.shape} for inputs {shapes}, "
                                   f"PyTorch gives {wanted.shape}")
            output_difference = largest_difference(got, wanted)
            if output_difference > tolerance:
                raise RuntimeError(f"ONNX export of {path}: onnxruntime's {name} differs from PyTorch's by "
                                   f"{output_difference:.2e} (> {tolerance}) for inputs {shapes}")
            difference = max(difference, output_difference)
    return difference


def export_and_check(module: torch.nn.Module, path: str | Path, inputs: dict[str, torch.Tensor],
                     dynamic_axes: dict[str, dict[int, object]], output_names: list[str],
                     check_inputs: list[dict[str, torch.Tensor]], opset: int | None = None,
                     tolerance: float = ONNX_TOLERANCE, what: str = "ONNX export") -> float:
    """export_onnx, then check_onnx on check_inputs (give shapes other than the example's); returns the largest
    difference from PyTorch. what: the flag or command that asked, for the message when the packages are missing."""
    require_onnx(what)
    module = module.eval()
    export_onnx(module, path, inputs, dynamic_axes, output_names, opset)
    return check_onnx(module, path, check_inputs, output_names, tolerance)
