"""fairseq's and NVIDIA's wav2vec 2.0 files, read without running anything they hold, into this project's models.

The files (torch.save pickles, zip or the older legacy format):
  fairseq  {"model": state dict, "args": argparse.Namespace (to 2020) or None,
            "cfg": omegaconf DictConfig or plain dict of sections (common, task, model, ...), "optimizer_history",
            "extra_state", "last_optimizer_state"}; fine-tuned files keep the pre-training configuration nested in
            the fine-tuning one as `w2v_args` (a Namespace or a cfg of its own), their weights under
            `w2v_encoder.w2v_model.*` with the CTC head `w2v_encoder.proj`.
  NVIDIA   {"args": dict of every flag, with "mode" (pretrain or finetune), "model", "optimizer", "train_state",
            "output_labels" (fine-tuning: the dictionary's text)}; fairseq's key names, except that hourglass
            models add encoder.hourglass_layers / post_layers, and a DDP-wrapped model saves `module.` prefixes.

Every file is first read with torch.load(weights_only=True), as every checkpoint of this project is (ours, and
NVIDIA's, whose args are a plain dict); only a file that this refuses for the objects it names (fairseq's Namespace
and DictConfig) goes to common/safe_unpickle.py's restricted unpickler, which runs nothing a file names (see
read_checkpoint_of_any_origin there, and what TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 changes). Their settings map onto this
project's model_config in wav2vec2/reference_config.py, and the weights load into Wav2Vec2Model (pre-trained files)
or Wav2Vec2CTC (fine-tuned files, vocabulary size from w2v_encoder.proj).
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import torch

from common.audio import AudioParams
from common.checkpoint import FORMAT_VERSION, describe_source, load_model_state
from common.errors import UserError
from common.recipe import WeightsForExport
from common.safe_unpickle import read_checkpoint_of_any_origin
from wav2vec2.arg_parser import CTCHeadConfig
from wav2vec2.dictionary import Dictionary
from wav2vec2.model import Wav2Vec2CTC, Wav2Vec2Model
from wav2vec2.reference_config import flatten_reference_args, pretraining_args_of, reference_model_config

# ---- the weights -------------------------------------------------------------------------------------------------

_QKV = re.compile(r"^(.*\.self_attn)\.qkv\.(weight|bias)$")


def reference_state_to_ours(state_dict: dict) -> dict:
    """fairseq/NVIDIA weights under this project's names (which are fairseq's): `module.` prefixes stripped, NVIDIA's
    fused attention projection (self_attn.qkv, order q, k, v) split, torch's newer weight-norm names and a folded
    positional-convolution weight turned back into weight_g / weight_v."""
    out = {}
    for key, value in state_dict.items():
        while key.startswith("module."):
            key = key[len("module."):]
        fused = _QKV.match(key)
        if fused:
            for name, part in zip("qkv", value.chunk(3, dim=0)):
                out[f"{fused.group(1)}.{name}_proj.{fused.group(2)}"] = part.clone()
            continue
        key = key.replace("pos_conv.0.parametrizations.weight.original0", "pos_conv.0.weight_g")
        key = key.replace("pos_conv.0.parametrizations.weight.original1", "pos_conv.0.weight_v")
        if key.endswith("pos_conv.0.weight"):  # weight norm removed (NVIDIA's inference): w = ||w|| * w / ||w||
            prefix = key[: -len("weight")]
            out[prefix + "weight_g"] = torch.linalg.vector_norm(value, dim=(0, 1), keepdim=True)
            out[prefix + "weight_v"] = value
            continue
        out[key] = value
    return out


FINETUNED_PREFIX = "w2v_encoder.w2v_model."
CTC_HEAD = "w2v_encoder.proj."
PRETRAINING_HEADS = ("quantizer.", "project_q.", "final_proj.", "target_glu.")


def is_finetuned_state(state_dict: dict) -> bool:
    return any(key.startswith("w2v_encoder.") for key in state_dict)


def encoder_state(state_dict: dict) -> dict:
    """The Wav2Vec2Model part of a pre-trained or fine-tuned state dict (what Wav2Vec2CTC.load_pretrained takes):
    a fine-tuned file's w2v_encoder.w2v_model.* without the prefix; the pre-training heads, where present, kept."""
    if is_finetuned_state(state_dict):
        return {key[len(FINETUNED_PREFIX):]: value for key, value in state_dict.items()
                if key.startswith(FINETUNED_PREFIX)}
    return dict(state_dict)


