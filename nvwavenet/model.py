"""WaveNet as nv-wavenet runs it (Deep Voice style): an autoregressive vocoder over 8-bit mu-law audio classes.

Data flow, for classes y_0..y_{T-1} of one utterance and its mel (n_mel x T/hop):

  1. mel --upsample (learned transposed conv, or repeat)--> one mel vector per audio sample, u[t]
  2. u --1x1 conv--> per-layer conditioning c_l[t] (2R values per layer and sample)
  3. x_0[t] = tanh(E_prev[y_{t-2}] + E_cur[y_{t-1}])      (y_{-1} = y_{-2} = the silence class, A // 2)
     i.e. a kernel-2 causal conv over the one-hot previous samples, stored as two lookup tables.
  4. for each layer l with dilation d_l:
       a = W_prev x_l[t - d_l] + W_cur x_l[t] + b_h + c_l[t]       (x_l[t - d] = 0 for t < d)
       h = tanh(a[:R]) * sigmoid(a[R:])
       x_{l+1}[t] = x_l[t] + W_res h + b_res                        (the last layer has no residual conv)
       skip += W_skip h + b_skip
  5. logits[t] = W_logits relu(W_hidden relu(skip) + b_hidden) + b_logits  -> softmax over A classes, predicts y_t.

Alignment: logits[t] sees y_{<t} and conditioning c[t], in training (`WaveNet.forward`) and in sample-by-sample
inference (nvwavenet/incremental.py) alike. The reference trained with c[t-1] for y_t and generated with c[t].

Parameter layout (names are stable; nvwavenet.incremental.export_inference_weights flattens them for the kernels):
  embed_prev.weight, embed_cur.weight            (A, R)      row y = embedding of class y (E_prev, E_cur)
  upsample.weight                                (n_mel, n_mel, upsample_window)  transposed conv, stride hop
                                                 (absent when upsampling="repeat")
  conditioning.weight                            (L*2R, n_mel, 1)  rows [2R*l, 2R*(l+1)) belong to layer l; no bias
  layers.{l}.dilated_conv.weight                 (2R, R, 2)  [:, :, 0] = W_prev (multiplies x[t-d]),
                                                             [:, :, 1] = W_cur (multiplies x[t])
  layers.{l}.dilated_conv.bias                   (2R,)       b_h
        In every 2R-sized vector, rows 0..R-1 are the tanh half and rows R..2R-1 the sigmoid half.
  layers.{l}.res_conv.weight / .bias             (R, R, 1) / (R,)   layers 0..L-2 only
  layers.{l}.skip_conv.weight / .bias            (S, R, 1) / (S,)
  skip_to_hidden.weight / .bias                  (A, S, 1) / (A,)   the kernels' Zs = relu(W skip + b)
  hidden_to_logits.weight / .bias                (A, A, 1) / (A,)   the kernels' Za
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from common.layers import xavier_conv1d

UPSAMPLING_MODES = ("transposed-conv", "repeat")


# ---------------------------------------------------------------------------------------------------------------
# Mu-law companding: audio in [-1, 1] <-> classes 0..quantization-1


def mu_law_encode(audio: torch.Tensor, quantization: int = 256) -> torch.Tensor:
    """Float audio -> int64 classes: sign(x) log(1 + mu|x|) / log(1 + mu), mapped to 0..mu with rounding."""
    mu = quantization - 1
    audio = audio.clamp(-1.0, 1.0)  # a clipped sample is still the loudest class, not an out-of-range index
    compressed = torch.sign(audio) * torch.log1p(mu * audio.abs()) / math.log1p(mu)
    return torch.floor((compressed + 1) / 2 * mu + 0.5).long()


def mu_law_decode(classes: torch.Tensor, quantization: int = 256) -> torch.Tensor:
    """Classes -> float audio; the inverse of mu_law_encode up to its rounding. The silence class A//2 is ~ +1e-4."""
    mu = quantization - 1
    companded = 2 * classes.double() / mu - 1
    audio = torch.sign(companded) * (torch.pow(1.0 + mu, companded.abs()) - 1) / mu
    return audio.float()


