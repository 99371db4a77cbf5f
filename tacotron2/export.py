"""Tacotron 2 as three ONNX files, split where NVIDIA's TensorRT path splits it, and the decoding loop that runs them
in onnxruntime with numpy alone (OnnxTacotron2).

    python -m scripts.export_onnx -m Tacotron2 --checkpoint T.pt -o FOLDER

tacotron2_encoder.onnx: text (B, T_in) int64 symbol ids, zero-padded, and text_lengths (B,) int64 -> memory
    (B, T_in, encoder_embedding_dim), zero past each length, and processed_memory (B, T_in, attention_dim): the
    attention's projection of the memory, made once per utterance.
tacotron2_decoder_step.onnx: frame (B, n_mel), the last frame of the previous step (zeros at the first);
    prenet_keep_masks (2, 1, prenet_dim) bool, the prenet's dropout, one mask per step for the batch; the seven
    DecoderState tensors by their names (zeros at the first step); memory; processed_memory; padding (B, T_in) bool,
    True past each length -> frames (B, r, n_mel); gate (B,), the stop logit; the new state as next_<name>
    (next_attention_weights (B, T_in) is the step's alignment).
tacotron2_postnet.onnx: mel (B, n_mel, T) and mel_lengths (B,) int64 -> mel_postnet (B, n_mel, T): mel + the
    postnet's residual, zero past each length.

Batch, text length and mel frames are dynamic. The step is the fast decoder's inference step (fast_inference_step,
equal to Decoder.step to rounding) with its merged weights. The prenet's always-on dropout takes its masks as an input,
so a caller reproduces eager PyTorch by feeding Tacotron2.infer the same masks (prenet_masks).

What the export does differently from eager PyTorch, and why:
- The encoder's bidirectional LSTM runs without packed sequences (they need the lengths on the host, which
  torch.export cannot trace): the forward direction reads the padded batch as it is (padding comes after each
  utterance, so it cannot reach a valid output), the backward direction reads each utterance reversed within its own
  length and its outputs are reversed back. The result equals the packed LSTM's.
- The LSTM is exported with a dynamic length through torch's while-loop decomposition
  (common/onnx_export.py: lstm_with_dynamic_lengths); the ONNX file holds one LSTM operator per direction.
- The stop decision, the loop and max_decoder_steps stay outside the files (OnnxTacotron2.infer), as in NVIDIA's
  TensorRT inference: a step has no data-dependent control flow.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from common.layers import lengths_to_mask
from common.onnx_export import export_and_check, session
from tacotron2.model import (MAX_FRAMES_AFTER_TEXT_END, DecoderState, FastStepWeights, Tacotron2, fast_inference_step,
                             steps_after_text_end)

ENCODER_FILE = "tacotron2_encoder.onnx"
DECODER_STEP_FILE = "tacotron2_decoder_step.onnx"
POSTNET_FILE = "tacotron2_postnet.onnx"
FILES = (ENCODER_FILE, DECODER_STEP_FILE, POSTNET_FILE)

STATE_NAMES = list(DecoderState._fields)
STEP_INPUTS = ["frame", "prenet_keep_masks", *STATE_NAMES, "memory", "processed_memory", "padding"]
STEP_OUTPUTS = ["frames", "gate", *(f"next_{name}" for name in STATE_NAMES)]
CHECK_TEXT_LENGTHS = ([13], [21, 9, 17])  # the two check inputs' batches (other than the example's)
CHECK_MEL_LENGTHS = ([37], [64, 20, 51])


def reverse_within_lengths(x: Tensor, lengths: Tensor) -> Tensor:
    """(B, T, C): each row's first lengths[b] positions reversed, the padding after them left in place. Its own
    inverse."""
    positions = torch.arange(x.size(1), device=x.device).unsqueeze(0)
    lengths = lengths.unsqueeze(1)
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    return x.gather(1, index.unsqueeze(2).expand(-1, -1, x.size(2)))


def lstm_direction(lstm: nn.LSTM, x: Tensor, suffix: str) -> Tensor:
    """One direction of a one-layer batch-first nn.LSTM (suffix "" forward, "_reverse" backward) run forward over
    x (B, T, C), from zero states -> (B, T, hidden_size)."""
    zeros = x.new_zeros(1, x.size(0), lstm.hidden_size)
    weights = [getattr(lstm, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    return torch.lstm(x, (zeros, zeros), weights, True, 1, 0.0, False, False, True)[0]


class TextEncoder(nn.Module):
    """Symbol ids -> the memory and the attention's processed memory (tacotron2_encoder.onnx)."""

    def __init__(self, model: Tacotron2):
        super().__init__()
        self.embedding, self.encoder = model.embedding, model.encoder
        self.memory_layer = model.decoder.attention_layer.memory_layer

    def forward(self, text: Tensor, text_lengths: Tensor) -> tuple[Tensor, Tensor]:
        x = self.encoder.convolve(self.embedding(text).transpose(1, 2), text_lengths).transpose(1, 2)
        forward = lstm_direction(self.encoder.lstm, x, "")
        backward = reverse_within_lengths(
            lstm_direction(self.encoder.lstm, reverse_within_lengths(x, text_lengths), "_reverse"), text_lengths)
        valid = lengths_to_mask(text_lengths, x.size(1)).unsqueeze(2)
        memory = torch.cat([forward, backward], dim=2) * valid
        return memory, self.memory_layer(memory)


