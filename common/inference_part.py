"""What a model family gives inference.py: one `InferencePart` per folder (tacotron2/inference.py,
wav2vec2/inference.py; the vocoders' mel-to-wav parts are made by common/mel_to_wav.py).

inference.py looks the part up by `-m NAME` (common/registry.py), adds the flags every part shares
(common/inference_args.py) and the part's own, and hands the parsed arguments to the part's `run`.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class InferencePart:
    name: str  # the -m value: the family's Recipe.name
    add_args: Callable[[argparse.ArgumentParser], None]  # the part's own flags (inputs, checkpoints, vocoder choice)
    run: Callable[[argparse.Namespace], None]  # reads the inputs, writes the outputs under --output
    # NVIDIA's command line -> this project's, where the part's reference names flags otherwise (as
    # Recipe.translate_argv); None: common.arguments.read_reference_spellings (`--flag_name` is `--flag-name`).
    translate_argv: Callable[[list[str], argparse.ArgumentParser], list[str]] | None = None
    # scripts/export_onnx.py -m NAME: (its parsed flags, the output folder) -> {file written: onnxruntime's largest
    # difference from PyTorch}. None: the family has no ONNX export.
    export_onnx: Callable[[argparse.Namespace, Path], dict[str, float]] | None = None
    # The flags export_onnx reads besides --checkpoint, -o and --opset (--wn-channels...): (argument group) -> None.
    add_export_args: Callable[[argparse._ArgumentGroup], None] | None = None
