"""The settings in fairseq's and NVIDIA's wav2vec 2.0 files, mapped onto this project's model_config.

A file's settings come as `args` (a flat argparse.Namespace or dict: NVIDIA's, fairseq's to 2020) or `cfg` (fairseq's
omegaconf sections: common, task, model, ...), both read by common/safe_unpickle.py into plain dicts. They are
flattened into one dict (flatten_reference_args), and their keys, which are fairseq's and so this project's
(wav2vec2/model.py), give the model_config, with fairseq's defaults for what a file leaves out. A fine-tuned fairseq
file keeps the pre-training settings nested as `w2v_args`, which the fine-tuning ones override.
"""
from __future__ import annotations

import ast
import re

from common.errors import UserError
from wav2vec2.model import BASE_CONFIG, model_config_from

_INTERPOLATION = re.compile(r"^\$\{([\w.]+)\}$")


def _resolve_interpolations(tree: dict) -> dict:
    """omegaconf's "${task.normalize}" references (saved unresolved by some fairseq versions) -> their values, looked up
    from the top of `tree`; one that cannot be resolved becomes None."""
    def look_up(path: str, depth: int):
        node = tree
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return resolve(node, depth + 1)

    def resolve(value, depth=0):
        if depth > 20:
            return None
        if isinstance(value, str):
            match = _INTERPOLATION.match(value)
            return look_up(match.group(1), depth) if match else value
        if isinstance(value, dict):
            return {key: resolve(item, depth) for key, item in value.items()}
        if isinstance(value, list):
            return [resolve(item, depth) for item in value]
        return value

    return resolve(tree)


def flatten_reference_args(args: dict | None, cfg: dict | None) -> dict:
    """One flat dict of settings from a file's `args` (flat already) or `cfg` (sections: common, task, model, ...;
    merged with `task` and then `model` last, so the model's settings win a clash)."""
    if isinstance(cfg, dict) and cfg:
        cfg = _resolve_interpolations(cfg)
        sections = [key for key, value in cfg.items() if isinstance(value, dict)]
        order = [key for key in sections if key not in ("task", "model")] + [key for key in ("task", "model")
                                                                              if key in sections]
        flat = {key: value for key, value in cfg.items() if not isinstance(value, dict)}
        for key in order:
            flat.update(cfg[key])
        return flat
    if isinstance(args, dict):
        return _resolve_interpolations(dict(args))
    return {}


def pretraining_args_of(flat: dict) -> dict | None:
    """The pre-training settings a fine-tuned fairseq file keeps in w2v_args (a Namespace or a cfg), flattened."""
    nested = flat.get("w2v_args")
    if not isinstance(nested, dict) or not nested:
        return None
    if any(isinstance(nested.get(section), dict) for section in ("model", "task")):
        return flatten_reference_args(None, nested)
    return flatten_reference_args(nested, None)


# fairseq's Wav2Vec2Config defaults, for the keys of our model_config that a file leaves out.
FAIRSEQ_DEFAULTS = {
    "extractor_mode": "default", "conv_feature_layers": "[(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2",
    "conv_bias": False, "encoder_layers": 12, "encoder_embed_dim": 768, "encoder_ffn_embed_dim": 3072,
    "encoder_attention_heads": 12, "activation_fn": "gelu", "layer_norm_first": False, "dropout": 0.1,
    "attention_dropout": 0.1, "activation_dropout": 0.0, "dropout_input": 0.0, "dropout_features": 0.0,
    "encoder_layerdrop": 0.0, "feature_grad_mult": 1.0, "final_dim": 0, "logit_temp": 0.1, "conv_pos": 128,
    "conv_pos_groups": 16, "quantize_targets": False, "latent_vars": 320, "latent_groups": 2, "latent_dim": 0,
    "latent_temp": [2.0, 0.5, 0.999995], "num_negatives": 100, "mask_prob": 0.65, "mask_length": 10,
    "mask_channel_prob": 0.0, "mask_channel_length": 10, "hourglass_transformer": None,
    "hourglass_resample": "naive", "normalize": False,
}
# Fine-tuning settings of fairseq's Wav2Vec2AsrConfig that override the pre-trained model's (Wav2VecEncoder's
# arg_overrides), under their fine-tuning names.
FINETUNING_OVERRIDES = {"dropout": "dropout", "activation_dropout": "activation_dropout",
                        "attention_dropout": "attention_dropout", "dropout_input": "dropout_input",
                        "mask_prob": "mask_prob", "mask_length": "mask_length",
                        "mask_channel_prob": "mask_channel_prob", "mask_channel_length": "mask_channel_length",
                        "layerdrop": "encoder_layerdrop", "feature_grad_mult": "feature_grad_mult",
                        "normalize": "normalize"}