def silence_class(quantization: int) -> int:
    return int(mu_law_encode(torch.zeros(1), quantization))


def dilation_cycle(n_layers: int, max_dilation: int) -> list[int]:
    """1, 2, 4, ..., max_dilation, 1, 2, ...: the only schedule the nv-wavenet kernels implement."""
    if max_dilation < 1 or max_dilation & (max_dilation - 1):
        raise ValueError(f"max_dilation (--max-dilation) must be a power of two, got {max_dilation}")
    cycle_length = int(math.log2(max_dilation)) + 1
    return [2 ** (layer % cycle_length) for layer in range(n_layers)]


# ---------------------------------------------------------------------------------------------------------------
# The network


class GatedResidualLayer(nn.Module):
    def __init__(self, residual_channels: int, skip_channels: int, dilation: int, has_residual: bool):
        super().__init__()
        self.dilation = dilation
        self.dilated_conv = xavier_conv1d(residual_channels, 2 * residual_channels, kernel_size=2, padding=0,
                                     dilation=dilation, w_init_gain="tanh")
        self.res_conv = xavier_conv1d(residual_channels, residual_channels) if has_residual else None
        self.skip_conv = xavier_conv1d(residual_channels, skip_channels, w_init_gain="relu")

    def forward(self, x: torch.Tensor, conditioning: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, R, T), conditioning (B, 2R, T) -> (next layer's x, this layer's skip contribution (B, S, T))."""
        causal_input = F.pad(x, (self.dilation, 0))  # zeros stand for x[t - d] before the start
        tanh_half, sigmoid_half = (self.dilated_conv(causal_input) + conditioning).chunk(2, dim=1)
        gated = torch.tanh(tanh_half) * torch.sigmoid(sigmoid_half)
        if self.res_conv is not None:
            x = x + self.res_conv(gated)
        return x, self.skip_conv(gated)


class WaveNet(nn.Module):
    def __init__(self, n_mel_channels: int = 80, hop_length: int = 256, residual_channels: int = 64,
                 skip_channels: int = 256, out_channels: int = 256, n_layers: int = 20, max_dilation: int = 512,
                 upsampling: str = "transposed-conv", upsample_window: int | None = None,
                 embedding_tanh: bool = True):
        super().__init__()
        if upsampling not in UPSAMPLING_MODES:
            raise ValueError(f"upsampling (--upsampling) must be one of {UPSAMPLING_MODES}, got {upsampling!r}")
        for name, value in [("n_mel_channels", n_mel_channels), ("hop_length", hop_length),
                            ("residual_channels", residual_channels), ("skip_channels", skip_channels),
                            ("n_layers", n_layers)]:
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if out_channels < 2:
            raise ValueError(f"out_channels (--out-channels, the mu-law classes) must be at least 2, "
                             f"got {out_channels}")
        self.n_mel_channels, self.hop_length = n_mel_channels, hop_length
        self.residual_channels, self.skip_channels, self.out_channels = residual_channels, skip_channels, out_channels
        self.n_layers, self.max_dilation = n_layers, max_dilation
        self.dilations = dilation_cycle(n_layers, max_dilation)
        self.embedding_tanh = embedding_tanh
        self.silence = silence_class(out_channels)

        # 1-2. Conditioning. The transposed conv's and the 1x1 conv's biases would only add constants that each
        # layer's dilated_conv bias already provides, so they have none.
        self.upsampling = upsampling
        self.upsample_window = upsample_window if upsample_window is not None else 4 * hop_length
        if upsampling == "transposed-conv":
            if self.upsample_window < hop_length:
                raise ValueError(f"upsample_window (--upsample-window) {self.upsample_window} must be at least "
                                 f"hop_length {hop_length}, or some samples would get no mel frame")
            self.upsample = nn.ConvTranspose1d(n_mel_channels, n_mel_channels, self.upsample_window,
                                               stride=hop_length, bias=False)
        self.conditioning = xavier_conv1d(n_mel_channels, 2 * residual_channels * n_layers, bias=False,
                                     w_init_gain="tanh")
        # 3. Two embedding tables = the two taps of a causal conv on one-hot samples. Std 0.5 keeps their sum
        # (std ~0.7) mostly inside tanh's linear range.
        self.embed_prev = nn.Embedding(out_channels, residual_channels)
        self.embed_cur = nn.Embedding(out_channels, residual_channels)
        nn.init.normal_(self.embed_prev.weight, std=0.5)
        nn.init.normal_(self.embed_cur.weight, std=0.5)
        # 4. The dilated stack.
        self.layers = nn.ModuleList(
            GatedResidualLayer(residual_channels, skip_channels, dilation, has_residual=index < n_layers - 1)
            for index, dilation in enumerate(self.dilations)
        )
        # 5. Output stack.
        self.skip_to_hidden = xavier_conv1d(skip_channels, out_channels, w_init_gain="relu")
        self.hidden_to_logits = xavier_conv1d(out_channels, out_channels)

    # 1. mel (B, n_mel, frames) -> (B, n_mel, frames * hop): sample t is driven mainly by frame t // hop.
    def upsample_mel(self, mel: torch.Tensor) -> torch.Tensor:
        num_samples = mel.shape[2] * self.hop_length
        if self.upsampling == "repeat":
            return mel.repeat_interleave(self.hop_length, dim=2)
        # Frame f reaches output positions [f*hop, f*hop + window); dropping (window - hop) // 2 at the start
        # centres that reach on the frame's own hop, [f*hop, (f+1)*hop).
        trim = (self.upsample_window - self.hop_length) // 2
        return self.upsample(mel)[:, :, trim:trim + num_samples]

    # 2. (B, n_mel, T) upsampled mel -> layer l's conditioning (B, 2R, T).
    def layer_conditioning(self, upsampled_mel: torch.Tensor, layer: int) -> torch.Tensor:
        rows = slice(2 * self.residual_channels * layer, 2 * self.residual_channels * (layer + 1))
        return F.conv1d(upsampled_mel, self.conditioning.weight[rows])

    # 3. classes of the target audio (B, T) -> x_0 (B, R, T) from the two samples before each position.
    def embed_previous_samples(self, audio_classes: torch.Tensor) -> torch.Tensor:
        num_samples = audio_classes.shape[1]
        history = F.pad(audio_classes, (2, 0), value=self.silence)  # history[:, t] = y_{t-2}
        x = self.embed_prev(history[:, :num_samples]) + self.embed_cur(history[:, 1:num_samples + 1])
        if self.embedding_tanh:
            x = torch.tanh(x)
        return x.transpose(1, 2)

    # 5. summed skips (B, S, T) -> logits (B, A, T).
    def output_logits(self, skip_sum: torch.Tensor) -> torch.Tensor:
        return self.hidden_to_logits(F.relu(self.skip_to_hidden(F.relu(skip_sum))))

    def forward(self, mel: torch.Tensor, audio_classes: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, A, T): logits[:, :, t] predicts audio_classes[:, t] from the classes before it.

        mel (B, n_mel, frames) with frames * hop_length == T; audio_classes (B, T) int64 in [0, A).
        """
        check_mel_matches_audio(mel, audio_classes.shape[1], self.hop_length, self.n_mel_channels)
        upsampled_mel = self.upsample_mel(mel)
        x = self.embed_previous_samples(audio_classes)
        skip_sum = 0
        for index, layer in enumerate(self.layers):
            x, skip = layer(x, self.layer_conditioning(upsampled_mel, index))
            skip_sum = skip_sum + skip
        return self.output_logits(skip_sum)


def check_mel_matches_audio(mel: torch.Tensor, num_samples: int, hop_length: int, n_mel_channels: int) -> None:
    if mel.dim() != 3 or mel.shape[1] != n_mel_channels:
        raise ValueError(f"mel must be (batch, {n_mel_channels} mel channels, frames), got {tuple(mel.shape)}")
    if mel.shape[2] * hop_length != num_samples:
        raise ValueError(
            f"mel/audio length mismatch: {mel.shape[2]} mel frames x hop {hop_length} = "
            f"{mel.shape[2] * hop_length} samples, but the audio has {num_samples}; "
            "crop the audio to a whole number of hops and give one mel frame per hop"
        )