class DecoderStep(nn.Module):
    """Prenet and one fast decoder step (tacotron2_decoder_step.onnx): STEP_INPUTS -> STEP_OUTPUTS."""

    def __init__(self, model: Tacotron2):
        super().__init__()
        decoder = model.decoder
        self.prenet = decoder.prenet
        with torch.no_grad():
            for name, weight in decoder.fast_step_weights()._asdict().items():
                self.register_buffer(name, weight.detach().clone())
        self.location_kernel_size = decoder.attention_layer.location_layer.kernel_size
        self.n_frames_per_step, self.n_mel_channels = decoder.n_frames_per_step, decoder.n_mel_channels

    def forward(self, frame: Tensor, prenet_keep_masks: Tensor, attention_hidden: Tensor, attention_cell: Tensor,
                decoder_hidden: Tensor, decoder_cell: Tensor, attention_weights: Tensor,
                attention_weights_cum: Tensor, attention_context: Tensor, memory: Tensor, processed_memory: Tensor,
                padding: Tensor) -> tuple[Tensor, ...]:
        state = DecoderState(attention_hidden, attention_cell, decoder_hidden, decoder_cell, attention_weights,
                             attention_weights_cum, attention_context)
        weights = FastStepWeights(*(getattr(self, name) for name in FastStepWeights._fields))
        frames, gate, state = fast_inference_step(self.prenet(frame, prenet_keep_masks), state, memory,
                                                  processed_memory, padding, weights, self.location_kernel_size,
                                                  self.n_frames_per_step, self.n_mel_channels)
        return (frames, gate, *state)


class PostnetWithResidual(nn.Module):
    """The decoder's mel -> the final mel, as Tacotron2.infer makes it (tacotron2_postnet.onnx)."""

    def __init__(self, model: Tacotron2):
        super().__init__()
        self.postnet = model.postnet

    def forward(self, mel: Tensor, mel_lengths: Tensor) -> Tensor:
        valid = lengths_to_mask(mel_lengths, mel.size(2)).unsqueeze(1)
        mel = mel.masked_fill(~valid, 0.0)
        return (mel + self.postnet(mel, valid)).masked_fill(~valid, 0.0)


def random_text(lengths: list[int], n_symbols: int, generator: torch.Generator) -> dict[str, Tensor]:
    text = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        text[row, :length] = torch.randint(1, n_symbols, (length,), generator=generator)
    return {"text": text, "text_lengths": torch.tensor(lengths)}


def step_inputs(model: Tacotron2, text_lengths: list[int], steps_before: int, seed: int) -> dict[str, Tensor]:
    """Decoder-step inputs as inference meets them: the state after `steps_before` eager steps on random text."""
    generator = torch.Generator().manual_seed(seed)
    encoder, step = TextEncoder(model).eval(), DecoderStep(model).eval()
    text = random_text(text_lengths, model.embedding.num_embeddings, generator)
    with torch.no_grad():
        memory, processed_memory = encoder(**text)
        padding = ~lengths_to_mask(text["text_lengths"], memory.size(1))
        frame = memory.new_zeros(memory.size(0), step.n_mel_channels)
        state = model.decoder.initial_state(memory)

        def inputs() -> dict[str, Tensor]:  # in STEP_INPUTS' order
            return dict(frame=frame, prenet_keep_masks=step.prenet.draw_keep_masks([1], memory.device, generator),
                        **state._asdict(), memory=memory, processed_memory=processed_memory, padding=padding)

        for _ in range(steps_before):
            frames, _gate, *next_state = step(**inputs())
            frame, state = frames[:, -1], DecoderState(*next_state)
        return inputs()


