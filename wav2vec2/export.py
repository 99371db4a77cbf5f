"""A fine-tuned (CTC) wav2vec 2.0 as one ONNX file, checked against PyTorch, and greedy decoding of its output in numpy.

    python -m scripts.export_onnx -m wav2vec2 --checkpoint R.pt -o FOLDER     # writes FOLDER/wav2vec2_ctc.onnx

Inputs: source (B, samples) float32 16 kHz audio, zero-padded (normalised per utterance first where the model was
trained so: Wav2Vec2Config.normalize, the data side's job as in PyTorch); padding_mask (B, samples) bool, True past
each utterance's end (all False for one utterance). Outputs: logits (B, frames, labels), the CTC head's scores, blank
(index 0) with certainty on padded frames (so they decode to nothing); frame_padding_mask (B, frames) bool. Batch and
samples are dynamic; frames follow from the convolution stack. The opset is the newest torch's exporter converts
to itself (25 with onnxscript 0.7), not onnx's newest: see export below. The model is padding-aware, so an
utterance in a padded batch gets what it gets alone, in the file as in PyTorch.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from common.onnx_export import export_and_check, newest_converted_opset
from wav2vec2.decoding import collapse_ctc_labels
from wav2vec2.dictionary import Dictionary

WAV2VEC2_FILE = "wav2vec2_ctc.onnx"
OUTPUTS = ["logits", "frame_padding_mask"]


class CTCLogits(nn.Module):
    """(source, padding_mask) -> (logits, frame padding mask) of a Wav2Vec2CTC in eval mode."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, source: Tensor, padding_mask: Tensor) -> tuple[Tensor, Tensor]:
        output = self.model(source, padding_mask)
        return output["logits"], output["padding_mask"]


def samples_for_frames(conv_layers: list[tuple[int, int, int]], frames: int) -> int:
    """The fewest samples from which the convolution stack (dim, kernel, stride) makes `frames` frames."""
    samples = frames
    for _, kernel, stride in reversed(conv_layers):
        samples = (samples - 1) * stride + kernel
    return samples


def padded_batch(lengths: list[int], generator: torch.Generator) -> dict[str, Tensor]:
    """Speech-like levels of noise, zero past each length, and the padding mask."""
    padding_mask = torch.arange(max(lengths))[None, :] >= torch.tensor(lengths)[:, None]
    source = (0.1 * torch.randn(len(lengths), max(lengths), generator=generator)).masked_fill(padding_mask, 0.0)
    return {"source": source, "padding_mask": padding_mask}


def export(model: nn.Module, folder: str | Path, opset: int | None = None, what: str = "ONNX export"
           ) -> dict[str, float]:
    """Write FOLDER/wav2vec2_ctc.onnx, checked against PyTorch on one utterance and on a padded batch of three of
    other lengths than the example's; returns its largest difference."""
    model = model.float().eval()
    conv_layers = model.w2v_encoder.w2v_model.conv_layers
    batch = torch.export.Dim("batch", max=1024)
    samples = torch.export.Dim("samples", min=samples_for_frames(conv_layers, 2))
    axes = {"source": {0: batch, 1: samples}, "padding_mask": {0: batch, 1: samples}}
    generator = torch.Generator().manual_seed(0)
    example = padded_batch([samples_for_frames(conv_layers, 24) + 37, samples_for_frames(conv_layers, 15) + 3],
                           generator)
    checks = [padded_batch([samples_for_frames(conv_layers, 17) + 11], generator),
              padded_batch([samples_for_frames(conv_layers, frames) + extra for frames, extra in
                            ((41, 101), (13, 7), (30, 0))], generator)]
    # Its GELUs are ONNX Gelu operators from opset 20, which onnx 1.23's converter cannot take past opset 25: ask
    # for the newest opset torch's exporter reaches without it, rather than fail at the newest and export again.
    difference = export_and_check(CTCLogits(model), Path(folder) / WAV2VEC2_FILE, example, axes, OUTPUTS, checks,
                                  opset or newest_converted_opset(), what=what)
    return {WAV2VEC2_FILE: difference}


def greedy_transcripts(logits: np.ndarray, frame_padding_mask: np.ndarray, dictionary: Dictionary) -> list[str]:
    """The file's outputs -> each utterance's words by greedy CTC decoding (what Recognizer.transcribe does by
    default), in numpy."""
    best = logits.argmax(-1)
    lengths = (~frame_padding_mask).sum(-1)
    return [dictionary.decode(collapse_ctc_labels(row[:length])) for row, length in zip(best, lengths)]


def add_export_args(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--labels-path", default=None,
                       help="wav2vec2: the dictionary (dict.ltr.txt) if the checkpoint carries none")


def export_checkpoint(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    """scripts/export_onnx.py -m wav2vec2: the CTC model (InferencePart.export_onnx); --labels-path for a file
    without its dictionary."""
    from wav2vec2.api import load_ctc_model

    model, _ = load_ctc_model(args.checkpoint, torch.device("cpu"), args.labels_path, flag="--checkpoint")
    return export(model, folder, args.opset, what="scripts.export_onnx")
