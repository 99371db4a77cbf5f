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

torch.load(weights_only=True) refuses the Namespace and the DictConfig, and torch.load without it would run whatever
the pickle names. Here a restricted unpickler reads them instead: argparse.Namespace becomes a dict, omegaconf's
containers and nodes (and fairseq's config classes, which they reference) become stand-ins that only keep the state
the pickle hands them (omegaconf need not be installed), tensors are rebuilt by torch's own functions, and any other
class or function a file names is refused with a UserError naming the file and the class, before it is called.

The flattened configuration maps onto this project's model_config (wav2vec2/model.py, fairseq's names), and the
weights load into Wav2Vec2Model (pre-trained files) or Wav2Vec2CTC (fine-tuned files, vocabulary size from
w2v_encoder.proj).
"""
from __future__ import annotations

import ast
import builtins
import collections
import importlib
import pathlib
import pickle
import re
import types
from pathlib import Path

import torch

from common.audio import AudioParams
from common.checkpoint import FORMAT_VERSION, describe_source, load_model_state
from common.errors import UserError, UserFileNotFoundError
from wav2vec2.dictionary import Dictionary
from wav2vec2.model import BASE_CONFIG, Wav2Vec2CTC, Wav2Vec2Model, model_config_from

# ---- the restricted unpickler ------------------------------------------------------------------------------------


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle names a class or function that this loader does not read."""

    def __init__(self, qualified_name: str):
        super().__init__(f"refused global {qualified_name}")
        self.qualified_name = qualified_name


class _Namespace(dict):
    """argparse.Namespace as its pickle gives it: the attributes, as a dict."""

    def __setstate__(self, state):
        self.update(state)


class _Foreign:
    """An object of a class that is never imported (omegaconf's containers, nodes and metadata; fairseq's config
    dataclasses): it keeps what its pickle gives it, and no code of that class runs."""
    qualified_name = "?"

    def __new__(cls, *args):
        # An enum member pickles as EnumClass(value): the value is what a configuration means.
        if len(args) == 1 and isinstance(args[0], (str, int, float, bool)):
            return args[0]
        return object.__new__(cls)

    def __init__(self, *args):
        self.args = args
        self.state = None

    def __setstate__(self, state):
        self.state = state


class _TypeReference:
    """A type named in omegaconf's metadata (typing.Any, Optional[int], a dataclass): read as its name."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


_FOREIGN_CLASSES: dict[str, type] = {}


def _foreign_class(qualified_name: str) -> type:
    if qualified_name not in _FOREIGN_CLASSES:
        _FOREIGN_CLASSES[qualified_name] = type(qualified_name.rsplit(".", 1)[-1], (_Foreign,),
                                                {"qualified_name": qualified_name})
    return _FOREIGN_CLASSES[qualified_name]


def _subscripted_type(container, key):
    """operator.getitem as pickles of typing.Tuple[float, float] use it; on type references only."""
    if not isinstance(container, _TypeReference):
        raise RefusedGlobal("_operator.getitem (on anything but a type)")
    return _TypeReference(f"{container.name}[{key!r}]")


def _type_of(*args):
    """builtins.type as the pickle of type(None) uses it, and nothing else."""
    if args != (None,):
        raise RefusedGlobal("builtins.type (other than type(None))")
    return type(None)


def _reconstructor(cls, base, state):
    """copyreg._reconstructor (pickle protocols 0 and 1) for the stand-ins only."""
    if base is not object or not isinstance(cls, type) or not issubclass(cls, (_Foreign, _Namespace)):
        raise RefusedGlobal(f"copyreg._reconstructor of {getattr(cls, '__name__', cls)}")
    return cls.__new__(cls)


def _path_as_text(*parts):
    """pathlib's paths (a data folder in the args) as text: built from their parts, never looked up on disk."""
    if not all(isinstance(part, str) for part in parts):
        raise RefusedGlobal("pathlib path of anything but strings")
    return str(pathlib.PurePosixPath(*parts))


