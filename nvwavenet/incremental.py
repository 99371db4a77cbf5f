"""Sample-by-sample WaveNet inference on the CPU (or any device), the oracle for the CUDA kernels.

    from nvwavenet.incremental import generate
    from nvwavenet.model import mu_law_decode
    classes = generate(model, mel, generator=torch.Generator().manual_seed(0))   # (B, frames * hop) int64
    audio = mu_law_decode(classes, model.out_channels)

Each layer keeps a queue of its own last `dilation` inputs, so a step costs one pass through the stack (no
recomputation of the receptive field): at step s, layer l reads x_l[s - d_l] from slot s % d_l, then overwrites
that slot with x_l[s]. The computation is written against `export_inference_weights`, the flat layout the kernels
consume, so agreement with `WaveNet.forward` also checks that export.

Sampling is the kernels' inverse CDF: with a uniform u in [0, 1) per sample and stream, the class is the first i with
u * sum(exp(z - max z)) <= cumsum(exp(z - max z))[i]. Pass `selectors` (B, T) to reproduce a kernel run exactly.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from nvwavenet.model import WaveNet, check_mel_matches_audio

CONDITIONING_CHUNK = 2048  # samples whose per-layer conditioning is computed at once (memory: chunk*L*2R*B)


@torch.no_grad()
def export_inference_weights(model: WaveNet) -> dict[str, torch.Tensor]:
    """All inference weights, stacked per layer; PyTorch (out, in) row-major, in the model's dtype and device.

      embedding_prev, embedding_cur   (A, R)        row y is added to x_0 when y is the sample two / one step back.
                                                    A row-major (A, R) is the kernels' R x A column-major as is.
      conditioning_weight             (L, 2R, n_mel) c_l[t] = conditioning_weight[l] @ upsampled_mel[:, t]
      dilated_weight_prev             (L, 2R, R)    W_prev, multiplies x_l[t - d_l]  (the kernels' PREV GEMV)
      dilated_weight_cur              (L, 2R, R)    W_cur, multiplies x_l[t]         (the kernels' CUR GEMV)
      dilated_bias                    (L, 2R)       b_h; rows 0..R-1 tanh half, R..2R-1 sigmoid half
      res_weight, res_bias            (L, R, R), (L, R)   zeros for the last layer (it has no residual conv)
      skip_weight, skip_bias          (L, S, R), (L, S)
      hidden_weight, hidden_bias      (A, S), (A,)  Zs = relu(hidden_weight @ relu(skip_sum) + hidden_bias)
      logits_weight, logits_bias      (A, A), (A,)  Za = logits_weight @ Zs + logits_bias
      dilations                       (L,) int64
      embedding_tanh                  () bool       x_0 = tanh(embedding sum) when true

    A kernel that wants M x K column-major matrices (M = out, K = in) takes `w.transpose(-1, -2).contiguous()`.
    """
    R, L = model.residual_channels, model.n_layers
    dilated = torch.stack([layer.dilated_conv.weight for layer in model.layers])  # (L, 2R, R, 2)
    res_weight = dilated.new_zeros(L, R, R)
    res_bias = dilated.new_zeros(L, R)
    for index, layer in enumerate(model.layers):
        if layer.res_conv is not None:
            res_weight[index] = layer.res_conv.weight[:, :, 0]
            res_bias[index] = layer.res_conv.bias
    return {
        "embedding_prev": model.embed_prev.weight.clone(),
        "embedding_cur": model.embed_cur.weight.clone(),
        "conditioning_weight": model.conditioning.weight[:, :, 0].reshape(L, 2 * R, model.n_mel_channels).clone(),
        "dilated_weight_prev": dilated[..., 0].contiguous(),
        "dilated_weight_cur": dilated[..., 1].contiguous(),
        "dilated_bias": torch.stack([layer.dilated_conv.bias for layer in model.layers]),
        "res_weight": res_weight,
        "res_bias": res_bias,
        "skip_weight": torch.stack([layer.skip_conv.weight[:, :, 0] for layer in model.layers]),
        "skip_bias": torch.stack([layer.skip_conv.bias for layer in model.layers]),
        "hidden_weight": model.skip_to_hidden.weight[:, :, 0].clone(),
        "hidden_bias": model.skip_to_hidden.bias.clone(),
        "logits_weight": model.hidden_to_logits.weight[:, :, 0].clone(),
        "logits_bias": model.hidden_to_logits.bias.clone(),
        "dilations": torch.tensor(model.dilations, dtype=torch.int64),
        "embedding_tanh": torch.tensor(model.embedding_tanh),
    }


def conditioning_for_samples(weights: dict[str, torch.Tensor], upsampled_mel: torch.Tensor,
                             start: int, stop: int) -> torch.Tensor:
    """Per-layer conditioning of samples [start, stop) as (stop - start, L, B, 2R): nv-wavenet's Lh[t][l][b] layout.

    upsampled_mel is `model.upsample_mel(mel)`, (B, n_mel, T).
    """
    return torch.einsum("lcm,bmt->tlbc", weights["conditioning_weight"], upsampled_mel[:, :, start:stop])


@torch.inference_mode()
def _autoregress(model: WaveNet, mel: torch.Tensor, next_classes: Callable[[int, torch.Tensor], torch.Tensor],
                 keep_logits: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run the stack one sample at a time; next_classes(s, logits (B, A)) -> classes (B,) fed back as y_s."""
    if mel.dim() != 3 or mel.shape[1] != model.n_mel_channels:
        raise ValueError(f"mel must be (batch, {model.n_mel_channels} mel channels, frames), got {tuple(mel.shape)}")
    w = export_inference_weights(model)
    upsampled_mel = model.upsample_mel(mel.to(w["embedding_cur"]))
    batch, num_samples = mel.shape[0], upsampled_mel.shape[2]
    R = model.residual_channels
    device, dtype = upsampled_mel.device, upsampled_mel.dtype

    queues = [torch.zeros(batch, dilation, R, device=device, dtype=dtype) for dilation in model.dilations]
    two_back = torch.full((batch,), model.silence, dtype=torch.long, device=device)  # y_{s-2}
    one_back = two_back.clone()  # y_{s-1}
    classes = torch.empty(batch, num_samples, dtype=torch.long, device=device)
    logits_out = (torch.empty(batch, model.out_channels, num_samples, device=device, dtype=dtype)
                  if keep_logits else None)

    for chunk_start in range(0, num_samples, CONDITIONING_CHUNK):
        chunk_stop = min(chunk_start + CONDITIONING_CHUNK, num_samples)
        conditioning = conditioning_for_samples(w, upsampled_mel, chunk_start, chunk_stop)
        for s in range(chunk_start, chunk_stop):
            x = w["embedding_prev"][two_back] + w["embedding_cur"][one_back]
            if model.embedding_tanh:
                x = torch.tanh(x)
            skip_sum = 0
            for layer, (dilation, queue) in enumerate(zip(model.dilations, queues)):
                slot = s % dilation
                past = queue[:, slot].clone()  # x_l[s - d] (zeros for s < d)
                queue[:, slot] = x
                gate_input = (F.linear(past, w["dilated_weight_prev"][layer])
                              + F.linear(x, w["dilated_weight_cur"][layer], w["dilated_bias"][layer])
                              + conditioning[s - chunk_start, layer])
                gated = torch.tanh(gate_input[:, :R]) * torch.sigmoid(gate_input[:, R:])
                skip_sum = skip_sum + F.linear(gated, w["skip_weight"][layer], w["skip_bias"][layer])
                x = x + F.linear(gated, w["res_weight"][layer], w["res_bias"][layer])
            hidden = F.relu(F.linear(F.relu(skip_sum), w["hidden_weight"], w["hidden_bias"]))
            logits = F.linear(hidden, w["logits_weight"], w["logits_bias"])
            if keep_logits:
                logits_out[:, :, s] = logits
            classes[:, s] = next_classes(s, logits)
            two_back, one_back = one_back, classes[:, s]
    return classes, logits_out


def teacher_forced_logits(model: WaveNet, mel: torch.Tensor, samples: torch.Tensor) -> torch.Tensor:
    """Logits (B, A, T) of the incremental path fed the given classes (B, T); equals model(mel, samples)."""
    check_mel_matches_audio(mel, samples.shape[1], model.hop_length, model.n_mel_channels)
    samples = samples.to(model.embed_cur.weight.device)
    _, logits = _autoregress(model, mel, lambda s, logits: samples[:, s], keep_logits=True)
    return logits


def select_by_inverse_cdf(logits: torch.Tensor, selectors: torch.Tensor) -> torch.Tensor:
    """logits (B, A), selectors (B,) uniform in [0, 1) -> the first class whose cumulative mass reaches u * total."""
    unnormalised = torch.exp(logits - logits.amax(dim=1, keepdim=True))
    cumulative = torch.cumsum(unnormalised, dim=1)
    threshold = (selectors.to(cumulative) * cumulative[:, -1]).unsqueeze(1)
    # Rounding can leave u * total a hair above the last cumulative value; that is the last class.
    return torch.searchsorted(cumulative, threshold).squeeze(1).clamp(max=logits.shape[1] - 1)


def generate(model: WaveNet, mel: torch.Tensor, *, generator: torch.Generator | None = None,
             selectors: torch.Tensor | None = None, argmax: bool = False) -> torch.Tensor:
    """Mel (B, n_mel, frames) -> generated classes (B, frames * hop).

    Sampling draws one uniform selector per sample and stream from `generator` (seed it for reproducible audio),
    or uses the given `selectors` (B, T); `argmax=True` takes the most likely class instead.
    """
    batch, num_samples = mel.shape[0], mel.shape[2] * model.hop_length
    if argmax:
        if selectors is not None or generator is not None:
            raise ValueError("argmax=True takes no generator or selectors")
        classes, _ = _autoregress(model, mel, lambda s, logits: logits.argmax(dim=1), keep_logits=False)
        return classes
    if selectors is None:
        selectors = torch.rand(batch, num_samples, generator=generator, dtype=torch.float64)
    elif selectors.shape != (batch, num_samples):
        raise ValueError(f"selectors must be (batch, samples) = {(batch, num_samples)}, got {tuple(selectors.shape)}")
    selectors = selectors.to(model.embed_cur.weight.device)
    classes, _ = _autoregress(model, mel, lambda s, logits: select_by_inverse_cdf(logits, selectors[:, s]),
                              keep_logits=False)
    return classes