# Settings that change the network beyond what this project's model builds: a file with them is refused.
UNSUPPORTED = {"layer_type": ("transformer",), "pos_conv_depth": (1,), "quantize_input": (False,),
               "target_glu": (False,), "quantizer_depth": (1,), "rotary_embeddings": (False,),
               "use_spectrogram_features": (False,)}


def _as_list_of_floats(value, key: str, source: str):
    if isinstance(value, str):  # old fairseq: --latent-temp "(2,0.5,0.999995)"
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError) as error:
            raise UserError(f"{source}: cannot read {key}={value!r}") from error
    return [float(item) for item in value]


def model_config_from_reference(pretraining: dict, finetuning: dict | None = None, source: str = "checkpoint"
                                ) -> dict:
    """This project's model_config from a file's flattened pre-training settings (and, for a fine-tuned fairseq
    file, the fine-tuning settings that override them). Only the keys the model has are taken; keys the file lacks
    take fairseq's defaults."""
    for key, allowed in UNSUPPORTED.items():
        if key in pretraining and pretraining[key] not in allowed:
            raise UserError(f"{source} has {key}={pretraining[key]!r}, which this project's wav2vec 2.0 does not "
                            f"build (it builds {key}={allowed[0]!r})")
    values = {key: pretraining.get(key, default) for key, default in FAIRSEQ_DEFAULTS.items()
              if key in BASE_CONFIG}
    for theirs, ours in FINETUNING_OVERRIDES.items():
        if finetuning and finetuning.get(theirs) is not None and ours in values:
            values[ours] = finetuning[theirs]
    values["latent_temp"] = _as_list_of_floats(values["latent_temp"], "latent_temp", source)
    if not values.get("final_dim"):  # fairseq: 0 means the encoder's width
        values["final_dim"] = int(values["encoder_embed_dim"])
    if values.get("hourglass_transformer") in ("None", ""):
        values["hourglass_transformer"] = None
    try:
        return model_config_from(values)
    except ValueError as error:
        raise UserError(f"{source}: its configuration does not build a wav2vec 2.0 model: {error}") from error


def reference_model_config(checkpoint: dict, source: str = "checkpoint",
                           architecture_from: dict | None = None) -> dict:
    """model_config of a file read by load_reference_checkpoint. A fine-tuned fairseq file without w2v_args (the
    pre-training settings) needs `architecture_from`: the flat args of its pre-trained file."""
    args = checkpoint["args"]
    if architecture_from is not None:
        pretraining = architecture_from
    elif checkpoint["finetuned"] and checkpoint["format"] == "fairseq" and checkpoint["pretraining_args"] is args:
        missing = [key for key in ("encoder_layers", "encoder_embed_dim", "conv_feature_layers") if key not in args]
        if missing:
            raise UserError(f"{source} is a fine-tuned fairseq file without w2v_args (the pre-training settings), "
                            f"so its architecture ({', '.join(missing)}) is unknown; give the pre-trained file it "
                            "started from as well")
        pretraining = args
    else:
        pretraining = checkpoint["pretraining_args"]
    finetuning = args if checkpoint["finetuned"] and checkpoint["format"] == "fairseq" else None
    return model_config_from_reference(pretraining, finetuning, source)