def _plain_dict_from_factory(*_):
    """collections.defaultdict (omegaconf keeps a resolver cache in one): a plain dict, its factory not called."""
    return {}


_TORCH_REBUILD_FUNCTIONS = {
    "torch._utils": {"_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
                     "_rebuild_parameter_with_state"},
    "torch._tensor": {"_rebuild_from_type_v2"},
}
_PLAIN_BUILTINS = {"dict", "list", "tuple", "set", "frozenset", "str", "bytes", "bytearray", "int", "float", "bool",
                   "complex", "slice", "object", "NoneType"}
_NUMPY_NAMES = {"numpy.core.multiarray": {"scalar", "_reconstruct"}, "numpy._core.multiarray": {"scalar", "_reconstruct"},
                "numpy": {"dtype", "ndarray"}}
# Modules whose classes are read as stand-ins (_Foreign): configuration objects, never imported.
_STAND_IN_MODULES = ("omegaconf", "fairseq")


def _allowed_global(module: str, name: str):
    """What find_class returns for (module, name), or RefusedGlobal."""
    module, name = _python3_name(module, name)
    qualified = f"{module}.{name}"
    if (module, name) == ("argparse", "Namespace"):
        return _Namespace
    if module.split(".")[0] in _STAND_IN_MODULES:
        return _foreign_class(qualified)
    if module == "typing":
        return _TypeReference(qualified)
    if (module, name) in {("_operator", "getitem"), ("operator", "getitem")}:
        return _subscripted_type
    if module == "builtins":
        if name == "type":
            return _type_of
        if name in _PLAIN_BUILTINS:
            return type(None) if name == "NoneType" else getattr(builtins, name)
    if (module, name) == ("collections", "OrderedDict"):
        return collections.OrderedDict
    if (module, name) == ("collections", "defaultdict"):
        return _plain_dict_from_factory
    if module == "pathlib" and name in {"Path", "PosixPath", "PurePath", "PurePosixPath"}:
        return _path_as_text
    if (module, name) == ("copyreg", "_reconstructor"):
        return _reconstructor
    if (module, name) == ("_codecs", "encode"):  # how protocol 2 writes bytes
        return importlib.import_module("_codecs").encode
    if name in _TORCH_REBUILD_FUNCTIONS.get(module, ()):
        return getattr(importlib.import_module(module), name)
    if module == "torch" and (name in {"Size", "Tensor", "device"} or isinstance(getattr(torch, name, None),
                                                                                    torch.dtype)):
        return getattr(torch, name)
    if (module, name) == ("torch.nn.parameter", "Parameter"):
        return torch.nn.Parameter
    if name in _NUMPY_NAMES.get(module, ()):  # numpy floats in fairseq's extra_state (best loss...)
        numpy_module = "numpy._core.multiarray" if module.endswith("multiarray") else "numpy"
        try:
            return getattr(importlib.import_module(numpy_module), name)
        except ImportError:  # numpy 1.x
            return getattr(importlib.import_module(module), name)
    raise RefusedGlobal(qualified)


def _python3_name(module: str, name: str) -> tuple[str, str]:
    """Protocol 2 pickles name Python 2's modules (__builtin__.unicode): what the default find_class maps."""
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        return _allowed_global(module, name)


def _restricted_load(file, **kwargs):
    return _RestrictedUnpickler(file, **kwargs).load()


# What torch.load(pickle_module=...) uses: Unpickler for the data, load for the legacy format's headers.
RESTRICTED_PICKLE = types.SimpleNamespace(__name__="wav2vec2.checkpoints.restricted_pickle",
                                          Unpickler=_RestrictedUnpickler, load=_restricted_load)


