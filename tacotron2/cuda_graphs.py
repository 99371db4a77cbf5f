"""Tacotron 2's decoder loop replayed from CUDA graphs: `inference.py --cuda-graphs` (a GPU), or
`use_cuda_graphs(model.decoder)` in Python.

At batch 1 on a GPU a decoder step is about 30 small kernels whose launches cost more than their work: 1.2 ms a step
on an H100, 86-96 % of text-to-wav latency (tacotron2/RESULTS.md). Here the fast decoder's steps (Decoder.fast_step)
are recorded once as a CUDA graph of `steps_per_replay` steps and replayed with one launch. The host reads "has
every utterance stopped?" once per replay, as the eager loop does once per accelerator_stop_check_interval steps,
and the steps decoded past the last stop are cut off the same way, so the output does not depend on the interval.

The prenet's dropout masks are drawn outside the graph, step by step from the same generator as the eager loop
draws them, so a seed gives the same speech with and without graphs (equal to rounding: tests/tacotron2/
test_cuda_graphs.py).

A graph holds fixed shapes and fixed addresses. One is recorded per batch size, text length rounded up to
TEXT_LENGTH_BUCKET, device and precision, and kept: a text shorter than its bucket is padded and masked, as a
batch-mate's longer text would pad it. Every call copies its inputs and the current weights into the graph's
buffers, so a graph never runs on stale weights.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from common.layers import lengths_to_mask
from tacotron2.model import Decoder, DecoderState, FastStepWeights, count_steps_at_text_end

TEXT_LENGTH_BUCKET = 32  # symbols; fewer recordings for texts of varied length, at little padded work


class _Buffers(NamedTuple):
    """What a recording reads and writes: fixed tensors, refilled before each run."""
    memory: Tensor  # (B, T_padded, memory_dim)
    processed_memory: Tensor
    padding: Tensor  # (B, T_padded) bool: True past each text
    weights: FastStepWeights
    gate_threshold: Tensor  # () float32
    last_symbol: Tensor  # (B,) long: each text's length - 1
    max_steps_after_text_end: Tensor  # () long, 0: no limit (Decoder.infer)
    state: DecoderState
    frame: Tensor  # (B, n_mel): the previous step's last frame
    masks: Tensor  # (steps, n_layers, B, prenet_dim) bool: the prenet's keep-masks of the next steps
    frames: Tensor  # (steps, B, r, n_mel): what the last run's steps emitted
    alignments: Tensor  # (steps, B, T_padded)
    n_steps: Tensor  # (B,) long: steps until each utterance stopped, the stopping one counted
    stopped: Tensor  # (B,) bool
    steps_at_text_end: Tensor  # (B,) long: count_steps_at_text_end's


class _Recording:
    """`steps` decoder steps over one set of buffers: replayed from a CUDA graph, or (for a shorter last run, or on
    a CPU, where nothing is recorded) run step by step over the same buffers."""

    def __init__(self, decoder, buffers: _Buffers, steps: int, capture: bool, autocast_dtype: Optional[torch.dtype]):
        self.decoder, self.buffers, self.steps = decoder, buffers, steps
        self.autocast_dtype = autocast_dtype
        self.graph = None
        if capture:
            self._capture()

    def _autocast(self):
        # Autocast's cache of cast parameters is freed when the caller's autocast ends, while a graph would go on
        # reading it: recordings cast every time instead (only the prenet's small weights are parameters here).
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast("cuda", dtype=self.autocast_dtype, cache_enabled=False)

    def _capture(self) -> None:
        # cuBLAS and the caching allocator set themselves up on a first run, which a recording must not contain.
        side_stream = torch.cuda.Stream()
        side_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side_stream), self._autocast():
            self.run_steps(self.steps)
        torch.cuda.current_stream().wait_stream(side_stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), self._autocast():
            self.run_steps(self.steps)

    def run(self, steps: int) -> None:
        if self.graph is not None and steps == self.steps:
            self.graph.replay()
        else:
            with self._autocast():
                self.run_steps(steps)

    def run_steps(self, steps: int) -> None:
        """Decoder.infer's loop body, `steps` times, from and back into the buffers."""
        b, decoder = self.buffers, self.decoder
        state, frame = b.state, b.frame
        for s in range(steps):
            step_frames, gate, state = decoder.fast_step(decoder.prenet(frame, b.masks[s]), state, b.memory,
                                                         b.processed_memory, b.padding, b.weights)
            b.frames[s].copy_(step_frames)
            b.alignments[s].copy_(state.attention_weights)
            b.n_steps.add_((~b.stopped).long())
            b.steps_at_text_end.copy_(count_steps_at_text_end(b.steps_at_text_end, state.attention_weights,
                                                              b.last_symbol))
            past_text_end = (b.max_steps_after_text_end > 0) & (b.steps_at_text_end > b.max_steps_after_text_end)
            b.stopped.logical_or_((torch.sigmoid(gate.float()) > b.gate_threshold) | past_text_end)
            frame = step_frames[:, -1]
        for buffer, value in zip(b.state, state):
            buffer.copy_(value)
        b.frame.copy_(frame)


def use_cuda_graphs(decoder: Decoder) -> None:
    """Run the decoder's inference steps from CUDA graphs of accelerator_stop_check_interval fast steps each
    (`inference.py --cuda-graphs`). On a CPU the same loop runs without recording."""
    decoder.fast = True
    decoder.cuda_graphs = CudaGraphDecoderLoop(decoder, decoder.accelerator_stop_check_interval)


