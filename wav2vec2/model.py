"""wav2vec 2.0 (Baevski et al., 2020): self-supervised speech representations, and the CTC recognizer built on them.

Pre-training, in the order data flows (Base sizes):

  waveform (B, L) --7 strided convolutions--> features (B, 512, T), one frame per 20 ms (stride 320)
  LayerNorm -> unmasked features (the quantizer's input) ; post_extract_proj 512 -> 768
  time masking: masked frames become the learned mask_emb ; channel masking (fine-tuning): channels zeroed
  encoder: positional convolution (kernel 128, 16 groups, weight norm) added, 12 transformer layers
           (post-LN for Base, pre-LN with a final LayerNorm for Large), optionally an hourglass that runs the middle
           layers at 1/k of the frame rate
  at the masked frames: context c = final_proj(encoder output); target q = project_q(Gumbel quantizer(unmasked
  features)); logits = cosine(c, [q; K negatives q drawn from other masked frames of the same utterance]) / 0.1

Fine-tuning (Wav2Vec2CTC) keeps everything up to the encoder output and adds one Linear to the letter vocabulary.

Module and parameter names are fairseq's (NVIDIA's for the hourglass), so their state dicts load as they are; the
configuration is a plain dict with fairseq's argument names (Wav2Vec2Config's fields; BASE_CONFIG, its
defaults). Unlike the reference, every part is padding-aware: the first conv layer's GroupNorm takes its statistics
over each utterance's own frames, pads are zeroed before the positional convolution and the hourglass pooling, and
attention never looks at pads, so an utterance in a padded batch gets the output it gets alone.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from common.arguments import flag
from wav2vec2.masking import compute_mask_indices, conv_output_lengths, sample_negative_indices


@dataclass
class Wav2Vec2Config:
    """The model's configuration, Base's sizes by default (fairseq's names, so its files map key for key). Each field
    is also a flag (wav2vec2/arg_parser.py), whose help this is."""
    extractor_mode: str = flag("default", "default: GroupNorm on the first conv layer (Base); layer_norm: on every "
                                          "layer")
    conv_feature_layers: str = flag("[(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2",
                                    "the conv stack as fairseq writes it: [(dim, kernel, stride), ...]")
    conv_bias: bool = flag(False, "biases in the conv stack (Large)")
    encoder_layers: int = flag(12, "transformer layers")
    encoder_embed_dim: int = flag(768, "transformer width")
    encoder_ffn_embed_dim: int = flag(3072, "feed-forward width")
    encoder_attention_heads: int = flag(12, "attention heads")
    activation_fn: str = flag("gelu", "feed-forward activation (gelu)")
    layer_norm_first: bool = flag(False, "pre-LN transformer (Large)")
    dropout: float = flag(0.1, "dropout in the transformer")
    attention_dropout: float = flag(0.1, "dropout of attention weights")
    activation_dropout: float = flag(0.0, "dropout after the feed-forward activation")
    dropout_input: float = flag(0.1, "dropout of the projected features")
    dropout_features: float = flag(0.1, "dropout of the features the quantizer sees")
    encoder_layerdrop: float = flag(0.05, "probability of skipping each transformer layer in training")
    feature_grad_mult: float = flag(0.1, "gradient multiplier of the conv feature extractor (0: frozen)")
    final_dim: int = flag(256, "dimension of the contrastive projections")
    logit_temp: float = flag(0.1, "temperature of the contrastive logits")
    conv_pos: int = flag(128, "positional convolution's kernel")
    conv_pos_groups: int = flag(16, "positional convolution's groups")
    quantize_targets: bool = flag(True, "quantize the contrastive targets (every recipe does)")
    latent_vars: int = flag(320, "codebook entries per group")
    latent_groups: int = flag(2, "codebook groups")
    latent_dim: int = flag(0, "codebook vector dimension (0: --final-dim)")
    latent_temp: list[float] = flag([2.0, 0.5, 0.999995], "Gumbel temperature: start, floor, decay per update",
                                    nargs=3)
    num_negatives: int = flag(100, "distractors per masked frame, from the same utterance")
    mask_prob: float = flag(0.65, "probability of each frame starting a time mask")
    mask_length: int = flag(10, "frames per time mask")
    mask_channel_prob: float = flag(0.0, "probability of each channel starting a channel mask (fine-tuning)")
    mask_channel_length: int = flag(10, "channels per channel mask")
    hourglass_transformer: str | None = flag(  # replaces encoder_layers
        None, "e.g. \"[2,(8,4),2]\": 2 layers, 8 at a quarter of the frame rate, 2")
    hourglass_resample: str = flag("naive", "naive (average / repeat) or linear")
    normalize: bool = flag(False, "normalise each waveform to zero mean and unit variance (Large); applied by the "
                                  "data side")


BASE_CONFIG = dataclasses.asdict(Wav2Vec2Config())


def float32_gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU as fairseq computes it, in float32 whatever the input's precision. Where this machine's bf16 kernel
    gives the same bits as the cast there and back, forward and backward (checked once per device on every bf16
    value), the cast is skipped: 8 to 11 times faster on the CPU. Which kernels agree depends on the CPU (an AVX2
    CPU's bf16 erf GELU differs in its gradient's last bit), so it is measured, not assumed. Under torch.compile the
    cast is kept: it fuses and costs nothing there."""
    if x.dtype == torch.bfloat16 and not torch.compiler.is_compiling() and \
            _bf16_gelu_is_float32_gelu(x.device, approximate):
        return F.gelu(x, approximate=approximate)
    if x.dtype in (torch.bfloat16, torch.float16):
        return F.gelu(x.float(), approximate=approximate).type_as(x)
    return F.gelu(x, approximate=approximate)


@functools.cache
def _bf16_gelu_is_float32_gelu(device: torch.device, approximate: str) -> bool:
    """Whether the device's bf16 GELU equals the float32 GELU rounded to bf16, forward and backward, on every finite
    bf16 value (with three sets of incoming gradients)."""
    every_bf16 = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    x = every_bf16[torch.isfinite(every_bf16)].to(device).repeat(3, 1)
    generator = torch.Generator().manual_seed(0)
    grad = torch.cat([torch.ones(1, x.shape[1]), torch.randn(2, x.shape[1], generator=generator) * 8])
    grad = grad.to(torch.bfloat16).to(device)
    results = []
    with torch.enable_grad():
        for activation in (lambda y: F.gelu(y, approximate=approximate),
                           lambda y: F.gelu(y.float(), approximate=approximate).type_as(y)):
            leaf = x.clone().requires_grad_()
            out = activation(leaf)
            out.backward(grad)
            results.append((out.detach(), leaf.grad))
    (native, native_grad), (cast, cast_grad) = results
    return torch.equal(native, cast) and torch.equal(native_grad, cast_grad)


ACTIVATIONS = {  # fairseq's names
    "gelu": float32_gelu,
    "gelu_accurate": lambda x: float32_gelu(x, approximate="tanh"),
    "gelu_fast": lambda x: float32_gelu(x, approximate="tanh"),
    "relu": F.relu, "tanh": torch.tanh, "swish": F.silu, "linear": lambda x: x,
}


def _literal(node: ast.AST, key: str, text: str):
    """Integers, lists and tuples of them, list + list and list * int: what fairseq's layer strings use."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_literal(item, key, text) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        left, right = _literal(node.left, key, text), _literal(node.right, key, text)
        if isinstance(node.op, ast.Add) and isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(node.op, ast.Mult) and isinstance(left, list) and type(right) is int:
            return left * right
    raise ValueError(f"{key}: cannot read {text!r} (only integers, lists, tuples, list + list and list * int)")


def _parse(text, key: str):
    if not isinstance(text, str):
        return text
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"{key}: {text!r} is not a valid list expression") from None
    return _literal(tree.body, key, text)


def parse_conv_feature_layers(text) -> list[tuple[int, int, int]]:
    """"[(512, 10, 5)] + [(512, 3, 2)] * 4 + ..." -> [(dim, kernel, stride), ...], without eval."""
    layers = _parse(text, "conv_feature_layers")
    if (not isinstance(layers, (list, tuple)) or not layers
            or not all(isinstance(layer, (list, tuple)) and len(layer) == 3
                       and all(type(v) is int and v > 0 for v in layer) for layer in layers)):
        raise ValueError(f"conv_feature_layers: expected a non-empty list of (dim, kernel, stride) positive "
                         f"integers, got {text!r}")
    return [tuple(layer) for layer in layers]


def parse_hourglass(text) -> tuple[int, int, int, int] | None:
    """"[n_pre, (n_hourglass, k), n_post]" -> (n_pre, n_hourglass, k, n_post); None or "" -> None."""
    if text is None or (isinstance(text, str) and text.strip() in ("", "None")):
        return None
    shape = _parse(text, "hourglass_transformer")
    ok = (isinstance(shape, (list, tuple)) and len(shape) == 3 and isinstance(shape[1], (list, tuple))
          and len(shape[1]) == 2 and all(type(v) is int for v in (shape[0], *shape[1], shape[2])))
    if not ok or min(shape[0], shape[2]) < 0 or shape[1][0] < 1 or shape[1][1] < 1:
        raise ValueError(f"hourglass_transformer: expected \"[n_pre, (n_hourglass, shorten_factor), n_post]\" "
                         f"with n_hourglass and shorten_factor at least 1, got {text!r}")
    return shape[0], shape[1][0], shape[1][1], shape[2]


def model_config_from(overrides: dict) -> dict:
    """Wav2Vec2Config with overrides, as a dict, checked: unknown keys and bad values raise ValueError naming the
    key."""
    unknown = sorted(set(overrides) - set(BASE_CONFIG))
    if unknown:
        raise ValueError(f"unknown wav2vec 2.0 model configuration keys: {', '.join(unknown)}")
    config = dataclasses.asdict(Wav2Vec2Config(**overrides))
    parse_conv_feature_layers(config["conv_feature_layers"])
    parse_hourglass(config["hourglass_transformer"])
    choices = {"extractor_mode": ("default", "layer_norm"), "hourglass_resample": ("naive", "linear"),
               "activation_fn": tuple(ACTIVATIONS)}
    for key, allowed in choices.items():
        if config[key] not in allowed:
            raise ValueError(f"{key} must be one of {', '.join(allowed)}, got {config[key]!r}")
    if config["encoder_embed_dim"] % config["encoder_attention_heads"]:
        raise ValueError("encoder_embed_dim must be a multiple of encoder_attention_heads")
    if config["encoder_embed_dim"] % config["conv_pos_groups"]:
        raise ValueError("encoder_embed_dim must be a multiple of conv_pos_groups")
    if (config["latent_dim"] or config["final_dim"] or config["encoder_embed_dim"]) % config["latent_groups"]:
        raise ValueError("latent_dim (or final_dim) must be a multiple of latent_groups")
    temp = config["latent_temp"]
    try:
        temp = [float(t) for t in (ast.literal_eval(temp) if isinstance(temp, str) else temp)]
    except (ValueError, TypeError, SyntaxError):
        temp = None
    if temp is None or len(temp) != 3:
        raise ValueError(f"latent_temp must be (start, end, decay), got {config['latent_temp']!r}")
    config["latent_temp"] = temp
    return config


# ---------------------------------------------------------------------------------------------- feature extractor

class GradMultiply(torch.autograd.Function):
    """Identity forward; the gradient scaled by `scale` (the feature extractor learns 10x slower)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class TransposeLast(nn.Module):
    def forward(self, x):
        return x.transpose(-2, -1)


class ConvBlock(nn.Sequential):
    """Conv1d -> Dropout -> [norm] -> GELU (fairseq's indices 0-3, so keys read conv_layers.i.0/.2). A GroupNorm
    (num_groups = channels: per-channel statistics over time) uses each utterance's valid frames only."""

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        for module in self:
            if isinstance(module, nn.GroupNorm) and lengths is not None:
                x = masked_group_norm(x, module, lengths)
            else:
                x = module(x)
        return x


def masked_group_norm(x: torch.Tensor, norm: nn.GroupNorm, lengths: torch.Tensor) -> torch.Tensor:
    """Per-channel normalisation over the first lengths[b] frames of each utterance (biased variance, in fp32)."""
    valid = (torch.arange(x.size(-1), device=x.device) < lengths[:, None].to(x.device)).float()[:, None, :]
    count = valid.sum(-1, keepdim=True).clamp(min=1)
    xf = x.float()
    mean = (xf * valid).sum(-1, keepdim=True) / count
    var = ((xf - mean).pow(2) * valid).sum(-1, keepdim=True) / count
    y = (xf - mean) * torch.rsqrt(var + norm.eps)
    return (y * norm.weight[:, None] + norm.bias[:, None]).type_as(x)


class ConvFeatureExtractor(nn.Module):
    """Waveform (B, L) -> features (B, dim, T); lengths (B,) in samples make the GroupNorm padding-aware."""

    def __init__(self, conv_layers: list[tuple[int, int, int]], mode: str = "default", conv_bias: bool = False):
        super().__init__()
        self.layer_specs = conv_layers
        self.conv_layers = nn.ModuleList()
        in_dim = 1
        for index, (dim, kernel, stride) in enumerate(conv_layers):
            conv = nn.Conv1d(in_dim, dim, kernel, stride=stride, bias=conv_bias)
            nn.init.kaiming_normal_(conv.weight)
            block = [conv, nn.Dropout(0.0)]
            if mode == "layer_norm":
                block.append(nn.Sequential(TransposeLast(), nn.LayerNorm(dim), TransposeLast()))
            elif index == 0:
                block.append(nn.GroupNorm(dim, dim))
            self.conv_layers.append(ConvBlock(*block, nn.GELU()))
            in_dim = dim

    def forward(self, source: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        x = source.unsqueeze(1)
        for block, spec in zip(self.conv_layers, self.layer_specs):
            if lengths is not None:
                lengths = conv_output_lengths(lengths, [spec])
            x = block(x, lengths)
        return x


# ------------------------------------------------------------------------------------------------------ encoder

class WeightNormConv1d(nn.Module):
    """Conv1d with weight = g * v / ||v||, the norm over dims 0 and 1 (torch's weight_norm(dim=2)), stored as
    fairseq's weight_g [1, 1, k] and weight_v; "same" padding."""

    def __init__(self, channels: int, kernel_size: int, groups: int):
        super().__init__()
        self.groups, self.padding = groups, kernel_size // 2
        weight_v = torch.empty(channels, channels // groups, kernel_size)
        nn.init.normal_(weight_v, 0.0, math.sqrt(4.0 / (kernel_size * channels)))
        self.weight_v = nn.Parameter(weight_v)
        self.weight_g = nn.Parameter(weight_v.norm(dim=(0, 1), keepdim=True))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight_g * self.weight_v / self.weight_v.norm(dim=(0, 1), keepdim=True)
        return F.conv1d(x, weight, self.bias, padding=self.padding, groups=self.groups)


class SamePad(nn.Module):
    """An even kernel with padding k // 2 makes one frame too many: drop the last."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        return x[..., :-self.remove] if self.remove else x


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor | None) -> torch.Tensor:
        batch, frames, dim = x.shape
        q, k, v = (proj(x).view(batch, frames, self.heads, -1).transpose(1, 2)
                   for proj in (self.q_proj, self.k_proj, self.v_proj))
        attend = None if padding_mask is None else ~padding_mask[:, None, None, :]
        x = attention(q, k, v, attend, self.dropout if self.training else 0.0)
        return self.out_proj(x.transpose(1, 2).reshape(batch, frames, dim))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attend: torch.Tensor | None,
              dropout: float) -> torch.Tensor:
    """Scaled dot-product attention. On the CPU a bf16 q, k, v are attended in float32 and the output rounded once:
    PyTorch's CPU kernel takes 1.2 to 2.6 times as long for forward and backward in bf16 as in float32, and no less
    for the forward alone (experiments/wav2vec2_attention/; what it saves `make demo-asr`: wav2vec2/RESULTS.md),
    and float32 is the more exact."""
    if q.device.type != "cpu" or q.dtype != torch.bfloat16:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attend, dropout_p=dropout)
    with torch.autocast("cpu", enabled=False):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=attend,
                                              dropout_p=dropout).to(q.dtype)


class TransformerLayer(nn.Module):
    """Post-LN: x = LN(x + attn(x)); x = LN(x + ffn(x)). Pre-LN (layer_norm_first): x = x + attn(LN(x)); ..."""

    def __init__(self, config: dict):
        super().__init__()
        dim = config["encoder_embed_dim"]
        self.layer_norm_first = config["layer_norm_first"]
        self.activation = ACTIVATIONS[config["activation_fn"]]
        self.self_attn = SelfAttention(dim, config["encoder_attention_heads"], config["attention_dropout"])
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, config["encoder_ffn_embed_dim"])
        self.fc2 = nn.Linear(config["encoder_ffn_embed_dim"], dim)
        self.final_layer_norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(config["dropout"])
        self.activation_dropout = nn.Dropout(config["activation_dropout"])

    def feed_forward(self, x):
        return self.dropout(self.fc2(self.activation_dropout(self.activation(self.fc1(x)))))

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor | None) -> torch.Tensor:
        if self.layer_norm_first:
            x = x + self.dropout(self.self_attn(self.self_attn_layer_norm(x), padding_mask))
            return x + self.feed_forward(self.final_layer_norm(x))
        x = self.self_attn_layer_norm(x + self.dropout(self.self_attn(x, padding_mask)))
        return self.final_layer_norm(x + self.feed_forward(x))


class Downsample(nn.Module):
    """(B, T, C) -> (B, ceil(T / k), C): pads zeroed, zero-padded to a multiple of k, then k frames averaged
    ("naive") or concatenated and projected ("linear"). A short frame is padding only if all its k frames are."""

    def __init__(self, dim: int, factor: int, mode: str):
        super().__init__()
        self.factor = factor
        self.linear = nn.Linear(dim * factor, dim) if mode == "linear" else None

    def forward(self, x, padding_mask):
        batch, frames, dim = x.shape
        extra = -frames % self.factor
        if padding_mask is not None:
            x = x.masked_fill(padding_mask[..., None], 0.0)
            padding_mask = F.pad(padding_mask, (0, extra), value=True).view(batch, -1, self.factor).all(-1)
        x = F.pad(x, (0, 0, 0, extra)).view(batch, -1, self.factor, dim)
        x = x.mean(2) if self.linear is None else self.linear(x.flatten(2))
        return x, padding_mask


class Upsample(nn.Module):
    """(B, T', C) -> (B, T, C): each short frame repeated k times ("naive") or projected to k frames ("linear")."""

    def __init__(self, dim: int, factor: int, mode: str):
        super().__init__()
        self.factor = factor
        self.linear = nn.Linear(dim, dim * factor) if mode == "linear" else None

    def forward(self, x, frames: int):
        if self.linear is None:
            x = x.repeat_interleave(self.factor, dim=1)
        else:
            x = self.linear(x).view(x.size(0), -1, x.size(-1))
        return x[:, :frames]


class TransformerEncoder(nn.Module):
    """Positional convolution, then the transformer layers (with an optional hourglass); (B, T, C) -> (B, T, C)."""

    def __init__(self, config: dict):
        super().__init__()
        dim = config["encoder_embed_dim"]
        self.layer_norm_first = config["layer_norm_first"]
        self.layerdrop = config["encoder_layerdrop"]
        self.pos_conv = nn.Sequential(WeightNormConv1d(dim, config["conv_pos"], config["conv_pos_groups"]),
                                      SamePad(config["conv_pos"]), nn.GELU())
        self.layer_norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(config["dropout"])
        hourglass = parse_hourglass(config["hourglass_transformer"])
        n_pre = config["encoder_layers"] if hourglass is None else hourglass[0]
        self.layers = nn.ModuleList(TransformerLayer(config) for _ in range(n_pre))
        self.hourglass = hourglass is not None
        if self.hourglass:
            _, n_short, factor, n_post = hourglass
            mode = config["hourglass_resample"]
            self.downsample_layer = Downsample(dim, factor, mode)
            self.hourglass_layers = nn.ModuleList(TransformerLayer(config) for _ in range(n_short))
            self.upsample_layer = Upsample(dim, factor, mode)
            self.post_layers = nn.ModuleList(TransformerLayer(config) for _ in range(n_post))
        for module in self.modules():  # BERT initialisation, as fairseq's init_bert_params
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.02)
                nn.init.zeros_(module.bias)

    def run_layers(self, layers: nn.ModuleList, x, padding_mask):
        for layer in layers:
            # LayerDrop: in training, each layer is skipped with probability encoder_layerdrop.
            if not self.training or self.layerdrop == 0 or torch.rand(()) >= self.layerdrop:
                x = layer(x, padding_mask)
        return x

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        if padding_mask is not None:
            x = x.masked_fill(padding_mask[..., None], 0.0)
        x = x + self.pos_conv(x.transpose(1, 2)).transpose(1, 2)
        if not self.layer_norm_first:
            x = self.layer_norm(x)
        x = self.run_layers(self.layers, self.dropout(x), padding_mask)
        if self.hourglass:
            short, short_mask = self.downsample_layer(x, padding_mask)
            short = self.run_layers(self.hourglass_layers, short, short_mask)
            x = self.run_layers(self.post_layers, x + self.upsample_layer(short, x.size(1)), padding_mask)
        return self.layer_norm(x) if self.layer_norm_first else x


# ---------------------------------------------------------------------------------------------------- quantizer

class GumbelVectorQuantizer(nn.Module):
    """(N, in_dim) -> (N, vq_dim): per group, one of num_vars codebook vectors, picked by a hard Gumbel softmax in
    training (straight-through gradients) and by argmax in eval; the groups' vectors are concatenated."""

    def __init__(self, in_dim: int, num_vars: int, groups: int, vq_dim: int, temperature):
        super().__init__()
        self.num_vars, self.groups = num_vars, groups
        self.max_temp, self.min_temp, self.temp_decay = temperature
        self.curr_temp = self.max_temp
        self.vars = nn.Parameter(torch.rand(1, groups * num_vars, vq_dim // groups))
        self.weight_proj = nn.Linear(in_dim, groups * num_vars)
        nn.init.normal_(self.weight_proj.weight, 0.0, 1.0)
        nn.init.zeros_(self.weight_proj.bias)

    def set_num_updates(self, num_updates: int) -> None:
        self.curr_temp = max(self.max_temp * self.temp_decay ** num_updates, self.min_temp)

    @staticmethod
    def perplexity(probs: torch.Tensor) -> torch.Tensor:
        """Sum over groups of exp(entropy) of the batch-mean distribution; probs (N, G, V)."""
        mean = probs.mean(0)
        return torch.exp(-(mean * torch.log(mean + 1e-7)).sum(-1)).sum()

    def forward(self, x: torch.Tensor) -> dict:
        logits = self.weight_proj(x).view(x.size(0), self.groups, self.num_vars)
        hard = F.one_hot(logits.argmax(-1), self.num_vars).to(logits.dtype)
        code_perplexity = self.perplexity(hard.float())
        prob_perplexity = self.perplexity(torch.softmax(logits.float(), dim=-1))
        if self.training:
            hard = F.gumbel_softmax(logits.float(), tau=self.curr_temp, hard=True).type_as(logits)
        codebook = self.vars.view(self.groups, self.num_vars, -1)
        quantized = torch.einsum("ngv,gvd->ngd", hard, codebook.to(hard.dtype)).flatten(1)
        return dict(x=quantized, code_perplexity=code_perplexity, prob_perplexity=prob_perplexity,
                    num_vars=self.groups * self.num_vars, temperature=self.curr_temp)


# ------------------------------------------------------------------------------------------------- the networks

class Wav2Vec2Model(nn.Module):
    """The pre-training network. forward gives the contrastive logits; extract_features the encoder output."""

    def __init__(self, config: dict):
        super().__init__()
        self.config = config = model_config_from(config)
        self.conv_layers = parse_conv_feature_layers(config["conv_feature_layers"])
        conv_dim, dim = self.conv_layers[-1][0], config["encoder_embed_dim"]
        final_dim = config["final_dim"] or dim
        self.feature_grad_mult = config["feature_grad_mult"]
        self.logit_temp = config["logit_temp"]

        self.feature_extractor = ConvFeatureExtractor(self.conv_layers, config["extractor_mode"], config["conv_bias"])
        self.layer_norm = nn.LayerNorm(conv_dim)
        self.post_extract_proj = nn.Linear(conv_dim, dim) if conv_dim != dim else None
        self.dropout_input = nn.Dropout(config["dropout_input"])
        self.dropout_features = nn.Dropout(config["dropout_features"])
        self.mask_emb = nn.Parameter(torch.rand(dim))
        self.encoder = TransformerEncoder(config)

        self.quantizer = None
        if config["quantize_targets"]:
            vq_dim = config["latent_dim"] or final_dim
            self.quantizer = GumbelVectorQuantizer(conv_dim, config["latent_vars"], config["latent_groups"], vq_dim,
                                                   config["latent_temp"])
            self.project_q = nn.Linear(vq_dim, final_dim)
        else:
            self.project_q = nn.Linear(conv_dim, final_dim)
        self.final_proj = nn.Linear(dim, final_dim)

    def remove_pretraining_modules(self) -> None:
        """What fine-tuning drops: the quantizer and both projections into the contrastive space."""
        self.quantizer = self.project_q = self.final_proj = None

    def set_num_updates(self, num_updates: int) -> None:
        if self.quantizer is not None:
            self.quantizer.set_num_updates(num_updates)

    def frame_padding_mask(self, padding_mask: torch.Tensor | None, num_frames: int) -> torch.Tensor | None:
        """Sample padding (B, L) -> frame padding (B, T), True = pad: a frame is valid if the conv stack makes it
        from the utterance's own samples."""
        if padding_mask is None:
            return None
        frames = conv_output_lengths((~padding_mask).sum(1), self.conv_layers)
        return torch.arange(num_frames, device=padding_mask.device) >= frames[:, None].to(padding_mask.device)

    def extract_features(self, source: torch.Tensor, padding_mask: torch.Tensor | None = None,
                         mask_indices: torch.Tensor | None = None, channel_mask: torch.Tensor | None = None) -> dict:
        """The encoder's view of a batch; padding_mask (B, L) and the masks' True mean pad / masked.

        Returns x (B, T, C) the encoder output; padding_mask (B, T) or None; features (B, T, C) the encoder's
        input before masking; unmasked_features (B, T, conv dim) the quantizer's input (Hugging Face's
        extract_features); features_pen the mean squared conv output over valid frames."""
        sample_lengths = None if padding_mask is None else (~padding_mask).sum(1)
        if self.feature_grad_mult > 0:
            features = self.feature_extractor(source, sample_lengths)
            if self.feature_grad_mult != 1.0:
                features = GradMultiply.apply(features, self.feature_grad_mult)
        else:
            with torch.no_grad():
                features = self.feature_extractor(source, sample_lengths)

        frame_mask = self.frame_padding_mask(padding_mask, features.size(-1))
        if frame_mask is None:
            features_pen = features.float().pow(2).mean()
        else:  # the L2 penalty over valid frames only
            valid = (~frame_mask).float()[:, None, :]
            features_pen = (features.float().pow(2) * valid).sum() / (valid.sum() * features.size(1))

        features = self.layer_norm(features.transpose(1, 2))
        unmasked_features = self.dropout_features(features)
        if self.post_extract_proj is not None:
            features = self.post_extract_proj(features)
        features = self.dropout_input(features)

        x = features
        if mask_indices is not None:
            x = torch.where(mask_indices[..., None], self.mask_emb.to(x.dtype), x)
        if channel_mask is not None:
            x = x.masked_fill(channel_mask[:, None, :], 0.0)
        x = self.encoder(x, frame_mask)
        return dict(x=x, padding_mask=frame_mask, features=features, unmasked_features=unmasked_features,
                    features_pen=features_pen)

    def draw_masks(self, source: torch.Tensor, padding_mask: torch.Tensor | None,
                   rng: np.random.Generator) -> torch.Tensor:
        """Time masks as the data side draws them (at least 2 spans per utterance), for forward without them."""
        lengths = torch.full((source.size(0),), source.size(1)) if padding_mask is None else (~padding_mask).sum(1)
        frame_lengths = conv_output_lengths(lengths.cpu(), self.conv_layers).tolist()
        num_frames = int(conv_output_lengths(torch.tensor([source.size(1)]), self.conv_layers)[0])
        mask = compute_mask_indices(frame_lengths, num_frames, self.config["mask_prob"], self.config["mask_length"],
                                    rng, min_masks=2)
        return torch.from_numpy(mask).to(source.device)

    def forward(self, source: torch.Tensor, padding_mask: torch.Tensor | None = None,
                mask_indices: torch.Tensor | None = None, negative_indices: torch.Tensor | None = None) -> dict:
        if mask_indices is None or negative_indices is None:
            # The trainer passes both (drawn in collate); otherwise draw them from a seed of torch's RNG.
            rng = np.random.default_rng(int(torch.randint(0, 2 ** 62, ())))
            if mask_indices is None:
                mask_indices = self.draw_masks(source, padding_mask, rng)
            if negative_indices is None:
                negative_indices = sample_negative_indices(mask_indices, self.config["num_negatives"], rng)
        negative_indices = negative_indices.to(source.device)
        out = self.extract_features(source, padding_mask, mask_indices)
        context = self.final_proj(out["x"][mask_indices])  # (N, final_dim), masked frames in row-major order

        result = dict(features_pen=out["features_pen"], prob_perplexity=None, code_perplexity=None, num_vars=None,
                      temperature=None)
        targets = out["unmasked_features"][mask_indices]
        if self.quantizer is not None:
            quantized = self.quantizer(targets)
            targets = quantized.pop("x")
            result.update(quantized)
        targets = self.project_q(targets)
        result["logits"] = self.contrastive_logits(context, targets, targets[negative_indices])
        return result

    def contrastive_logits(self, context, targets, negatives) -> torch.Tensor:
        """(N, 1 + K) float32: cosine similarity of each context vector with its target (column 0) and its
        negatives, over logit_temp; a negative identical to the target cannot be told apart: -inf."""
        candidates = torch.cat([targets[:, None], negatives], dim=1)
        logits = F.cosine_similarity(context.float()[:, None], candidates.float(), dim=-1) / self.logit_temp
        identical = (negatives == targets[:, None]).all(-1)
        return torch.cat([logits[:, :1], logits[:, 1:].masked_fill(identical, float("-inf"))], dim=1)


class Wav2VecEncoder(nn.Module):
    """Container for fairseq's names: w2v_encoder.w2v_model (the pre-trained network) and w2v_encoder.proj."""

    def __init__(self, config: dict, vocab_size: int, final_dropout: float):
        super().__init__()
        self.w2v_model = Wav2Vec2Model(config)
        self.w2v_model.remove_pretraining_modules()
        self.final_dropout = nn.Dropout(final_dropout)
        self.proj = nn.Linear(self.w2v_model.config["encoder_embed_dim"], vocab_size)
        nn.init.xavier_uniform_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)


class Wav2Vec2CTC(nn.Module):
    """The recognizer: encoder output -> letter logits (B, T, V) for CTC; index 0 (<s>) is the blank."""

    def __init__(self, config: dict, vocab_size: int, final_dropout: float = 0.0, freeze_finetune_updates: int = 0):
        super().__init__()
        self.w2v_encoder = Wav2VecEncoder(config, vocab_size, final_dropout)
        self.config = self.w2v_encoder.w2v_model.config
        self.freeze_finetune_updates = freeze_finetune_updates
        self.num_updates = 0

    def set_num_updates(self, num_updates: int) -> None:
        self.num_updates = num_updates

    def forward(self, source: torch.Tensor, padding_mask: torch.Tensor | None = None,
                mask_indices: torch.Tensor | None = None, channel_mask: torch.Tensor | None = None) -> dict:
        # For the first freeze_finetune_updates updates only the new output layer trains.
        frozen = self.num_updates < self.freeze_finetune_updates
        with torch.no_grad() if frozen else contextlib.nullcontext():
            out = self.w2v_encoder.w2v_model.extract_features(source, padding_mask, mask_indices, channel_mask)
        logits = self.w2v_encoder.proj(self.w2v_encoder.final_dropout(out["x"])).float()
        frame_mask = out["padding_mask"]
        if frame_mask is not None:  # pad frames say blank with certainty, so CTC and decoding ignore them
            blank_only = torch.full_like(logits[0, 0], float("-inf"))
            blank_only[0] = 0.0
            logits = torch.where(frame_mask[..., None], blank_only, logits)
        return dict(logits=logits, padding_mask=frame_mask)

    def load_pretrained(self, state_dict: dict) -> None:
        """Copy a Wav2Vec2Model's weights into the encoder; its pre-training heads are left out, anything else
        missing or unexpected is an error."""
        heads = ("quantizer.", "project_q.", "final_proj.")
        encoder_state = {key: value for key, value in state_dict.items() if not key.startswith(heads)}
        model = self.w2v_encoder.w2v_model
        expected = set(model.state_dict())
        missing, unexpected = sorted(expected - set(encoder_state)), sorted(set(encoder_state) - expected)
        if missing or unexpected:
            raise ValueError(f"the pre-trained weights do not fit this model: missing {missing[:5]}"
                             f"{'...' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}"
                             f"{'...' if len(unexpected) > 5 else ''}")
        model.load_state_dict(encoder_state)