def read_restricted(path: str | Path, flag: str | None = None):
    """torch.load of `path` through the restricted unpickler: tensors, plain containers, and configuration objects
    as plain dicts (see to_plain). A file naming anything else is refused with a UserError naming the class."""
    path = Path(path)
    source = describe_source(path, flag)
    if not path.exists():
        raise UserFileNotFoundError(f"checkpoint not found: {source}")
    if path.is_dir():
        raise UserError(f"{source} is a folder; give a checkpoint file")
    try:
        content = torch.load(path, map_location="cpu", pickle_module=RESTRICTED_PICKLE, weights_only=False)
    except RefusedGlobal as error:
        raise UserError(
            f"cannot read {source}: its pickle names {error.qualified_name}, and this loader reads only tensors, "
            "plain containers and the configuration objects of fairseq and NVIDIA (argparse.Namespace, omegaconf); "
            "unpickling other objects can run code, so the file is refused without running it") from None
    except PermissionError as error:
        raise UserError(f"cannot read checkpoint {source}: {error.strerror}") from error
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError, IndexError, TypeError,
            AttributeError, UnicodeDecodeError, OSError) as error:  # what a damaged pickle or zip can raise
        reason = "the file is empty" if path.stat().st_size == 0 else (
            f"the file is damaged, truncated, or not a PyTorch checkpoint ({type(error).__name__}: "
            f"{str(error).splitlines()[0][:200] if str(error) else ''})")
        raise UserError(f"cannot read checkpoint {source}: {reason}") from error
    try:
        return to_plain(content)
    except ValueError as error:
        raise UserError(f"cannot read checkpoint {source}: {error}") from None


def to_plain(value, _done: dict | None = None, _open: set | None = None):
    """Stand-ins to plain Python: a Namespace to a dict, an omegaconf DictConfig/ListConfig to a dict/list of its
    values, a value node to its value, another stand-in (a config dataclass) to a dict of its fields. A value the
    pickle shares is converted once (a crafted file cannot make it explode); a cycle is refused."""
    if isinstance(value, (torch.Tensor, str, bytes, int, float, bool, type(None))):
        return value
    done, open_ = ({}, set()) if _done is None else (_done, _open)
    key = id(value)
    if key in done:
        return done[key]
    if key in open_:
        raise ValueError("its data refers to itself (a cycle), which no checkpoint does")
    open_.add(key)

    def plain(item):
        return to_plain(item, done, open_)

    if isinstance(value, dict):  # also _Namespace and OrderedDict (a state dict keeps its type)
        converted = {name: plain(item) for name, item in value.items()}
        result = collections.OrderedDict(converted) if isinstance(value, collections.OrderedDict) else converted
    elif isinstance(value, (list, tuple)):
        result = type(value)(plain(item) for item in value)
    elif isinstance(value, _TypeReference):
        result = value.name
    elif isinstance(value, _Foreign):
        state = value.state
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):  # (dict state, slots)
            state = {**(state[0] or {}), **state[1]}
        if isinstance(state, dict) and "_content" in state:  # omegaconf container (None, "???" or "${...}" kept)
            result = plain(state["_content"])
        elif isinstance(state, dict) and "_val" in state:  # omegaconf value node
            result = plain(state["_val"])
        elif isinstance(state, dict):  # a dataclass: its fields (omegaconf's _metadata and _parent left out)
            result = {name: plain(item) for name, item in state.items() if not name.startswith("_")}
        else:
            result = plain(value.args[0]) if len(value.args) == 1 else None
    else:
        result = value
    open_.discard(key)
    done[key] = result
    return result


# ---- the configuration -------------------------------------------------------------------------------------------

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


def _pretraining_args(flat: dict) -> dict | None:
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
    return _reference_checkpoint_from(read_restricted(path, flag), describe_source(path, flag))


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
    pretraining = _pretraining_args(args) if finetuned else None
    return {"model": state_dict, "args": args, "pretraining_args": pretraining if pretraining is not None else args,
            "format": "nvidia" if "mode" in args else "fairseq", "finetuned": finetuned,
            "output_labels": content.get("output_labels")}


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
FINETUNING_KEYS = ("vocab_size", "final_dropout", "freeze_finetune_updates")  # a CTC model's config has these too


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
    content = read_restricted(path, flag)
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