class CudaGraphDecoderLoop:
    """Decoder.infer's loop with its steps in CUDA graphs (see the module's docstring). On a CPU nothing is
    recorded and the same buffers are run step by step: how the tests check all but the recording itself."""

    def __init__(self, decoder, steps_per_replay: int):
        if steps_per_replay < 1:
            raise ValueError(f"steps_per_replay must be >= 1, got {steps_per_replay}")
        self.decoder = decoder
        self.steps_per_replay = steps_per_replay
        self.recordings: dict[tuple, _Recording] = {}

    def infer(self, memory: Tensor, text_lengths: Tensor, max_steps: int, gate_threshold: float,
              early_stopping: bool, generator: Optional[torch.Generator], prenet_masks: Optional[Tensor],
              max_steps_after_text_end: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Decoder.infer's arguments and results."""
        decoder = self.decoder
        batch, text_length = memory.size(0), memory.size(1)
        padded_length = -(-text_length // TEXT_LENGTH_BUCKET) * TEXT_LENGTH_BUCKET
        memory = F.pad(memory, (0, 0, 0, padded_length - text_length))
        autocast_dtype = (torch.get_autocast_dtype("cuda")
                          if memory.is_cuda and torch.is_autocast_enabled("cuda") else None)
        # The merged weights in the precision autocast would cast them to at every step anyway.
        weights = [w.to(autocast_dtype) if autocast_dtype is not None else w for w in decoder.fast_step_weights()]
        processed_memory = decoder.attention_layer.memory_layer(memory)
        padding = ~lengths_to_mask(text_lengths, padded_length)
        key = (batch, padded_length, memory.device, memory.dtype, autocast_dtype)
        recording = self.recordings.get(key)
        if recording is None:
            recording = self._record(memory, processed_memory, padding, weights, autocast_dtype)
            self.recordings[key] = recording
        b = recording.buffers
        for buffer, value in zip((b.memory, b.processed_memory, b.padding, *b.weights),
                                 (memory, processed_memory, padding, *weights)):
            buffer.copy_(value)
        b.gate_threshold.fill_(gate_threshold)
        b.last_symbol.copy_(text_lengths - 1)
        b.max_steps_after_text_end.fill_(max_steps_after_text_end)
        for buffer in (*b.state, b.frame, b.n_steps, b.stopped, b.steps_at_text_end):
            buffer.zero_()

        frames = b.frames.new_empty((max_steps, *b.frames.shape[1:]))
        alignments = b.alignments.new_empty((max_steps, *b.alignments.shape[1:]))
        steps_run = 0
        while steps_run < max_steps:
            steps = min(self.steps_per_replay, max_steps - steps_run)
            for s in range(steps):  # each step's draw, in the eager loop's order
                b.masks[s].copy_(prenet_masks[steps_run + s] if prenet_masks is not None
                                 else decoder.prenet.draw_keep_masks([1], memory.device, generator))
            recording.run(steps)
            frames[steps_run:steps_run + steps] = b.frames[:steps]
            alignments[steps_run:steps_run + steps] = b.alignments[:steps]
            steps_run += steps
            if early_stopping and bool(b.stopped.all()):
                break
        n_steps, stopped = b.n_steps.clone(), b.stopped.clone()
        if early_stopping and bool(stopped.all()):
            steps_run = int(n_steps.max())
        mel = frames[:steps_run].transpose(0, 1).reshape(
            batch, steps_run * decoder.n_frames_per_step, decoder.n_mel_channels).transpose(1, 2)
        return mel, n_steps, alignments[:steps_run, :, :text_length].transpose(0, 1), stopped

    def _record(self, memory: Tensor, processed_memory: Tensor, padding: Tensor, weights: list,
                autocast_dtype: Optional[torch.dtype]) -> _Recording:
        decoder = self.decoder
        batch = memory.size(0)
        # The state's dtypes are those a step gives back (autocast's, with a float32 softmax): one step from the
        # initial (zero) state finds them. Zeros are zeros in any dtype, so the first step's results do not change.
        state = decoder.initial_state(memory)
        frame = memory.new_zeros(batch, decoder.n_mel_channels)
        masks = decoder.prenet.draw_keep_masks([batch], memory.device, torch.Generator(memory.device))
        step_frames, _, state = decoder.fast_step(decoder.prenet(frame, masks), state, memory, processed_memory,
                                                  padding, FastStepWeights(*weights))
        steps = self.steps_per_replay
        buffers = _Buffers(
            memory=memory.clone(), processed_memory=processed_memory.clone(), padding=padding.clone(),
            weights=FastStepWeights(*(w.clone() for w in weights)),
            gate_threshold=torch.zeros((), device=memory.device),
            last_symbol=torch.zeros(batch, dtype=torch.long, device=memory.device),
            max_steps_after_text_end=torch.zeros((), dtype=torch.long, device=memory.device),
            state=DecoderState(*(torch.zeros_like(tensor) for tensor in state)),
            frame=torch.zeros_like(step_frames[:, -1]),
            masks=torch.zeros((steps, *masks.shape), dtype=torch.bool, device=memory.device),
            frames=step_frames.new_zeros((steps, *step_frames.shape)),
            alignments=state.attention_weights.new_zeros((steps, *state.attention_weights.shape)),
            n_steps=torch.zeros(batch, dtype=torch.long, device=memory.device),
            stopped=torch.zeros(batch, dtype=torch.bool, device=memory.device),
            steps_at_text_end=torch.zeros(batch, dtype=torch.long, device=memory.device))
        return _Recording(decoder, buffers, steps, capture=memory.is_cuda, autocast_dtype=autocast_dtype)