def export(model: Tacotron2, folder: str | Path, opset: int | None = None, what: str = "ONNX export"
           ) -> dict[str, float]:
    """Write the three files into folder, each checked against PyTorch (common/onnx_export.py) on two batches of
    other sizes and lengths than its example's; returns each file's largest difference."""
    folder = Path(folder)
    model = model.float().eval()
    n_symbols, n_mel = model.embedding.num_embeddings, model.decoder.n_mel_channels
    batch = torch.export.Dim("batch", max=1024)
    text_length = torch.export.Dim("text_length", min=2)
    frames = torch.export.Dim("frames", min=2)
    generator = torch.Generator().manual_seed(0)
    differences = {}

    text_axes = {"text": {0: batch, 1: text_length}, "text_lengths": {0: batch}}
    differences[ENCODER_FILE] = export_and_check(
        TextEncoder(model), folder / ENCODER_FILE, random_text([11, 7], n_symbols, generator), text_axes,
        ["memory", "processed_memory"], [random_text(lengths, n_symbols, generator) for lengths in CHECK_TEXT_LENGTHS],
        opset, what=what)

    step_axes = {name: {0: batch} for name in STEP_INPUTS if name != "prenet_keep_masks"}
    for name in ("attention_weights", "attention_weights_cum", "memory", "processed_memory", "padding"):
        step_axes[name] = {0: batch, 1: text_length}
    differences[DECODER_STEP_FILE] = export_and_check(
        DecoderStep(model), folder / DECODER_STEP_FILE, step_inputs(model, [11, 7], 2, seed=1), step_axes,
        STEP_OUTPUTS, [step_inputs(model, lengths, 3, seed=2 + index)
                       for index, lengths in enumerate(CHECK_TEXT_LENGTHS)], opset, what=what)

    def postnet_inputs(lengths: list[int]) -> dict[str, Tensor]:  # log mels in a speech-like range
        mel = torch.rand(len(lengths), n_mel, max(lengths), generator=generator) * 13.0 - 11.0
        return {"mel": mel, "mel_lengths": torch.tensor(lengths)}

    mel_axes = {"mel": {0: batch, 2: frames}, "mel_lengths": {0: batch}}
    differences[POSTNET_FILE] = export_and_check(
        PostnetWithResidual(model), folder / POSTNET_FILE, postnet_inputs([16, 12]), mel_axes, ["mel_postnet"],
        [postnet_inputs(lengths) for lengths in CHECK_MEL_LENGTHS], opset, what=what)
    return differences


class OnnxInference(NamedTuple):
    mel: np.ndarray  # (B, n_mel, T_max) after the postnet, zero past each length
    mel_lengths: np.ndarray  # (B,) frames, counting the frame group whose gate fired
    alignments: np.ndarray  # (B, decoder steps, T_in), zero past each utterance's steps
    hit_max_decoder_steps: np.ndarray  # (B,) bool


