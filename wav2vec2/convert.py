"""wav2vec 2.0 models between Hugging Face transformers and this project, both ways.

    python -m wav2vec2.convert --from-hf DIR --output CKPT.pt
    python -m wav2vec2.convert --checkpoint CKPT.pt --to-hf DIR [--labels-path dict.ltr.txt]
    python -m wav2vec2.convert --checkpoint FAIRSEQ_OR_NVIDIA.pt --output CKPT.pt [--labels-path dict.ltr.txt]

DIR is a Hugging Face model folder (what save_pretrained writes): config.json and the weights in model.safetensors
(or sharded with model.safetensors.index.json, or an older pytorch_model.bin), and for a CTC model its tokenizer's
vocab.json. It may hold a Wav2Vec2ForPreTraining (encoder, quantizer and projections: this project's pre-training
model), a Wav2Vec2ForCTC (this project's CTC model) or a bare Wav2Vec2Model (the encoder alone: the pre-training
heads are then freshly initialised, which fine-tuning does not use). transformers itself is not needed: the weights
are read with safetensors and config.json as JSON.

CKPT.pt is a file of this project's checkpoint format (wav2vec2.checkpoints.project_checkpoint), which inference.py
and fine-tuning (--w2v-path) take; --checkpoint also takes NVIDIA's and fairseq's files. --to-hf writes config.json,
model.safetensors and, for a CTC model, vocab.json, tokenizer_config.json, special_tokens_map.json and
preprocessor_config.json, so Wav2Vec2ForCTC.from_pretrained(DIR) and Wav2Vec2Processor.from_pretrained(DIR) load it.

The two name the same weights differently (../shared/reference/wav2vec2.md §11): HF's conv_layers.i.conv /
.layer_norm are fairseq's conv_layers.i.0 / .2 (GroupNorm, layer 0) or .2.1 (LayerNorm mode), feature_projection is
layer_norm + post_extract_proj, pos_conv_embed.conv's weight-norm parametrization (original0 / original1, or the
older weight_g / weight_v) is pos_conv.0.weight_g / weight_v, attention/feed_forward are self_attn/fc1/fc2,
masked_spec_embed is mask_emb, quantizer.codevectors is quantizer.vars, project_hid is final_proj, and lm_head is
w2v_encoder.proj; HF's heads classes put the encoder under `wav2vec2.` (ours: the pre-training model's top level, or
w2v_encoder.w2v_model. in the CTC model).

CTC outputs: HF's blank is its pad token, at index 0 in fairseq-converted models, which is our blank <s>: the rows of
the output layer stay as they are, and only the names of indices 0 and 1 swap (HF <pad>, <s> = our <s>, <pad>).

What cannot cross: hourglass models (HF has none), HF models with adapters or another feature-encoder activation,
a layer_norm_eps other than 1e-5 (ours is fixed), or a vocabulary whose blank is not index 0. Each is a UserError.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import torch

from safetensors.torch import load_file, save_file

from common.checkpoint import describe_source, load_checkpoint, load_model_state, save_checkpoint
from common.errors import UserError, UserFileNotFoundError, exit_on_user_error
from wav2vec2.checkpoints import (CTC_HEAD, FINETUNED_PREFIX, FINETUNING_KEYS, is_finetuned_state,
                                  project_checkpoint, read_any_checkpoint)
from wav2vec2.dictionary import SPECIAL_SYMBOLS, Dictionary
from wav2vec2.model import Wav2Vec2CTC, Wav2Vec2Model, model_config_from, parse_conv_feature_layers, parse_hourglass

LAYER_NORM_EPS = 1e-5  # every LayerNorm and GroupNorm of this project's model
ACTIVATIONS_TO_HF = {"gelu": "gelu", "relu": "relu", "gelu_accurate": "gelu_new", "gelu_fast": "gelu_new"}
ACTIVATIONS_FROM_HF = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_accurate",
                       "gelu_pytorch_tanh": "gelu_accurate"}

# ---- weight names --------------------------------------------------------------------------------------------------

# (this project's name, HF's name) of the encoder's weights (HF's Wav2Vec2Model), {i} a layer index. Prefixes:
# each rule renames the start of a key and keeps the rest (weight, bias).
ENCODER_NAMES = [
    ("mask_emb", "masked_spec_embed"),
    ("feature_extractor.conv_layers.{i}.0.", "feature_extractor.conv_layers.{i}.conv."),
    ("layer_norm.", "feature_projection.layer_norm."),
    ("post_extract_proj.", "feature_projection.projection."),
    ("encoder.pos_conv.0.bias", "encoder.pos_conv_embed.conv.bias"),
    ("encoder.pos_conv.0.weight_g", "encoder.pos_conv_embed.conv.parametrizations.weight.original0"),
    ("encoder.pos_conv.0.weight_v", "encoder.pos_conv_embed.conv.parametrizations.weight.original1"),
    ("encoder.layer_norm.", "encoder.layer_norm."),
    ("encoder.layers.{i}.self_attn.", "encoder.layers.{i}.attention."),
    ("encoder.layers.{i}.self_attn_layer_norm.", "encoder.layers.{i}.layer_norm."),
    ("encoder.layers.{i}.fc1.", "encoder.layers.{i}.feed_forward.intermediate_dense."),
    ("encoder.layers.{i}.fc2.", "encoder.layers.{i}.feed_forward.output_dense."),
    ("encoder.layers.{i}.final_layer_norm.", "encoder.layers.{i}.final_layer_norm."),
]
# The conv stack's norms: GroupNorm of layer 0 (extractor_mode "default") or LayerNorm of every layer ("layer_norm").
CONV_NORM_NAMES = {"default": ("feature_extractor.conv_layers.0.2.", "feature_extractor.conv_layers.0.layer_norm."),
                   "layer_norm": ("feature_extractor.conv_layers.{i}.2.1.",
                                  "feature_extractor.conv_layers.{i}.layer_norm.")}
# torch's older weight-norm names, still in some HF files (transformers renames them on load).
HF_LEGACY_WEIGHT_NORM = {"encoder.pos_conv_embed.conv.weight_g": "encoder.pos_conv_embed.conv.parametrizations.weight.original0",
                         "encoder.pos_conv_embed.conv.weight_v": "encoder.pos_conv_embed.conv.parametrizations.weight.original1"}
PRETRAINING_HEAD_NAMES = [("quantizer.vars", "quantizer.codevectors"), ("quantizer.weight_proj.", "quantizer.weight_proj."),
                          ("project_q.", "project_q."), ("final_proj.", "project_hid.")]
CTC_HEAD_NAMES = [(CTC_HEAD, "lm_head.")]
HF_ENCODER_PREFIX = "wav2vec2."


def _pattern(name: str) -> re.Pattern:
    return re.compile("^" + re.escape(name).replace(re.escape("{i}"), r"(\d+)"))


def _rename(key: str, rules: list[tuple[str, str]]) -> str | None:
    """key renamed by the first rule (source prefix, target prefix) whose source matches; None if none does."""
    for source, target in rules:
        match = _pattern(source).match(key)
        if match:
            renamed = target.replace("{i}", match.group(1)) if match.groups() else target
            return renamed + key[match.end():]
    return None


def _rules(extractor_mode: str, heads: list[tuple[str, str]], ours_prefix: str, hf_prefix: str
           ) -> list[tuple[str, str]]:
    """(our name, HF name) rules for one model class: the encoder's under each side's prefix, then its heads."""
    encoder = ENCODER_NAMES + [CONV_NORM_NAMES[extractor_mode]]
    return [(ours_prefix + ours, hf_prefix + theirs) for ours, theirs in encoder] + heads


def _convert_keys(state_dict: dict, rules: list[tuple[str, str]], source: str, what: str) -> dict:
    converted, unknown = {}, []
    for key, value in state_dict.items():
        renamed = _rename(key, rules)
        if renamed is None:
            unknown.append(key)
        else:
            converted[renamed] = value
    if unknown:
        raise UserError(f"{source}: {len(unknown)} weights have no {what} counterpart: "
                        f"{', '.join(unknown[:8])}{' ...' if len(unknown) > 8 else ''}")
    return converted


# ---- configuration -------------------------------------------------------------------------------------------------


def conv_layers_string(dims: list[int], kernels: list[int], strides: list[int]) -> str:
    """[(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2: fairseq's way of writing a conv stack, runs of
    equal layers grouped."""
    layers = list(zip(dims, kernels, strides))
    runs: list[list] = []
    for layer in layers:
        if runs and runs[-1][0] == layer:
            runs[-1][1] += 1
        else:
            runs.append([layer, 1])
    return " + ".join(f"[{tuple(layer)}]" + (f" * {count}" if count > 1 else "") for layer, count in runs)


def without_encoder_prefix(hf_state: dict) -> dict:
    """The heads classes' `wav2vec2.` prefix dropped, so that every class's encoder reads as Wav2Vec2Model's; torch's
    older weight-norm names renamed as transformers does on load."""
    out = {}
    for key, value in hf_state.items():
        key = key[len(HF_ENCODER_PREFIX):] if key.startswith(HF_ENCODER_PREFIX) else key
        out[HF_LEGACY_WEIGHT_NORM.get(key, key)] = value
    return out


def hf_class_of(state_dict: dict) -> str:
    """Wav2Vec2ForPreTraining, Wav2Vec2ForCTC or Wav2Vec2Model, from the weights' names."""
    if any(key.startswith("lm_head.") for key in state_dict):
        return "Wav2Vec2ForCTC"
    if any(key.startswith("quantizer.") for key in state_dict):
        return "Wav2Vec2ForPreTraining"
    return "Wav2Vec2Model"


def config_from_hf(hf: dict, source: str) -> tuple[dict, dict]:
    """(our model_config, CTC settings: vocab_size, final_dropout) from an HF config.json's values."""
    def refuse(reason: str):
        raise UserError(f"{source}: {reason}; this project's wav2vec 2.0 cannot hold it")

    if hf.get("model_type", "wav2vec2") != "wav2vec2":
        refuse(f"model_type is {hf.get('model_type')!r}, not 'wav2vec2'")
    if hf.get("add_adapter") or hf.get("adapter_attn_dim") is not None:
        refuse("the model has adapter layers (add_adapter / adapter_attn_dim)")
    if hf.get("feat_extract_activation", "gelu") != "gelu":
        refuse(f"feat_extract_activation is {hf.get('feat_extract_activation')!r} (ours is gelu)")
    activation = hf.get("hidden_act", "gelu")
    if activation not in ACTIVATIONS_FROM_HF:
        refuse(f"hidden_act is {activation!r} (ours: {', '.join(ACTIVATIONS_FROM_HF)})")
    if abs(float(hf.get("layer_norm_eps", LAYER_NORM_EPS)) - LAYER_NORM_EPS) > 1e-12:
        refuse(f"layer_norm_eps is {hf.get('layer_norm_eps')} (ours is {LAYER_NORM_EPS})")
    norm = hf.get("feat_extract_norm", "group")
    if norm not in ("group", "layer"):
        refuse(f"feat_extract_norm is {norm!r}")
    dims, kernels, strides = (list(hf.get(key) or []) for key in ("conv_dim", "conv_kernel", "conv_stride"))
    if not dims or not len(dims) == len(kernels) == len(strides):
        refuse(f"conv_dim, conv_kernel and conv_stride differ in length ({len(dims)}, {len(kernels)}, "
               f"{len(strides)})")
    final_dim = int(hf.get("proj_codevector_dim", 256))
    codevector_dim = int(hf.get("codevector_dim", 256))
    values = {
        "extractor_mode": "layer_norm" if norm == "layer" else "default",
        "conv_feature_layers": conv_layers_string(dims, kernels, strides),
        "conv_bias": bool(hf.get("conv_bias", False)),
        "encoder_layers": int(hf.get("num_hidden_layers", 12)),
        "encoder_embed_dim": int(hf.get("hidden_size", 768)),
        "encoder_ffn_embed_dim": int(hf.get("intermediate_size", 3072)),
        "encoder_attention_heads": int(hf.get("num_attention_heads", 12)),
        "activation_fn": ACTIVATIONS_FROM_HF[activation],
        "layer_norm_first": bool(hf.get("do_stable_layer_norm", False)),
        "dropout": float(hf.get("hidden_dropout", 0.1)),
        "attention_dropout": float(hf.get("attention_dropout", 0.1)),
        "activation_dropout": float(hf.get("activation_dropout", 0.1)),
        "dropout_input": float(hf.get("feat_proj_dropout", 0.0)),
        "dropout_features": float(hf.get("feat_quantizer_dropout", 0.0)),
        "encoder_layerdrop": float(hf.get("layerdrop", 0.1)),
        "final_dim": final_dim,
        "logit_temp": float(hf.get("contrastive_logits_temperature", 0.1)),
        "conv_pos": int(hf.get("num_conv_pos_embeddings", 128)),
        "conv_pos_groups": int(hf.get("num_conv_pos_embedding_groups", 16)),
        "quantize_targets": True,
        "latent_vars": int(hf.get("num_codevectors_per_group", 320)),
        "latent_groups": int(hf.get("num_codevector_groups", 2)),
        "latent_dim": 0 if codevector_dim == final_dim else codevector_dim,
        "num_negatives": int(hf.get("num_negatives", 100)),
        "mask_prob": float(hf.get("mask_time_prob", 0.05)) if hf.get("apply_spec_augment", True) else 0.0,
        "mask_length": int(hf.get("mask_time_length", 10)),
        "mask_channel_prob": float(hf.get("mask_feature_prob", 0.0)) if hf.get("apply_spec_augment", True) else 0.0,
        "mask_channel_length": int(hf.get("mask_feature_length", 10)),
    }
    try:
        config = model_config_from(values)
    except ValueError as error:
        raise UserError(f"{source}: its configuration does not build a wav2vec 2.0 model: {error}") from error
    ctc = {"vocab_size": int(hf.get("vocab_size", 32)), "final_dropout": float(hf.get("final_dropout", 0.0))}
    return config, ctc


def config_to_hf(config: dict, hf_class: str, vocab_size: int | None = None, final_dropout: float = 0.0) -> dict:
    """An HF config.json's values for our model_config (`hf_class`: the architecture written)."""
    if parse_hourglass(config["hourglass_transformer"]) is not None:
        raise UserError(f"an hourglass model (hourglass_transformer={config['hourglass_transformer']!r}) has no "
                        "Hugging Face counterpart: HF's wav2vec 2.0 runs every layer at the full frame rate")
    if config["activation_fn"] not in ACTIVATIONS_TO_HF:
        raise UserError(f"activation_fn {config['activation_fn']!r} has no Hugging Face counterpart "
                        f"(they have {', '.join(ACTIVATIONS_TO_HF)})")
    layers = parse_conv_feature_layers(config["conv_feature_layers"])
    dim = config["encoder_embed_dim"]
    final_dim = config["final_dim"] or dim
    hf = {
        "architectures": [hf_class], "model_type": "wav2vec2",
        "feat_extract_norm": "layer" if config["extractor_mode"] == "layer_norm" else "group",
        "feat_extract_activation": "gelu",
        "conv_dim": [layer[0] for layer in layers], "conv_kernel": [layer[1] for layer in layers],
        "conv_stride": [layer[2] for layer in layers], "num_feat_extract_layers": len(layers),
        "conv_bias": bool(config["conv_bias"]),
        "hidden_size": dim, "num_hidden_layers": config["encoder_layers"],
        "intermediate_size": config["encoder_ffn_embed_dim"],
        "num_attention_heads": config["encoder_attention_heads"],
        "hidden_act": ACTIVATIONS_TO_HF[config["activation_fn"]], "layer_norm_eps": LAYER_NORM_EPS,
        "do_stable_layer_norm": bool(config["layer_norm_first"]),
        "num_conv_pos_embeddings": config["conv_pos"], "num_conv_pos_embedding_groups": config["conv_pos_groups"],
        "hidden_dropout": config["dropout"], "attention_dropout": config["attention_dropout"],
        "activation_dropout": config["activation_dropout"], "feat_proj_dropout": config["dropout_input"],
        "feat_quantizer_dropout": config["dropout_features"], "layerdrop": config["encoder_layerdrop"],
        "final_dropout": final_dropout,
        "apply_spec_augment": True, "mask_time_prob": config["mask_prob"], "mask_time_length": config["mask_length"],
        "mask_time_min_masks": 2, "mask_feature_prob": config["mask_channel_prob"],
        "mask_feature_length": config["mask_channel_length"], "mask_feature_min_masks": 0,
        "num_codevectors_per_group": config["latent_vars"], "num_codevector_groups": config["latent_groups"],
        "codevector_dim": config["latent_dim"] or final_dim, "proj_codevector_dim": final_dim,
        "contrastive_logits_temperature": config["logit_temp"], "num_negatives": config["num_negatives"],
        "diversity_loss_weight": 0.1,
        "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
        "ctc_loss_reduction": "sum", "ctc_zero_infinity": True,
    }
    if vocab_size is not None:
        hf["vocab_size"] = vocab_size
    return hf


def _masks_anything(config: dict) -> bool:
    """HF's Wav2Vec2Model has masked_spec_embed only when it masks (mask_time_prob or mask_feature_prob > 0)."""
    return config["mask_prob"] > 0 or config["mask_channel_prob"] > 0


# ---- weights -------------------------------------------------------------------------------------------------------


def state_from_hf(hf_state: dict, config: dict, source: str = "the Hugging Face model") -> dict:
    """HF weights (any of the three classes) under our names: Wav2Vec2Model's keys for the encoder alone and for
    Wav2Vec2ForPreTraining, Wav2Vec2CTC's for Wav2Vec2ForCTC. Some weights may be missing from the result: the
    pre-training heads of a bare Wav2Vec2Model, and mask_emb of a model that does not mask."""
    hf_state = without_encoder_prefix(hf_state)
    hf_class = hf_class_of(hf_state)
    ours_prefix = FINETUNED_PREFIX if hf_class == "Wav2Vec2ForCTC" else ""
    heads = CTC_HEAD_NAMES if hf_class == "Wav2Vec2ForCTC" else PRETRAINING_HEAD_NAMES
    reverse = [(theirs, ours) for ours, theirs in _rules(config["extractor_mode"], heads, ours_prefix, "")]
    state = _convert_keys(hf_state, reverse, source, "wav2vec 2.0 (this project's)")
    projection = ours_prefix + "post_extract_proj."
    conv_dim = parse_conv_feature_layers(config["conv_feature_layers"])[-1][0]
    if conv_dim == config["encoder_embed_dim"]:
        # fairseq's model has no projection between equal widths; HF's always has one: it must be the identity.
        weight, bias = state.pop(projection + "weight"), state.pop(projection + "bias")
        if not (torch.equal(weight, torch.eye(conv_dim, dtype=weight.dtype)) and not bias.any()):
            raise UserError(f"{source}: feature_projection.projection maps {conv_dim} to {conv_dim} channels with a "
                            "learned matrix, which this project's model (fairseq's) does not have between equal "
                            "widths")
    return state


def state_to_hf(state: dict, config: dict) -> tuple[dict, str]:
    """Our weights (the pre-training model's, or the CTC model's) under HF's names; returns (state, HF class):
    Wav2Vec2ForCTC, Wav2Vec2ForPreTraining, or Wav2Vec2Model for a pre-training model without a quantizer (fairseq's
    quantize_targets=False, which HF's pre-training class cannot hold: the heads are left out)."""
    if is_finetuned_state(state):
        hf_class, ours_prefix, heads = "Wav2Vec2ForCTC", FINETUNED_PREFIX, CTC_HEAD_NAMES
    elif config["quantize_targets"]:
        hf_class, ours_prefix, heads = "Wav2Vec2ForPreTraining", "", PRETRAINING_HEAD_NAMES
    else:
        hf_class, ours_prefix, heads = "Wav2Vec2Model", "", []
        state = {key: value for key, value in state.items() if not key.startswith(("project_q.", "final_proj."))}
    hf_prefix = "" if hf_class == "Wav2Vec2Model" else HF_ENCODER_PREFIX
    rules = _rules(config["extractor_mode"], heads, ours_prefix, hf_prefix)
    if not _masks_anything(config):
        state = {key: value for key, value in state.items() if key != ours_prefix + "mask_emb"}
    hf_state = _convert_keys(state, rules, "the checkpoint", "Hugging Face")
    conv_dim, dim = parse_conv_feature_layers(config["conv_feature_layers"])[-1][0], config["encoder_embed_dim"]
    if conv_dim == dim:  # HF always projects: the identity stands for fairseq's missing projection
        reference = next(iter(hf_state.values()))
        hf_state[hf_prefix + "feature_projection.projection.weight"] = torch.eye(dim, dtype=reference.dtype)
        hf_state[hf_prefix + "feature_projection.projection.bias"] = torch.zeros(dim, dtype=reference.dtype)
    return {key: value.contiguous() for key, value in hf_state.items()}, hf_class


# ---- vocabulary ----------------------------------------------------------------------------------------------------

HF_NAMES_OF_OUR_SPECIALS = {"<s>": "<pad>", "<pad>": "<s>"}  # our blank <s> is HF's pad (its CTC blank), index 0


def symbols_from_hf_vocab(vocab: dict, vocab_size: int, source: str) -> list[str] | None:
    """Our dictionary's symbols (index order, specials first) from an HF vocab.json, or None (with the reason
    printed) when its layout is not fairseq's: <pad> <s> </s> <unk> at 0-3."""
    by_index = sorted(vocab.items(), key=lambda item: item[1])
    if [index for _, index in by_index] != list(range(len(by_index))) or len(by_index) != vocab_size:
        print(f"{source}: vocab.json does not number the {vocab_size} outputs 0..{vocab_size - 1}; the checkpoint "
              "carries no dictionary (give inference --labels-path)", flush=True)
        return None
    symbols = [HF_NAMES_OF_OUR_SPECIALS.get(symbol, symbol) for symbol, _ in by_index]
    if tuple(symbols[:len(SPECIAL_SYMBOLS)]) != SPECIAL_SYMBOLS:
        print(f"{source}: vocab.json starts {[symbol for symbol, _ in by_index[:4]]}, not fairseq's <pad> <s> </s> "
              "<unk>; the checkpoint carries no dictionary (give inference --labels-path)", flush=True)
        return None
    return symbols


def hf_vocab_from_symbols(symbols: list[str]) -> dict:
    return {HF_NAMES_OF_OUR_SPECIALS.get(symbol, symbol): index for index, symbol in enumerate(symbols)}


# ---- files ---------------------------------------------------------------------------------------------------------


def read_hf_weights(directory: Path) -> dict:
    single, index, legacy = (directory / "model.safetensors", directory / "model.safetensors.index.json",
                             directory / "pytorch_model.bin")
    if single.is_file():
        return load_file(str(single))
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        state = {}
        for shard in shards:
            state.update(load_file(str(directory / shard)))
        return state
    if legacy.is_file():
        checkpoint = load_checkpoint(legacy, flag="--from-hf")
        return checkpoint.get("state_dict", checkpoint)
    raise UserFileNotFoundError(f"--from-hf {directory}: no model.safetensors (nor model.safetensors.index.json or "
                                "pytorch_model.bin)")


def from_hf(directory: str | Path) -> dict:
    """An HF model folder as a checkpoint of this project (project_checkpoint's dict)."""
    directory = Path(directory)
    source = f"--from-hf {directory}"
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise UserFileNotFoundError(f"{source}: no config.json (give a folder written by save_pretrained)")
    try:
        hf_config = json.loads(config_file.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"cannot read {config_file}: {error}") from error
    config, ctc = config_from_hf(hf_config, source)
    hf_state = read_hf_weights(directory)
    hf_class = hf_class_of(without_encoder_prefix(hf_state))
    state = state_from_hf(hf_state, config, source)
    symbols = None
    if hf_class == "Wav2Vec2ForCTC":
        if int(hf_config.get("pad_token_id", 0)) != 0:
            raise UserError(f"{source}: its CTC blank (pad_token_id) is index {hf_config['pad_token_id']}, ours is "
                            "index 0; a vocabulary laid out so cannot be carried over")
        vocab_size = int(state[CTC_HEAD + "weight"].shape[0])
        model = Wav2Vec2CTC(config, vocab_size, final_dropout=ctc["final_dropout"])
        model_config = {**config, "vocab_size": vocab_size, "final_dropout": ctc["final_dropout"],
                        "freeze_finetune_updates": 0}
        vocab_file = directory / "vocab.json"
        if vocab_file.is_file():
            symbols = symbols_from_hf_vocab(json.loads(vocab_file.read_text()), vocab_size, source)
        else:
            print(f"{source}: no vocab.json; the checkpoint carries no dictionary (give inference --labels-path)",
                  flush=True)
    else:
        model, model_config = Wav2Vec2Model(config), config
    # Weights HF's file does not have keep this model's initialisation: say which.
    fresh = {key: value for key, value in model.state_dict().items() if key not in state}
    if fresh:
        print(f"{source} has no {', '.join(sorted({key.split('.')[0] for key in fresh}))}: initialised afresh "
              "(fine-tuning does not use the pre-training heads)", flush=True)
    load_model_state(model, {**fresh, **state}, source)
    return project_checkpoint(model_config, model.state_dict(), symbols,
                              sampling_rate=_hf_sampling_rate(directory),
                              converted_from={"format": "huggingface", "class": hf_class, "path": str(directory),
                                              "initialised": sorted(fresh)})


def _hf_sampling_rate(directory: Path) -> int:
    preprocessor = directory / "preprocessor_config.json"
    if preprocessor.is_file():
        try:
            return int(json.loads(preprocessor.read_text()).get("sampling_rate", 16000))
        except (OSError, ValueError, TypeError):
            pass
    return 16000


def to_hf(path: str | Path, directory: str | Path, labels_path: str | None = None, flag: str = "--checkpoint") -> str:
    """Write a checkpoint (ours, NVIDIA's or fairseq's) as an HF model folder; returns the HF class written. A CTC
    model's vocabulary comes from `labels_path` (dict.ltr.txt), else from the dictionary the file carries."""
    found = read_any_checkpoint(path, flag)
    config, state = found["model_config"], found["state_dict"]
    symbols = Dictionary.load(labels_path).symbols_with_specials if labels_path else found["symbols"]
    architecture = {key: value for key, value in config.items() if key not in FINETUNING_KEYS}
    architecture = model_config_from(architecture)
    hf_state, hf_class = state_to_hf(state, architecture)
    vocab_size = int(state[CTC_HEAD + "weight"].shape[0]) if hf_class == "Wav2Vec2ForCTC" else None
    hf_config = config_to_hf(architecture, hf_class, vocab_size, float(config.get("final_dropout", 0.0)))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(hf_state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    _write_json(directory / "config.json", hf_config)
    if hf_class == "Wav2Vec2ForCTC":
        _write_json(directory / "preprocessor_config.json", {
            "feature_extractor_type": "Wav2Vec2FeatureExtractor", "feature_size": 1, "sampling_rate": 16000,
            "padding_value": 0.0, "padding_side": "right", "do_normalize": bool(architecture["normalize"]),
            # group-norm models must not be given an attention mask (HF's advice: pads leak into their GroupNorm)
            "return_attention_mask": architecture["extractor_mode"] == "layer_norm"})
        if symbols is not None:
            if len(symbols) != vocab_size:
                raise UserError(f"{describe_source(path, flag)}: its dictionary has {len(symbols)} symbols but its "
                                f"CTC head {vocab_size} outputs: give the dictionary it was trained with")
            _write_json(directory / "vocab.json", hf_vocab_from_symbols(symbols))
            specials = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
            _write_json(directory / "special_tokens_map.json", specials)
            _write_json(directory / "tokenizer_config.json", {
                "tokenizer_class": "Wav2Vec2CTCTokenizer", "word_delimiter_token": "|", "do_lower_case": False,
                **specials})
        else:
            print(f"{describe_source(path, flag)} carries no dictionary: no vocab.json written (HF's tokenizer "
                  "needs one: give --labels-path dict.ltr.txt)", flush=True)
    return hf_class


def reference_to_ours(path: str | Path, labels_path: str | None = None, flag: str = "--checkpoint") -> dict:
    """A fairseq or NVIDIA file (or one of ours) as a checkpoint of this project; a CTC model takes its dictionary
    from `labels_path` (dict.ltr.txt), else from what the file carries (NVIDIA's output_labels)."""
    found = read_any_checkpoint(path, flag)
    config, state = found["model_config"], found["state_dict"]
    architecture = model_config_from({key: value for key, value in config.items() if key not in FINETUNING_KEYS})
    if "vocab_size" in config:
        model = Wav2Vec2CTC(architecture, config["vocab_size"], final_dropout=config.get("final_dropout", 0.0))
        symbols = (Dictionary.load(labels_path).symbols_with_specials if labels_path
                   else found["symbols"])
        if symbols is not None and len(symbols) != config["vocab_size"]:
            raise UserError(f"the dictionary has {len(symbols)} symbols but {describe_source(path, flag)}'s CTC "
                            f"head has {config['vocab_size']} outputs: give the dictionary it was trained with")
    else:
        model, symbols = Wav2Vec2Model(architecture), None
    load_model_state(model, state, describe_source(path, flag))
    return project_checkpoint(config, model.state_dict(), symbols,
                              converted_from={"format": "reference", "path": str(path)})


def _write_json(path: Path, values: dict) -> None:
    path.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")


# ---- command line --------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m wav2vec2.convert", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-hf", metavar="DIR", help="a Hugging Face model folder (config.json, model.safetensors)")
    source.add_argument("--checkpoint", metavar="CKPT", help="a checkpoint of this project, NVIDIA's or fairseq's")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output", metavar="CKPT", help="write a checkpoint of this project")
    target.add_argument("--to-hf", metavar="DIR", help="write a Hugging Face model folder")
    parser.add_argument("--labels-path", metavar="DICT",
                        help="with --checkpoint: the dictionary (dict.ltr.txt) of a fine-tuned model, for a file "
                             "that does not carry it (fairseq's)")
    args = parser.parse_args(argv)
    if args.from_hf and args.to_hf:
        parser.error("--from-hf goes with --output (to go from HF to HF, there is nothing to convert)")
    if args.labels_path and not args.checkpoint:
        parser.error("--labels-path goes with --checkpoint (an HF folder's vocabulary is its vocab.json)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.to_hf:
        hf_class = to_hf(args.checkpoint, args.to_hf, args.labels_path)
        print(f"wrote {args.to_hf} ({hf_class})", flush=True)
        return
    checkpoint = from_hf(args.from_hf) if args.from_hf else reference_to_ours(args.checkpoint, args.labels_path)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(checkpoint, args.output)
    kind = "CTC" if "vocab_size" in checkpoint["model_config"] else "pre-training"
    print(f"wrote {args.output} (wav2vec 2.0 {kind} model)", flush=True)


if __name__ == "__main__":
    exit_on_user_error(main)