# ---- whole files -------------------------------------------------------------------------------------------------


def load_reference_checkpoint(path: str | Path, flag: str | None = None) -> dict:
    """Read a fairseq or NVIDIA wav2vec 2.0 file safely. Returns
        model            the state dict under this project's names (reference_state_to_ours)
        args             the flat settings of the file (its cfg sections merged, or its args)
        pretraining_args the settings that describe the architecture: a fine-tuned fairseq file's w2v_args
                         flattened, else `args`
        format           "fairseq" or "nvidia" (NVIDIA's args carry "mode")
        finetuned        whether the weights are a CTC model's (w2v_encoder.*)
        output_labels    NVIDIA's fine-tuning dictionary text, or None
    """
    return _reference_checkpoint_from(read_checkpoint_of_any_origin(path, flag), describe_source(path, flag))


def _reference_checkpoint_from(content, source: str) -> dict:
    if not isinstance(content, dict) or not isinstance(content.get("model"), dict):
        keys = sorted(content)[:12] if isinstance(content, dict) else type(content).__name__
        raise UserError(f"{source} is not a fairseq or NVIDIA wav2vec 2.0 checkpoint (no 'model' state dict; "
                        f"found {keys})")
    args = flatten_reference_args(content.get("args"), content.get("cfg"))
    if not args:
        raise UserError(f"{source} carries neither 'args' nor 'cfg', so the model it holds cannot be built")
    state_dict = reference_state_to_ours(content["model"])
    finetuned = is_finetuned_state(state_dict)
    pretraining = pretraining_args_of(args) if finetuned else None
    return {"model": state_dict, "args": args, "pretraining_args": pretraining if pretraining is not None else args,
            "format": "nvidia" if "mode" in args else "fairseq", "finetuned": finetuned,
            "output_labels": content.get("output_labels")}


def finetuning_settings(checkpoint: dict) -> dict:
    """What a fine-tuned file says about its CTC head: vocab_size (rows of w2v_encoder.proj), final_dropout,
    freeze_finetune_updates; empty for a pre-trained file."""
    if not checkpoint["finetuned"]:
        return {}
    args, proj = checkpoint["args"], checkpoint["model"].get(CTC_HEAD + "weight")
    settings = {"final_dropout": float(args.get("final_dropout", 0.0) or 0.0),
                "freeze_finetune_updates": int(args.get("freeze_finetune_updates", 0) or 0)}
    if proj is not None:
        settings["vocab_size"] = int(proj.shape[0])
    return settings


def load_reference_model(path: str | Path, flag: str | None = None, architecture_from: str | Path | None = None
                         ) -> tuple[torch.nn.Module, dict]:
    """A fairseq or NVIDIA file as this project's model: Wav2Vec2Model for a pre-trained file, Wav2Vec2CTC for a
    fine-tuned one, weights loaded strictly, in eval mode. Returns (model, info) with info: model_config, format,
    finetuned, output_labels, and for fine-tuned files vocab_size, final_dropout, freeze_finetune_updates.
    `architecture_from`: the pre-trained file a fine-tuned fairseq file without w2v_args started from."""
    source = describe_source(path, flag)
    checkpoint = load_reference_checkpoint(path, flag)
    pretraining = None
    if architecture_from is not None:
        pretraining = load_reference_checkpoint(architecture_from)["pretraining_args"]
    config = reference_model_config(checkpoint, source, pretraining)
    settings = finetuning_settings(checkpoint)
    if checkpoint["finetuned"]:
        if "vocab_size" not in settings:
            raise UserError(f"{source} is fine-tuned (w2v_encoder.* weights) but has no {CTC_HEAD}weight")
        model = Wav2Vec2CTC(config, settings["vocab_size"], final_dropout=settings["final_dropout"])
    else:
        model = Wav2Vec2Model(config)
    load_model_state(model, checkpoint["model"], source)
    info = {"model_config": config, "format": checkpoint["format"], "finetuned": checkpoint["finetuned"],
            "output_labels": checkpoint["output_labels"], **settings}
    return model.eval(), info


# ---- any wav2vec 2.0 file: ours, NVIDIA's, fairseq's ---------------------------------------------------------------

MODEL_NAME = "wav2vec2"
FINETUNING_KEYS = tuple(field.name for field in dataclasses.fields(CTCHeadConfig))  # a CTC model's config has these too


