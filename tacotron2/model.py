"""Tacotron 2 (Shen et al. 2018, "Natural TTS Synthesis by Conditioning WaveNet on Mel Spectrogram Predictions").

Data flow, in the order this file reads:
    text ids -> embedding -> Encoder (3 x conv/batch-norm/ReLU, then a bidirectional LSTM) = the attention "memory"
    per decoder step: previous frame -> Prenet -> attention LSTM -> location-sensitive attention over the memory
        -> decoder LSTM -> r mel frames (linear projection) and one stop logit (the "gate")
    all frames -> Postnet (5 convolutions) -> a residual added to the mel

Checkpoints. Parameter names and shapes are those of NVIDIA DeepLearningExamples' Tacotron 2, so their published
state dict loads strictly: `model.load_state_dict(state_dict)` (after common.checkpoint strips any `module.`).
The constructor's keyword names are their config keys, and `build_model(config_dict)` rebuilds a model from them.

What differs from NVIDIA's code (all of it fixes):
- Batches need no sorting, in training or inference, and results come back in input order. Batch size 1 works.
- Padding never leaks into valid positions: encoder and postnet convolutions see zeros past each length, and
  finished utterances keep decoding without touching the others. Batched inference therefore equals one-by-one
  inference given the same prenet masks (inference draws one mask per step shared by the batch for exactly that).
- Inference lengths follow the training gate convention: the step whose gate fires is the last one, counted
  (NVIDIA's are one frame short). Hitting max_decoder_steps is logged per utterance and reported in the result.
- Inference does not depend on the gate alone to stop: an utterance also stops max_frames_after_text_end mel frames
  after its attention's peak first reached its text's last symbol (see Decoder.infer). A gate that learned "stop
  after the full stop" may never fire on a text without one, and the decoder would babble to max_decoder_steps.
  max_frames_after_text_end=0 is NVIDIA's rule, the gate alone.
- Reduction factor r = n_frames_per_step >= 1: each decoder step emits r frames; the prenet takes the last frame of
  the previous group, so its input is n_mel_channels wide whatever r is (identical shapes to NVIDIA's for r = 1).
  Mel targets need no padding to a multiple of r: the model runs ceil(T / r) steps and drops the surplus frames of
  the last group, and the gate has one logit per step (Tacotron2Loss turns per-frame gate targets into per-step ones).
- The prenet's always-on dropout takes its masks from an optional torch.Generator (reproducible synthesis) or
  from the caller (`prenet_masks`).

Speed. `Decoder.step` is the decoder as the paper and NVIDIA write it, and `forward` and `infer` run it by default.
`Decoder.fast = True` (--fast-decoder, or --compile) runs the same computation rearranged, equal to rounding: see
"The fast decoder" below. `Decoder.half_lstm_weights = True` (--half-lstm-weights, the CPU's default) has the fast
decoder's inference read its two LSTMs' weights in 16 bits: see Decoder.lstm_weight_dtype. Inference never
synchronises with the host per step on a GPU (see Decoder.infer), and
`tacotron2.cuda_graphs.use_cuda_graphs(decoder)` (--cuda-graphs) replays its fast steps from CUDA graphs.

Reproducing NVIDIA's numbers for the same weights: load their state dict, call `model.eval()` and replace the
`F.dropout(x, 0.5, training=True)` of their Prenet by `x * keep_mask * 2`, feeding the same boolean keep masks here
as `prenet_masks` (forward: (2, B, steps, prenet_dim); infer: (steps, 2, B, prenet_dim)). With a batch of one (or
texts of equal length, and equal mel lengths for forward) every output is then identical, except that infer's
mel_lengths are one larger (the gate convention above). With padding theirs differ near the end of the shorter
utterances, where their convolutions read the padding.
"""

import functools
import inspect
import logging
import math
import warnings
from contextlib import contextmanager
from typing import NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from common.layers import ConvNorm, LinearNorm, lengths_to_mask

logger = logging.getLogger(__name__)


def conv_batchnorm(in_channels: int, out_channels: int, kernel_size: int, w_init_gain: str) -> nn.Sequential:
    # A Sequential gives the checkpoint names `<i>.0.conv.weight` and `<i>.1.running_mean`.
    return nn.Sequential(ConvNorm(in_channels, out_channels, kernel_size, w_init_gain=w_init_gain),
                         nn.BatchNorm1d(out_channels))