class OnnxTacotron2:
    """The three files in onnxruntime, driven by Tacotron2.infer's loop in numpy (no torch): the same stop rules
    (the step whose gate fires, or the one max_frames_after_text_end frames after the attention's peak first reached
    the text's last symbol, is the last, counted; finished utterances keep decoding until all have stopped) and the
    same masking of what lies past each length."""

    def __init__(self, folder: str | Path, threads: int | None = None):
        folder = Path(folder)
        self.encoder, self.step, self.postnet = (session(folder / name, threads) for name in FILES)
        shapes = {value.name: value.shape for value in self.step.get_inputs()}
        self.state_sizes = {name: shapes[name][1] for name in STATE_NAMES}  # an int, or a name: dynamic (T_in)
        self.n_mel_channels = shapes["frame"][1]
        self.prenet_mask_shape = tuple(shapes["prenet_keep_masks"])  # (layers, 1, prenet_dim)
        self.n_frames_per_step = {value.name: value.shape for value in self.step.get_outputs()}["frames"][1]

    def draw_prenet_masks(self, rng: np.random.Generator, max_steps: int, dropout: float = 0.5) -> np.ndarray:
        """(max_steps, layers, 1, prenet_dim) keep-masks, Bernoulli(1 - dropout) as the prenet draws them; give the
        same to Tacotron2.infer (prenet_masks) to get the same mel from PyTorch."""
        return rng.random((max_steps, *self.prenet_mask_shape)) >= dropout

    def infer(self, text: np.ndarray, text_lengths: np.ndarray, prenet_masks: np.ndarray, max_steps: int,
              gate_threshold: float = 0.5, early_stopping: bool = True,
              max_frames_after_text_end: int = MAX_FRAMES_AFTER_TEXT_END) -> OnnxInference:
        text, text_lengths = np.asarray(text, dtype=np.int64), np.asarray(text_lengths, dtype=np.int64)
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if len(prenet_masks) < max_steps:
            raise ValueError(f"prenet_masks has {len(prenet_masks)} steps, fewer than max_steps={max_steps}")
        memory, processed_memory = self.encoder.run(None, {"text": text, "text_lengths": text_lengths})
        batch, text_length = memory.shape[:2]
        state = {name: np.zeros((batch, text_length if isinstance(size, str) else size), dtype=np.float32)
                 for name, size in self.state_sizes.items()}
        padding = np.arange(text_length)[None, :] >= text_lengths[:, None]
        frame = np.zeros((batch, self.n_mel_channels), dtype=np.float32)
        n_steps = np.zeros(batch, dtype=np.int64)
        stopped = np.zeros(batch, dtype=bool)
        steps_at_text_end = np.zeros(batch, dtype=np.int64)  # tacotron2/model.py: count_steps_at_text_end
        max_steps_after_text_end = steps_after_text_end(max_frames_after_text_end, self.n_frames_per_step)
        frames, alignments = [], []
        for step in range(max_steps):
            outputs = self.step.run(STEP_OUTPUTS, {"frame": frame, "prenet_keep_masks": prenet_masks[step], **state,
                                                   "memory": memory, "processed_memory": processed_memory,
                                                   "padding": padding})
            step_frames, gate, next_state = outputs[0], outputs[1], outputs[2:]
            state = dict(zip(STATE_NAMES, next_state))
            frames.append(step_frames)
            alignments.append(state["attention_weights"])
            n_steps += ~stopped
            with np.errstate(over="ignore"):  # exp of a large negative logit: inf, a probability of 0
                stopped |= 1.0 / (1.0 + np.exp(-gate.astype(np.float32))) > gate_threshold
            if max_steps_after_text_end > 0:
                reached = (steps_at_text_end > 0) | (state["attention_weights"].argmax(axis=1) >= text_lengths - 1)
                steps_at_text_end += reached
                stopped |= steps_at_text_end > max_steps_after_text_end
            frame = step_frames[:, -1]
            if early_stopping and stopped.all():
                break
        steps_run = len(frames)
        mel = np.stack(frames, axis=1).reshape(batch, steps_run * self.n_frames_per_step, self.n_mel_channels)
        mel_lengths = n_steps * self.n_frames_per_step
        (mel_postnet,) = self.postnet.run(None, {"mel": np.ascontiguousarray(mel.transpose(0, 2, 1)),
                                                 "mel_lengths": mel_lengths})
        alignments = np.stack(alignments, axis=1) * (np.arange(steps_run)[None, :] < n_steps[:, None])[..., None]
        return OnnxInference(mel_postnet, mel_lengths, alignments, ~stopped)


def export_checkpoint(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    """scripts/export_onnx.py -m Tacotron2: the checkpoint's three files (InferencePart.export_onnx)."""
    from common.trained_model import load_trained_model
    from tacotron2.recipe import RECIPE

    model, _ = load_trained_model(RECIPE, args.checkpoint, torch.device("cpu"), published_config={},
                                  flag="--checkpoint")
    return export(model, folder, args.opset, what="scripts.export_onnx")