def load_any_checkpoint(path: str | Path, flag: str | None = None) -> tuple[dict, dict]:
    """(model config, state dict) of a wav2vec 2.0 file of this project, NVIDIA's or fairseq's, pre-trained or
    fine-tuned. The state dict is under this project's names (w2v_encoder.* for a CTC model); a CTC model's config
    also holds FINETUNING_KEYS (vocab_size, final_dropout, freeze_finetune_updates), as this project's training
    checkpoints do."""
    found = read_any_checkpoint(path, flag)
    return found["model_config"], found["state_dict"]


def read_any_checkpoint(path: str | Path, flag: str | None = None) -> dict:
    """load_any_checkpoint's model_config and state_dict, with `symbols`: the CTC dictionary the file carries (index
    order, special symbols first: ours under `text`, NVIDIA's `output_labels`), or None; and `format`: "ours",
    "nvidia" or "fairseq"."""
    source = describe_source(path, flag)
    content = read_checkpoint_of_any_origin(path, flag)  # ours with weights_only=True
    if isinstance(content, dict) and "model_name" in content:
        if content["model_name"] != MODEL_NAME:
            raise UserError(f"{source} is a {content['model_name']} checkpoint, expected {MODEL_NAME}")
        if not isinstance(content.get("model_config"), dict) or not isinstance(content.get("state_dict"), dict):
            raise UserError(f"{source} has no model_config or state_dict: not a complete checkpoint of this project")
        text = content.get("text")
        symbols = list(text["symbols"]) if isinstance(text, dict) and text.get("symbols") else None
        return {"model_config": dict(content["model_config"]), "state_dict": reference_state_to_ours(
            content["state_dict"]), "symbols": symbols, "format": "ours"}
    if not isinstance(content, dict) or "model" not in content:
        raise UserError(f"{source} is neither a wav2vec 2.0 checkpoint of this project (no 'model_name') nor "
                        "NVIDIA's or fairseq's (no 'model')")
    checkpoint = _reference_checkpoint_from(content, source)
    config = reference_model_config(checkpoint, source)
    settings = finetuning_settings(checkpoint)
    if checkpoint["finetuned"]:
        config.update({key: settings[key] for key in FINETUNING_KEYS if key in settings})
    symbols = None
    if isinstance(checkpoint["output_labels"], str) and checkpoint["output_labels"].strip():
        symbols = dictionary_symbols_from_text(checkpoint["output_labels"], f"{source} (output_labels)")
    return {"model_config": config, "state_dict": checkpoint["model"], "symbols": symbols,
            "format": checkpoint["format"]}


def read_for_export(path: Path, checkpoint: dict | None, flag: str | None, reference_config: str | None
                    ) -> WeightsForExport:
    """Any wav2vec 2.0 file (ours, NVIDIA's or fairseq's, read by read_any_checkpoint) as an exported folder holds it;
    `checkpoint`: the file as weights_only read it, None where it refused (fairseq's and NVIDIA's pickles)."""
    found = read_any_checkpoint(path, flag)
    text = {"symbols": found["symbols"]} if found["symbols"] is not None else None
    audio = (checkpoint or {}).get("audio_params") or {"sampling_rate": 16000}
    return WeightsForExport(found["model_config"], found["state_dict"], text, audio)


def dictionary_symbols_from_text(text: str, source: str) -> list[str]:
    """A dict.ltr.txt's text (what NVIDIA's fine-tuning files carry as output_labels) -> the symbols in index order,
    special ones first."""
    symbols = [line.split()[0] for line in text.splitlines() if line.strip()]
    try:
        return Dictionary(symbols, source=source).symbols_with_specials
    except ValueError as error:
        raise UserError(str(error)) from error


def project_checkpoint(model_config: dict, state_dict: dict, symbols: list[str] | None = None,
                       sampling_rate: int = 16000, converted_from: dict | None = None) -> dict:
    """A file of this project's checkpoint format (common/checkpoint.py) that inference.py (load_trained_model)
    and fine-tuning (--w2v-path) read: model_name, model_config (with FINETUNING_KEYS for a CTC model),
    audio_params, text (the dictionary's symbols, index order, for a CTC model) and state_dict; `converted_from`
    says where it came from. It holds no optimizer state: training starts from it, it does not resume it."""
    return {"format_version": FORMAT_VERSION, "model_name": MODEL_NAME, "model_config": model_config,
            "audio_params": AudioParams(sampling_rate=sampling_rate).to_dict(),
            "text": {"symbols": list(symbols)} if symbols is not None else None,
            "state_dict": dict(state_dict), "converted_from": converted_from or {}}