class Encoder(nn.Module):
    """Embedded characters -> convolutions (n-gram context) -> bidirectional LSTM = the memory attention reads."""

    def __init__(self, in_dim: int, embedding_dim: int, n_convolutions: int, kernel_size: int, dropout: float = 0.5):
        super().__init__()
        self.dropout = dropout
        self.convolutions = nn.ModuleList(
            conv_batchnorm(in_dim if i == 0 else embedding_dim, embedding_dim, kernel_size, "relu")
            for i in range(n_convolutions))
        self.lstm = nn.LSTM(embedding_dim, embedding_dim // 2, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        """(B, in_dim, T_in) embeddings -> (B, T_in, embedding_dim) memory, zero past each length."""
        x = self.convolve(x, lengths)
        packed = pack_padded_sequence(x.transpose(1, 2), lengths.cpu(), batch_first=True, enforce_sorted=False)
        memory, _ = self.lstm(packed)
        memory, _ = pad_packed_sequence(memory, batch_first=True, total_length=x.size(2))
        return memory

    def convolve(self, x: Tensor, lengths: Tensor) -> Tensor:
        """The convolutions: (B, in_dim, T_in) -> (B, embedding_dim, T_in), what the LSTM reads."""
        valid = lengths_to_mask(lengths, x.size(2)).unsqueeze(1)
        for layer in self.convolutions:
            # Zeroed padding makes an utterance's encoding independent of how much padding its batch adds.
            x = F.dropout(F.relu(layer(x * valid)), self.dropout, self.training)
        return x


class Prenet(nn.Module):
    """n_layers x (linear without bias, ReLU, dropout). The dropout is on at inference too: the paper relies on it
    for output variation. Masks are boolean keep-masks (True = keep), one per layer, stacked in dim 0."""

    def __init__(self, in_dim: int, size: int, n_layers: int = 2, dropout: float = 0.5):
        super().__init__()
        self.size = size
        self.dropout = dropout
        self.layers = nn.ModuleList(LinearNorm(in_dim if i == 0 else size, size, bias=False)
                                    for i in range(n_layers))

    def draw_keep_masks(self, leading_shape: list[int], device: torch.device,
                        generator: Optional[torch.Generator]) -> Tensor:
        """(n_layers, *leading_shape, size) Bernoulli(1 - dropout) masks; `generator` must live on `device`."""
        shape = [len(self.layers)] + leading_shape + [self.size]
        return torch.rand(shape, generator=generator, device=device) >= self.dropout

    def forward(self, x: Tensor, keep_masks: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) * keep_masks[i] / (1.0 - self.dropout)
        return x


class LocationLayer(nn.Module):
    """Features of where attention already went: conv over (previous, cumulative) weights, then a projection."""

    def __init__(self, n_filters: int, kernel_size: int, attention_dim: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.location_conv = ConvNorm(2, n_filters, kernel_size, bias=False)
        self.location_dense = LinearNorm(n_filters, attention_dim, bias=False, w_init_gain="tanh")

    def merged_weight(self) -> Tensor:
        """(2 * kernel_size, attention_dim): the convolution and the projection (both linear, without bias) as one
        matrix over the windows of unfold_attention_weights. One small product instead of a convolution whose
        fixed cost, at these sizes, is most of its time on a CPU."""
        conv = self.location_conv.conv.weight  # (n_filters, 2, kernel_size)
        return conv.reshape(conv.size(0), -1).t() @ self.location_dense.linear_layer.weight.t()

    def forward(self, previous_weights: Tensor) -> Tensor:
        """(B, 2, T_in) -> (B, T_in, attention_dim)"""
        return self.location_dense(self.location_conv(previous_weights).transpose(1, 2))


class LocationSensitiveAttention(nn.Module):
    """Additive attention (Bahdanau) whose energies also see the location features (Chorowski et al. 2015)."""

    def __init__(self, query_dim: int, memory_dim: int, attention_dim: int, n_filters: int, kernel_size: int):
        super().__init__()
        self.query_layer = LinearNorm(query_dim, attention_dim, bias=False, w_init_gain="tanh")
        self.memory_layer = LinearNorm(memory_dim, attention_dim, bias=False, w_init_gain="tanh")
        self.v = LinearNorm(attention_dim, 1, bias=False)
        self.location_layer = LocationLayer(n_filters, kernel_size, attention_dim)

    def forward(self, query: Tensor, memory: Tensor, processed_memory: Tensor, previous_weights: Tensor,
                padding: Tensor) -> Tuple[Tensor, Tensor]:
        """-> context (B, memory_dim) and weights (B, T_in). processed_memory = memory_layer(memory), computed once."""
        energies = self.v(torch.tanh(self.query_layer(query).unsqueeze(1) + self.location_layer(previous_weights)
                                     + processed_memory)).squeeze(2)
        weights = torch.softmax(energies.masked_fill(padding, float("-inf")), dim=1)
        context = torch.bmm(weights.unsqueeze(1).to(memory.dtype), memory).squeeze(1)
        return context, weights


class DecoderState(NamedTuple):
    attention_hidden: Tensor
    attention_cell: Tensor
    decoder_hidden: Tensor
    decoder_cell: Tensor
    attention_weights: Tensor
    attention_weights_cum: Tensor
    attention_context: Tensor


# ---------------------------------------------------------------------------------------------------------------
# The fast decoder: the reference step's computation as functions of tensors alone (which torch.compile takes),
# with the weights merged into fewer, larger products. Decoder.forward_fast and Decoder.fast_step use them.


def lstm_cell(gates: Tensor, cell: Tensor) -> Tuple[Tensor, Tensor]:
    """nn.LSTMCell's update from the sum of its input and hidden products plus biases (gates in PyTorch's order:
    input, forget, cell, output) -> (hidden, cell)."""
    input_gate, forget_gate, cell_gate, output_gate = gates.chunk(4, dim=1)
    cell = torch.sigmoid(forget_gate) * cell + torch.sigmoid(input_gate) * torch.tanh(cell_gate)
    return torch.sigmoid(output_gate) * torch.tanh(cell), cell


def unfold_attention_weights(previous_weights: Tensor, kernel_size: int) -> Tensor:
    """(B, 2, T_in) -> (B, T_in, 2 * kernel_size): the window of (previous, cumulative) weights that the location
    convolution reads at each position, zero-padded at both ends as the convolution is."""
    pad = (kernel_size - 1) // 2
    windows = F.pad(previous_weights, (pad, pad)).unfold(2, kernel_size, 1)  # (B, 2, T_in, kernel_size)
    return windows.transpose(1, 2).reshape(previous_weights.size(0), previous_weights.size(2), -1)


def location_sensitive_attention(query: Tensor, previous_weights: Tensor, query_weight: Tensor,
                                 location_weight: Tensor, location_kernel_size: int, energy_weight: Tensor,
                                 processed_memory: Tensor, memory: Tensor, padding: Tensor) -> Tuple[Tensor, Tensor]:
    """LocationSensitiveAttention.forward with the location layer as one product (LocationLayer.merged_weight)."""
    location = unfold_attention_weights(previous_weights, location_kernel_size) @ location_weight
    energies = F.linear(torch.tanh(F.linear(query, query_weight).unsqueeze(1) + location + processed_memory),
                        energy_weight).squeeze(2)
    weights = torch.softmax(energies.masked_fill(padding, float("-inf")), dim=1)
    context = torch.bmm(weights.unsqueeze(1).to(memory.dtype), memory).squeeze(1)
    return context, weights


def held_weight_linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """F.linear for a float32 x and a weight held in float32, or in 16 bits (Decoder.half_lstm_weights): then x is
    rounded to the weight's dtype too and the product, summed in float32 by ATen's and oneDNN's CPU kernels, comes back
    in float32."""
    if weight.dtype == x.dtype:
        return F.linear(x, weight, bias)
    return F.linear(x.to(weight.dtype), weight).to(x.dtype) + bias


# Decoder.half_lstm_weights holds the LSTMs' weights in float16 for batches of at most this many utterances. At one
# utterance a step's products are matrix-vector products, and reading the weights from memory is what they take:
# NVIDIA's LSTMs hold 68 MiB of float32 weights, and in float16 the whole decoder runs 3.1-4.3x faster at one or
# two utterances (experiments/tacotron2_half_lstm). ATen multiplies a float16 weight row by row, though, so from
# about four utterances on it is slower than float32's matrix product; there oneDNN's bf16 products, where the CPU
# has them, read the weights once for the batch (2.4-3.4x at NVIDIA's size from 4 to 16 utterances).
HALF_LSTM_WEIGHTS_MAX_BATCH = 2


class FastStepWeights(NamedTuple):
    attention_lstm: Tensor  # (4 * attention_rnn_dim, prenet_dim + memory_dim + attention_rnn_dim): [W_ih | W_hh]
    attention_lstm_bias: Tensor  # b_ih + b_hh
    query: Tensor
    location: Tensor  # LocationLayer.merged_weight
    energy: Tensor
    decoder_lstm: Tensor  # (4 * decoder_rnn_dim, attention_rnn_dim + memory_dim + decoder_rnn_dim)
    decoder_lstm_bias: Tensor
    projection: Tensor  # (n_mel * r + 1, decoder_rnn_dim + memory_dim): the frames' projection, then the gate's
    projection_bias: Tensor


# Inference's default limit on the mel frames an utterance runs after its attention reached the text's last symbol
# (Tacotron2's max_frames_after_text_end): about 0.46 s at a hop of 256 samples at 22050 Hz, longer than a final
# sound and the pause after it, so that an utterance its gate stops is left as it was.
MAX_FRAMES_AFTER_TEXT_END = 40


def count_steps_at_text_end(steps_at_text_end: Tensor, attention_weights: Tensor, last_symbol: Tensor) -> Tensor:
    """(B,) steps decoded since each utterance's attention peaked on its last symbol (last_symbol (B,): text
    lengths - 1), this step included: 0 until the peak first gets there, then one more every step, wherever the
    attention goes next (a decoder that babbles often wanders back)."""
    reached = (steps_at_text_end > 0) | (attention_weights.argmax(dim=1) >= last_symbol)
    return steps_at_text_end + reached.long()


def steps_after_text_end(max_frames_after_text_end: int, n_frames_per_step: int) -> int:
    """max_frames_after_text_end in decoder steps of n_frames_per_step frames, rounded up (0: no limit)."""
    return -(-max_frames_after_text_end // n_frames_per_step)


def fast_inference_step(prenet_output: Tensor, state: DecoderState, memory: Tensor, processed_memory: Tensor,
                        padding: Tensor, weights: FastStepWeights, location_kernel_size: int, n_frames_per_step: int,
                        n_mel_channels: int, linear=held_weight_linear) -> Tuple[Tensor, Tensor, DecoderState]:
    """Decoder.step at inference (no attention or decoder dropout), equal to rounding: each LSTM's two products
    are one, the frames' and the gate's projections are one. `linear` computes those three merged products
    (common/quantization.py's int8_linear for Decoder.quantize_fast_step's int8 weights)."""
    attention_hidden, attention_cell = lstm_cell(
        linear(torch.cat([prenet_output, state.attention_context, state.attention_hidden], dim=1),
               weights.attention_lstm, weights.attention_lstm_bias), state.attention_cell)
    context, attention_weights = location_sensitive_attention(
        attention_hidden, torch.stack([state.attention_weights, state.attention_weights_cum], dim=1), weights.query,
        weights.location, location_kernel_size, weights.energy, processed_memory, memory, padding)
    decoder_hidden, decoder_cell = lstm_cell(
        linear(torch.cat([attention_hidden, context, state.decoder_hidden], dim=1), weights.decoder_lstm,
               weights.decoder_lstm_bias), state.decoder_cell)
    output = linear(torch.cat([decoder_hidden, context], dim=1), weights.projection, weights.projection_bias)
    frames = output[:, :-1].reshape(-1, n_frames_per_step, n_mel_channels)
    state = DecoderState(attention_hidden, attention_cell, decoder_hidden, decoder_cell, attention_weights,
                         state.attention_weights_cum + attention_weights, context)
    return frames, output[:, -1], state


class DecoderStepFunctions(NamedTuple):
    """The fast decoder's per-step functions: these, or their torch.compile'd versions (Decoder.compile_step)."""
    lstm_cell: object
    attention: object
    inference_step: object


EAGER_STEP_FUNCTIONS = DecoderStepFunctions(lstm_cell, location_sensitive_attention, fast_inference_step)


class StepwiseLinear:
    """x_s @ weight^T at every step s of one teacher-forced pass, with the weight's gradient formed once.

    Autograd would give each step's product its own weight gradient, an outer product of the step's few rows
    (the batch) that is as large as the weight, and add it into the sum: for NVIDIA's LSTMs, tens of megabytes
    written and read again per step. Here each step's backward only keeps its output gradient and input, and the
    weight's gradient is one product over all of them, formed when autograd has run every step's backward (see
    _WeightGradientOfSteps). Build one per forward pass; under autocast it computes in autocast's dtype."""

    def __init__(self, weight: Tensor):
        device_type = weight.device.type
        if torch.is_autocast_enabled(device_type):
            weight = weight.to(torch.get_autocast_dtype(device_type))
        self.tape = _StepTape(weight)
        self.weight = _WeightGradientOfSteps.apply(weight, self.tape)

    def __call__(self, x: Tensor) -> Tensor:
        return _StepProduct.apply(x.to(self.weight.dtype), self.weight, self.tape)

    @staticmethod
    def matmul(rows: Tensor, weight: Tensor) -> Tensor:
        """rows (M, in) @ weight (out, in)^T, computed as (weight @ rows^T)^T: MKL's product for a few rows against
        a large matrix is faster this way round on the CPU measured (a whole training step at NVIDIA's size, one
        thread: 1.30x at batch 4, 1.07x at 8, 1.03x at 16). Made contiguous, as the reference's products are:
        dropout draws its masks in memory order."""
        return (weight @ rows.t()).t().contiguous()


class _StepTape:
    """What the steps' backward passes keep for the weight's gradient. It holds no tensor of the graph until the
    backward pass (the autograd functions' contexts point to it: a graph tensor here would be a reference cycle)."""

    def __init__(self, weight: Tensor):
        # The backward's (rows x out) @ (out x in) product, done as weight^T @ rows^T: see StepwiseLinear.matmul.
        self.weight_transposed = weight.detach().t().contiguous()
        self.inputs: list[Tensor] = []
        self.output_grads: list[Tensor] = []


class _WeightGradientOfSteps(torch.autograd.Function):
    """The weight as the steps read it. Its backward runs after the backward of every step that the loss reached
    (autograd orders it so), whichever steps those are, and turns what they kept into the weight's gradient."""

    @staticmethod
    def forward(ctx, weight: Tensor, tape: _StepTape) -> Tensor:
        ctx.set_materialize_grads(False)  # the steps pass no gradient here: no weight-sized zeros
        ctx.tape = tape
        return weight.view_as(weight)

    @staticmethod
    def backward(ctx, _):
        tape = ctx.tape
        if not tape.output_grads:
            return None, None
        grad_weight = torch.cat(tape.output_grads).t() @ torch.cat(tape.inputs)
        tape.inputs, tape.output_grads = [], []
        return grad_weight, None


class _StepProduct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, tape: _StepTape) -> Tensor:
        ctx.save_for_backward(x)
        ctx.tape = tape
        with torch.autocast(x.device.type, enabled=False):  # StepwiseLinear already cast x and the weight
            return StepwiseLinear.matmul(x, weight)

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        (x,) = ctx.saved_tensors
        tape = ctx.tape
        if ctx.needs_input_grad[1]:  # kept for _WeightGradientOfSteps
            tape.inputs.append(x)
            tape.output_grads.append(grad_output)
        grad_x = StepwiseLinear.matmul(grad_output, tape.weight_transposed) if ctx.needs_input_grad[0] else None
        return grad_x, None, None


class Decoder(nn.Module):
    """Autoregressive decoder: each step reads the previous frame and attends to the memory to emit r new frames."""

    def __init__(self, n_mel_channels: int, n_frames_per_step: int, encoder_embedding_dim: int, prenet_dim: int,
                 attention_rnn_dim: int, decoder_rnn_dim: int, attention_dim: int, attention_location_n_filters: int,
                 attention_location_kernel_size: int, p_attention_dropout: float, p_decoder_dropout: float):
        super().__init__()
        self.n_mel_channels = n_mel_channels
        self.n_frames_per_step = n_frames_per_step
        self.p_attention_dropout = p_attention_dropout
        self.p_decoder_dropout = p_decoder_dropout
        self.prenet = Prenet(n_mel_channels, prenet_dim)
        self.attention_rnn = nn.LSTMCell(prenet_dim + encoder_embedding_dim, attention_rnn_dim)
        self.attention_layer = LocationSensitiveAttention(attention_rnn_dim, encoder_embedding_dim, attention_dim,
                                                          attention_location_n_filters, attention_location_kernel_size)
        self.decoder_rnn = nn.LSTMCell(attention_rnn_dim + encoder_embedding_dim, decoder_rnn_dim)
        self.linear_projection = LinearNorm(decoder_rnn_dim + encoder_embedding_dim,
                                            n_mel_channels * n_frames_per_step)
        self.gate_layer = LinearNorm(decoder_rnn_dim + encoder_embedding_dim, 1, w_init_gain="sigmoid")
        # Which loop forward and infer run: False, step by step through self.step; True, the fast decoder (the same
        # computation rearranged, see forward_fast and fast_step). A run-time choice: not in the model's config.
        self.fast = False
        self.step_functions = EAGER_STEP_FUNCTIONS
        self.int8_step_weights = None  # quantize_fast_step's packed weights, which the fast step then reads
        # Whether the fast decoder's inference reads its two LSTMs' merged weights in 16 bits (lstm_weight_dtype), and
        # whether bf16 products are native here (for batches above HALF_LSTM_WEIGHTS_MAX_BATCH). Run-time choices,
        # like fast, made by tacotron2/api.py for float32 inference through the eager fast step.
        self.half_lstm_weights = False
        self.native_bf16 = False
        # Inference on a GPU reads "has every utterance stopped?" on the host once per this many steps (see infer);
        # up to this many - 1 steps are decoded past the last stop and cut off.
        self.accelerator_stop_check_interval = 16
        self.cuda_graphs = None  # tacotron2.cuda_graphs.use_cuda_graphs' loop, which infer then runs

    def compile_step(self) -> None:
        """torch.compile the fast decoder's per-step work (and use the fast decoder). Dropout stays outside the
        compiled functions, so compiled and eager runs draw the same masks."""
        self.fast = True
        self.step_functions = DecoderStepFunctions(*(torch.compile(function) for function in EAGER_STEP_FUNCTIONS))

    @torch.jit.unused
    def quantize_fast_step(self) -> None:
        """Use the fast decoder with its three merged products (the two LSTMs', the projections') in int8, one scale
        per output row (`inference.py --fast-decoder --quantize int8`, CPU only). The weights are merged and packed
        once, here, and the fast step reads only these from now on: call it after loading the weights, for
        inference."""
        from common.quantization import int8_linear, pack_int8_linear

        weights = self.fast_step_weights()
        self.int8_step_weights = weights._replace(
            attention_lstm=pack_int8_linear(weights.attention_lstm, weights.attention_lstm_bias),
            decoder_lstm=pack_int8_linear(weights.decoder_lstm, weights.decoder_lstm_bias),
            projection=pack_int8_linear(weights.projection, weights.projection_bias))
        self.step_functions = EAGER_STEP_FUNCTIONS._replace(
            inference_step=functools.partial(fast_inference_step, linear=int8_linear))
        self.fast = True

    def initial_state(self, memory: Tensor) -> DecoderState:
        batch, text_length = memory.size(0), memory.size(1)
        attention = memory.new_zeros(batch, self.attention_rnn.hidden_size)
        decoder = memory.new_zeros(batch, self.decoder_rnn.hidden_size)
        weights = memory.new_zeros(batch, text_length)
        return DecoderState(attention, attention, decoder, decoder, weights, weights,
                            memory.new_zeros(batch, memory.size(2)))

    def step(self, prenet_output: Tensor, state: DecoderState, memory: Tensor, processed_memory: Tensor,
             padding: Tensor) -> Tuple[Tensor, Tensor, DecoderState]:
        """One step -> frames (B, r, n_mel), gate logit (B,), new state (its attention_weights are this step's)."""
        attention_hidden, attention_cell = self.attention_rnn(
            torch.cat([prenet_output, state.attention_context], dim=1), (state.attention_hidden, state.attention_cell))
        attention_hidden = F.dropout(attention_hidden, self.p_attention_dropout, self.training)

        previous_weights = torch.stack([state.attention_weights, state.attention_weights_cum], dim=1)
        context, weights = self.attention_layer(attention_hidden, memory, processed_memory, previous_weights, padding)

        decoder_hidden, decoder_cell = self.decoder_rnn(
            torch.cat([attention_hidden, context], dim=1), (state.decoder_hidden, state.decoder_cell))
        decoder_hidden = F.dropout(decoder_hidden, self.p_decoder_dropout, self.training)

        hidden_and_context = torch.cat([decoder_hidden, context], dim=1)
        frames = self.linear_projection(hidden_and_context).view(-1, self.n_frames_per_step, self.n_mel_channels)
        gate = self.gate_layer(hidden_and_context).squeeze(1)
        state = DecoderState(attention_hidden, attention_cell, decoder_hidden, decoder_cell, weights,
                             state.attention_weights_cum + weights, context)
        return frames, gate, state

    def teacher_forced_prenet(self, mel: Tensor, prenet_masks: Optional[Tensor], generator: Optional[torch.Generator]
                              ) -> Tensor:
        """(B, n_mel, T) targets -> (B, ceil(T / r), prenet_dim): what each teacher-forced step reads. Step s reads
        the last frame of group s - 1; step 0 reads an all-zero "go" frame."""
        batch, n_frames = mel.size(0), mel.size(2)
        r = self.n_frames_per_step
        n_steps = (n_frames + r - 1) // r
        targets = mel.transpose(1, 2)
        inputs = torch.cat([targets.new_zeros(batch, 1, self.n_mel_channels), targets[:, r - 1::r][:, :n_steps - 1]],
                           dim=1)
        if prenet_masks is None:
            prenet_masks = self.prenet.draw_keep_masks([batch, n_steps], mel.device, generator)
        return self.prenet(inputs, prenet_masks)

    def forward(self, memory: Tensor, text_lengths: Tensor, mel: Tensor, prenet_masks: Optional[Tensor],
                generator: Optional[torch.Generator]) -> Tuple[Tensor, Tensor, Tensor]:
        """Teacher forcing: mel (B, n_mel, T) -> mel (B, n_mel, T), gate (B, steps), alignments (B, steps, T_in),
        where steps = ceil(T / r)."""
        if self.fast:
            return self.forward_fast(memory, text_lengths, mel, prenet_masks, generator)
        n_frames = mel.size(2)
        prenet_outputs = self.teacher_forced_prenet(mel, prenet_masks, generator)
        processed_memory = self.attention_layer.memory_layer(memory)
        padding = ~lengths_to_mask(text_lengths, memory.size(1))
        state = self.initial_state(memory)
        frames, gates, alignments = [], [], []
        for s in range(prenet_outputs.size(1)):
            step_frames, gate, state = self.step(prenet_outputs[:, s], state, memory, processed_memory, padding)
            frames.append(step_frames)
            gates.append(gate)
            alignments.append(state.attention_weights)
        mel_out = torch.cat(frames, dim=1)[:, :n_frames].transpose(1, 2)
        return mel_out, torch.stack(gates, dim=1), torch.stack(alignments, dim=1)

    @torch.jit.unused
    def forward_fast(self, memory: Tensor, text_lengths: Tensor, mel: Tensor, prenet_masks: Optional[Tensor],
                     generator: Optional[torch.Generator]) -> Tuple[Tensor, Tensor, Tensor]:
        """forward's computation, equal to rounding, rearranged for training speed. A step of the reference loop
        spends most of its time on the two LSTMs' weights: reading them for the step's product, and in the backward
        pass reading them again, writing a whole weight-sized outer product for the step's gradient and adding it
        into the gradient so far. Here:
        - the recurrent products go through StepwiseLinear, whose weight gradient is one product over all steps
          after the loop, and each LSTM's input and hidden products are one product;
        - what does not depend on the previous step is done for all steps at once before or after the loop: the
          prenet's share of the attention LSTM's input, the projections to frames and gate;
        - the location layer's convolution and projection are one small product (location_sensitive_attention).
        Dropout draws its masks in the reference's order, so a seed gives the same masks in both loops."""
        n_frames = mel.size(2)
        r = self.n_frames_per_step
        prenet_outputs = self.teacher_forced_prenet(mel, prenet_masks, generator)
        batch, n_steps, prenet_dim = prenet_outputs.shape
        processed_memory = self.attention_layer.memory_layer(memory)
        padding = ~lengths_to_mask(text_lengths, memory.size(1))
        attention_rnn, decoder_rnn = self.attention_rnn, self.decoder_rnn
        # unbind, not [:, s]: the gradient of each indexing would be a zero tensor the size of all steps.
        attention_gates_from_prenet = F.linear(prenet_outputs, attention_rnn.weight_ih[:, :prenet_dim],
                                               attention_rnn.bias_ih + attention_rnn.bias_hh).unbind(1)
        attention_recurrent = StepwiseLinear(torch.cat([attention_rnn.weight_ih[:, prenet_dim:],
                                                        attention_rnn.weight_hh], dim=1))
        decoder_recurrent = StepwiseLinear(torch.cat([decoder_rnn.weight_ih, decoder_rnn.weight_hh], dim=1))
        decoder_bias = decoder_rnn.bias_ih + decoder_rnn.bias_hh
        attention = self.attention_layer
        location_weight = attention.location_layer.merged_weight()
        location_kernel_size = attention.location_layer.kernel_size
        cell, attend = self.step_functions.lstm_cell, self.step_functions.attention
        state = self.initial_state(memory)
        hidden_and_context, alignments = [], []
        for s in range(n_steps):
            gates = attention_gates_from_prenet[s] + attention_recurrent(
                torch.cat([state.attention_context, state.attention_hidden], dim=1))
            attention_hidden, attention_cell = cell(gates, state.attention_cell)
            attention_hidden = F.dropout(attention_hidden, self.p_attention_dropout, self.training)
            context, weights = attend(
                attention_hidden, torch.stack([state.attention_weights, state.attention_weights_cum], dim=1),
                attention.query_layer.linear_layer.weight, location_weight, location_kernel_size,
                attention.v.linear_layer.weight, processed_memory, memory, padding)
            gates = decoder_recurrent(torch.cat([attention_hidden, context, state.decoder_hidden], dim=1)) + decoder_bias
            decoder_hidden, decoder_cell = cell(gates, state.decoder_cell)
            decoder_hidden = F.dropout(decoder_hidden, self.p_decoder_dropout, self.training)
            state = DecoderState(attention_hidden, attention_cell, decoder_hidden, decoder_cell, weights,
                                 state.attention_weights_cum + weights, context)
            hidden_and_context.append(torch.cat([decoder_hidden, context], dim=1))
            alignments.append(weights)
        projection_input = torch.stack(hidden_and_context, dim=1)  # (B, steps, decoder_rnn_dim + memory_dim)
        mel_out = self.linear_projection(projection_input).view(batch, n_steps * r, self.n_mel_channels)
        gate = self.gate_layer(projection_input).squeeze(2)
        return mel_out[:, :n_frames].transpose(1, 2), gate, torch.stack(alignments, dim=1)

    @torch.jit.unused
    def fast_step_weights(self, lstm_dtype: torch.dtype = torch.float32) -> FastStepWeights:
        """The weights fast_step reads, merged once per inference call (a few milliseconds for NVIDIA's size), or
        once for all by quantize_fast_step; the two LSTMs' weights in lstm_dtype (held_weight_linear computes their
        products)."""
        if self.int8_step_weights is not None:
            return self.int8_step_weights
        attention_rnn, decoder_rnn, attention = self.attention_rnn, self.decoder_rnn, self.attention_layer

        def lstm_weight(cell: nn.LSTMCell) -> Tensor:  # [W_ih | W_hh]; in 16 bits rounded before the copy
            return torch.cat([cell.weight_ih.to(lstm_dtype), cell.weight_hh.to(lstm_dtype)], dim=1)

        return FastStepWeights(
            attention_lstm=lstm_weight(attention_rnn),
            attention_lstm_bias=attention_rnn.bias_ih + attention_rnn.bias_hh,
            query=attention.query_layer.linear_layer.weight,
            location=attention.location_layer.merged_weight(),
            energy=attention.v.linear_layer.weight,
            decoder_lstm=lstm_weight(decoder_rnn),
            decoder_lstm_bias=decoder_rnn.bias_ih + decoder_rnn.bias_hh,
            projection=torch.cat([self.linear_projection.linear_layer.weight, self.gate_layer.linear_layer.weight]),
            projection_bias=torch.cat([self.linear_projection.linear_layer.bias, self.gate_layer.linear_layer.bias]))

    @torch.jit.unused
    def lstm_weight_dtype(self, batch_size: int) -> torch.dtype:
        """What the LSTMs' weights are held in to decode batch_size utterances: with half_lstm_weights, float16 up to
        HALF_LSTM_WEIGHTS_MAX_BATCH, bf16 above it where bf16 is native; float32 otherwise."""
        if self.half_lstm_weights and batch_size <= HALF_LSTM_WEIGHTS_MAX_BATCH:
            return torch.float16
        if self.half_lstm_weights and self.native_bf16:
            return torch.bfloat16
        return torch.float32

    @torch.jit.unused
    def inference_step_weights(self, batch_size: int) -> FastStepWeights:
        """fast_step_weights for decoding batch_size utterances (lstm_weight_dtype)."""
        return self.fast_step_weights(self.lstm_weight_dtype(batch_size))

    @torch.jit.unused
    def fast_step(self, prenet_output: Tensor, state: DecoderState, memory: Tensor, processed_memory: Tensor,
                  padding: Tensor, weights: Optional[FastStepWeights]) -> Tuple[Tensor, Tensor, DecoderState]:
        """step's computation at inference (no dropout), equal to rounding, with fewer and larger products."""
        assert weights is not None
        return self.step_functions.inference_step(prenet_output, state, memory, processed_memory, padding, weights,
                                                  self.attention_layer.location_layer.kernel_size,
                                                  self.n_frames_per_step, self.n_mel_channels)

    def infer(self, memory: Tensor, text_lengths: Tensor, max_steps: int, gate_threshold: float, early_stopping: bool,
              generator: Optional[torch.Generator], prenet_masks: Optional[Tensor], stop_check_interval: int = 1,
              max_steps_after_text_end: int = 0) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """Free running -> mel (B, n_mel, steps*r), per-utterance steps (B,), alignments (B, steps, T_in),
        stopped (B,) bool: whether the utterance stopped before max_steps.

        An utterance stops at the first step whose gate fires or, with max_steps_after_text_end > 0, at the step that
        many steps after the one whose attention first peaked on its last symbol (count_steps_at_text_end),
        whichever comes first; that step is its last, counted. Each utterance stops on its own: its batch-mates
        keep decoding, and what it decodes after its stop is cut off (its length) and never read by them.

        Outputs go into tensors allocated once, and whether every utterance has stopped is read on the host only
        every stop_check_interval steps: on a GPU that read waits for all queued work, which would otherwise stall
        the queue every step. Steps decoded past the stop are cut off, so every interval gives the same results."""
        if not torch.jit.is_scripting():
            if self.cuda_graphs is not None and not self.training:
                return self.cuda_graphs.infer(memory, text_lengths, max_steps, gate_threshold, early_stopping,
                                              generator, prenet_masks, max_steps_after_text_end)
        batch = memory.size(0)
        processed_memory = self.attention_layer.memory_layer(memory)
        padding = ~lengths_to_mask(text_lengths, memory.size(1))
        state = self.initial_state(memory)
        frame = memory.new_zeros(batch, self.n_mel_channels)
        n_steps = torch.zeros(batch, dtype=torch.long, device=memory.device)
        stopped = torch.zeros(batch, dtype=torch.bool, device=memory.device)
        last_symbol = text_lengths - 1
        steps_at_text_end = torch.zeros(batch, dtype=torch.long, device=memory.device)
        fast = self.fast and not self.training  # the fast step has no attention or decoder dropout
        weights = self.inference_step_weights(batch) if fast else None
        frames = alignments = torch.empty(0)  # (max_steps, B, r, n_mel) and (max_steps, B, T_in), from step 0's dtype
        steps_run = 0
        for s in range(max_steps):
            # One mask for the whole batch, so an utterance's output does not depend on its batch-mates.
            keep_masks = (prenet_masks[s] if prenet_masks is not None
                          else self.prenet.draw_keep_masks([1], memory.device, generator))
            prenet_output = self.prenet(frame, keep_masks)
            if fast:
                step_frames, gate, state = self.fast_step(prenet_output, state, memory, processed_memory, padding,
                                                          weights)
            else:
                step_frames, gate, state = self.step(prenet_output, state, memory, processed_memory, padding)
            if s == 0:
                frames = step_frames.new_empty([max_steps] + list(step_frames.shape))
                alignments = state.attention_weights.new_empty([max_steps] + list(state.attention_weights.shape))
            frames[s] = step_frames
            alignments[s] = state.attention_weights
            steps_run = s + 1
            n_steps += (~stopped).long()  # the step whose gate fires is counted: it holds the last frame
            stops = torch.sigmoid(gate.float()) > gate_threshold
            if max_steps_after_text_end > 0:
                steps_at_text_end = count_steps_at_text_end(steps_at_text_end, state.attention_weights, last_symbol)
                stops = stops | (steps_at_text_end > max_steps_after_text_end)
            stopped = stopped | stops
            frame = step_frames[:, -1]
            if early_stopping and steps_run % stop_check_interval == 0 and bool(stopped.all()):
                break
        if early_stopping and bool(stopped.all()):
            steps_run = int(n_steps.max())  # the step where the last utterance stopped; later ones are cut off
        mel = frames[:steps_run].transpose(0, 1).reshape(batch, steps_run * self.n_frames_per_step,
                                                          self.n_mel_channels).transpose(1, 2)
        return mel, n_steps, alignments[:steps_run].transpose(0, 1), stopped


class Postnet(nn.Module):
    """Convolutions over the whole predicted mel that add a residual correction (the decoder only sees the past)."""

    def __init__(self, n_mel_channels: int, embedding_dim: int, kernel_size: int, n_convolutions: int,
                 dropout: float = 0.5):
        super().__init__()
        self.dropout = dropout
        channels = [n_mel_channels] + [embedding_dim] * (n_convolutions - 1) + [n_mel_channels]
        self.convolutions = nn.ModuleList(
            conv_batchnorm(channels[i], channels[i + 1], kernel_size, "tanh" if i < n_convolutions - 1 else "linear")
            for i in range(n_convolutions))

    def forward(self, mel: Tensor, valid: Tensor) -> Tensor:
        """mel (B, n_mel, T), valid (B, 1, T) bool -> residual (B, n_mel, T), zero past each length."""
        x = mel
        last = len(self.convolutions) - 1
        for i, layer in enumerate(self.convolutions):
            x = layer(x * valid)  # zeroed padding: see Encoder.forward
            if i < last:
                x = torch.tanh(x)
            x = F.dropout(x, self.dropout, self.training)
        return x * valid


class Tacotron2Output(NamedTuple):
    mel: Tensor  # (B, n_mel, T) decoder output, before the postnet
    mel_postnet: Tensor  # (B, n_mel, T)
    gate: Tensor  # (B, ceil(T / r)) stop logits, one per decoder step
    alignments: Tensor  # (B, ceil(T / r), T_in) attention weights


class Tacotron2Inference(NamedTuple):
    mel: Tensor  # (B, n_mel, T_max) after the postnet, zero past each length
    mel_lengths: Tensor  # (B,) frames, counting the frame group whose gate fired
    alignments: Tensor  # (B, decoder steps, T_in), zero past each utterance's steps
    hit_max_decoder_steps: Tensor  # (B,) bool: it never stopped (gate, text end), the mel is cut at max_decoder_steps


class Tacotron2(nn.Module):
    """The whole model. Keyword names (and defaults) are NVIDIA's config keys and command-line flags."""

    def __init__(self, mask_padding: bool = False, n_mel_channels: int = 80, n_symbols: int = 148,
                 symbols_embedding_dim: int = 512, encoder_kernel_size: int = 5, encoder_n_convolutions: int = 3,
                 encoder_embedding_dim: int = 512, attention_rnn_dim: int = 1024, attention_dim: int = 128,
                 attention_location_n_filters: int = 32, attention_location_kernel_size: int = 31,
                 n_frames_per_step: int = 1, decoder_rnn_dim: int = 1024, prenet_dim: int = 256,
                 max_decoder_steps: int = 2000, gate_threshold: float = 0.5, p_attention_dropout: float = 0.1,
                 p_decoder_dropout: float = 0.1, postnet_embedding_dim: int = 512, postnet_kernel_size: int = 5,
                 postnet_n_convolutions: int = 5, decoder_no_early_stopping: bool = False,
                 p_encoder_dropout: float = 0.5, p_postnet_dropout: float = 0.5,
                 max_frames_after_text_end: int = MAX_FRAMES_AFTER_TEXT_END):
        super().__init__()
        if n_frames_per_step < 1:
            raise ValueError(f"n_frames_per_step must be >= 1, got {n_frames_per_step}")
        if encoder_embedding_dim % 2:
            raise ValueError(f"encoder_embedding_dim must be even (two LSTM directions), got {encoder_embedding_dim}")
        if max_decoder_steps < 1:
            raise ValueError(f"max_decoder_steps must be >= 1, got {max_decoder_steps}")
        if max_frames_after_text_end < 0:
            raise ValueError(f"max_frames_after_text_end must be >= 0 (0: no limit), got {max_frames_after_text_end}")
        self.mask_padding = mask_padding
        self.n_frames_per_step = n_frames_per_step
        self.max_decoder_steps = max_decoder_steps
        self.gate_threshold = gate_threshold
        self.early_stopping = not decoder_no_early_stopping
        self.max_frames_after_text_end = max_frames_after_text_end

        self.embedding = nn.Embedding(n_symbols, symbols_embedding_dim)
        bound = math.sqrt(3.0) * math.sqrt(2.0 / (n_symbols + symbols_embedding_dim))
        nn.init.uniform_(self.embedding.weight, -bound, bound)
        self.encoder = Encoder(symbols_embedding_dim, encoder_embedding_dim, encoder_n_convolutions,
                               encoder_kernel_size, p_encoder_dropout)
        self.decoder = Decoder(n_mel_channels, n_frames_per_step, encoder_embedding_dim, prenet_dim,
                               attention_rnn_dim, decoder_rnn_dim, attention_dim, attention_location_n_filters,
                               attention_location_kernel_size, p_attention_dropout, p_decoder_dropout)
        self.postnet = Postnet(n_mel_channels, postnet_embedding_dim, postnet_kernel_size, postnet_n_convolutions,
                               p_postnet_dropout)

    def encode(self, text: Tensor, text_lengths: Tensor) -> Tensor:
        """(B, T_in) zero-padded symbol ids, in any length order -> (B, T_in, encoder_embedding_dim) memory."""
        if text.dim() != 2 or text_lengths.dim() != 1 or text_lengths.size(0) != text.size(0):
            raise ValueError(f"text must be (B, T_in) and text_lengths (B,), got {list(text.shape)} and "
                             f"{list(text_lengths.shape)}")
        if bool((text_lengths < 1).any()) or bool((text_lengths > text.size(1)).any()):
            raise ValueError(f"text_lengths must lie in [1, {text.size(1)}], got values from "
                             f"{int(text_lengths.min())} to {int(text_lengths.max())}")
        return self.encoder(self.embedding(text).transpose(1, 2), text_lengths)

    def forward(self, text: Tensor, text_lengths: Tensor, mel: Tensor, mel_lengths: Tensor,
                prenet_masks: Optional[Tensor] = None, generator: Optional[torch.Generator] = None
                ) -> Tacotron2Output:
        """Teacher-forced pass for training. mel (B, n_mel, T) zero-padded targets with mel_lengths (B,) frames.
        prenet_masks: optional (2, B, ceil(T / r), prenet_dim) keep-masks; else drawn (from `generator` if given)."""
        if bool((mel_lengths < 1).any()) or bool((mel_lengths > mel.size(2)).any()):
            raise ValueError(f"mel_lengths must lie in [1, {mel.size(2)}], got values from "
                             f"{int(mel_lengths.min())} to {int(mel_lengths.max())}")
        memory = self.encode(text, text_lengths)
        mel_out, gate, alignments = self.decoder(memory, text_lengths, mel, prenet_masks, generator)
        valid = lengths_to_mask(mel_lengths, mel.size(2)).unsqueeze(1)
        mel_postnet = mel_out + self.postnet(mel_out, valid)
        if self.mask_padding:
            mel_out = mel_out.masked_fill(~valid, 0.0)
            mel_postnet = mel_postnet.masked_fill(~valid, 0.0)
            step_lengths = (mel_lengths + self.n_frames_per_step - 1) // self.n_frames_per_step
            gate = gate.masked_fill(~lengths_to_mask(step_lengths, gate.size(1)), 1e3)
        return Tacotron2Output(mel_out, mel_postnet, gate, alignments)

    @torch.jit.export
    def infer(self, text: Tensor, text_lengths: Tensor, max_decoder_steps: Optional[int] = None,
              gate_threshold: Optional[float] = None, generator: Optional[torch.Generator] = None,
              prenet_masks: Optional[Tensor] = None, max_frames_after_text_end: Optional[int] = None
              ) -> Tacotron2Inference:
        """Synthesize mels for zero-padded text (B, T_in) in any length order; results are in input order.

        Call model.eval() first. max_decoder_steps, gate_threshold and max_frames_after_text_end (0: the gate alone
        stops an utterance, NVIDIA's rule) override the constructor's for this call.
        The prenet dropout draws its masks from `generator` (on the model's device) when given, so a seed
        reproduces the output; or pass prenet_masks (max_decoder_steps, 2, B or 1, prenet_dim) keep-masks.
        """
        max_steps = self.max_decoder_steps if max_decoder_steps is None else max_decoder_steps
        threshold = self.gate_threshold if gate_threshold is None else gate_threshold
        frames_after_text_end = (self.max_frames_after_text_end if max_frames_after_text_end is None
                                 else max_frames_after_text_end)
        if max_steps < 1:
            raise ValueError(f"max_decoder_steps must be >= 1, got {max_steps}")
        if frames_after_text_end < 0:
            raise ValueError(f"max_frames_after_text_end must be >= 0 (0: no limit), got {frames_after_text_end}")
        if prenet_masks is not None and prenet_masks.size(0) < max_steps:
            raise ValueError(f"prenet_masks has {prenet_masks.size(0)} steps, fewer than max_decoder_steps={max_steps}")
        with torch.no_grad():
            memory = self.encode(text, text_lengths)
            # On the CPU a check costs nothing and stopping late costs steps; on a GPU a check stalls the queue.
            stop_check_interval = 1 if text.device.type == "cpu" else self.decoder.accelerator_stop_check_interval
            mel, n_steps, alignments, stopped = self.decoder.infer(
                memory, text_lengths, max_steps, threshold, self.early_stopping, generator, prenet_masks,
                stop_check_interval, steps_after_text_end(frames_after_text_end, self.n_frames_per_step))
            mel_lengths = n_steps * self.n_frames_per_step
            valid = lengths_to_mask(mel_lengths, mel.size(2)).unsqueeze(1)
            mel = mel.masked_fill(~valid, 0.0)
            mel_postnet = (mel + self.postnet(mel, valid)).masked_fill(~valid, 0.0)
            alignments = alignments.masked_fill(~lengths_to_mask(n_steps, alignments.size(1)).unsqueeze(2), 0.0)
        hit_max = ~stopped
        for index in range(hit_max.size(0)):
            if bool(hit_max[index]):
                message = (f"Tacotron 2: utterance {index} of the batch reached max_decoder_steps={max_steps} "
                           f"before it stopped; its mel is cut there")
                if torch.jit.is_scripting():
                    warnings.warn(message)
                else:
                    logger.warning(message)
        return Tacotron2Inference(mel_postnet, mel_lengths, alignments, hit_max)


@contextmanager
def max_steps_warnings_silenced():
    """Silences infer's per-utterance max_decoder_steps warnings (eager: logging; TorchScript: warnings) for callers
    that report them otherwise (inference.py names the input line; validation counts them)."""
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Tacotron 2: utterance")
            yield
    finally:
        logger.setLevel(level)


def build_model(config: dict) -> Tacotron2:
    """Tacotron2 from a plain dict of constructor keywords (as saved in checkpoints); unknown keys are errors."""
    known = inspect.signature(Tacotron2.__init__).parameters
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"Tacotron 2 model config: unknown keys {unknown}; known keys are "
                         f"{sorted(k for k in known if k != 'self')}")
    return Tacotron2(**config)
