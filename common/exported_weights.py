"""Trained weights as data: a folder with model.safetensors (the weights, nothing executable) and metadata.json (what
builds the model and feeds it), written by `python -m scripts.export_weights CKPT OUT` and read by load_exported.

metadata.json holds
    format, format_version   "speech-weights", 1
    model_name               the family (Tacotron2, WaveGlow, WaveNet, HiFiGAN, wav2vec2)
    model_config             the constructor settings recipe.build_model takes
    audio_params             sampling rate, STFT and mel settings (common/audio.py), or null where the file had none
    text                     the text front-end's to_dict (TTS symbols and cleaners) or wav2vec 2.0's dictionary
                             ({"symbols": [...]}, special symbols first), or null
    training                 epoch (epochs completed), iteration (optimizer steps), dataset: what the file records
    source                   the checkpoint's file name
    ...                      the family's own keys (its recipe's read_for_export), e.g. HiFi-GAN from NVIDIA's or
                             jik876's generator file: generator_only true (the weights are the generator's alone,
                             "generator." keys, no discriminators) and mel_convention (which mels it was trained on)
The folder layout is the Hugging Face one (one folder per model, a README.md model card can sit beside them).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from common.checkpoint import (describe_source, load_checkpoint, load_model_state, model_from_checkpoint,
                               replaced_whole, unfold_weight_norm_where_folded)
from common.errors import UserError, UserFileNotFoundError
from common.recipe import WeightsForExport
from common.registry import FAMILIES, FAMILY_OF_UNNAMED_FILES, get_recipe

FORMAT = "speech-weights"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
METADATA_FILE = "metadata.json"


# ---- reading a training checkpoint ---------------------------------------------------------------------------------


def _family_of(checkpoint: dict, model_name: str | None, source: str) -> str:
    """The family the checkpoint names, else -m's, else FAMILY_OF_UNNAMED_FILES for a file holding {"model": ...}."""
    found = checkpoint.get("model_name")
    if found is not None and model_name is not None and found != model_name:
        raise UserError(f"checkpoint {source} is a {found} checkpoint, not {model_name} (-m)")
    name = found or model_name or (FAMILY_OF_UNNAMED_FILES if "model" in checkpoint else None)
    if name is None:
        raise UserError(f"checkpoint {source} does not say which model it holds (no model_name); "
                        f"give -m with one of {', '.join(FAMILIES)}")
    if name not in FAMILIES:
        raise UserError(f"checkpoint {source}: unknown model {name!r}; the families are {', '.join(FAMILIES)}")
    return name


def _recorded_dataset(args: object) -> str | None:
    """Where the training data came from, as the checkpoint's saved command line says (for the model card)."""
    if not isinstance(args, dict):
        return None
    for key in ("dataset_path", "data", "training_files"):
        if isinstance(args.get(key), str) and args[key]:
            return args[key]
    return None


def read_checkpoint(path: str | Path, model_name: str | None = None, flag: str | None = None,
                    reference_config: str | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """(metadata, state dict) of a checkpoint of any family: ours, or another implementation's that the family reads
    (its recipe's read_for_export; NVIDIA's bare weights take `model_name` for the family when the file does not
    say). The state dict is what the family's model loads strictly. `reference_config`: the reference's own config
    file where the family's reader takes one (HiFi-GAN: jik876's JSON)."""
    source = describe_source(path, flag)
    try:
        checkpoint = load_checkpoint(path, flag=flag)
    except UserFileNotFoundError:
        raise
    except UserError as unreadable:
        # A file that weights_only refuses (a Namespace or a DictConfig inside) may still be one its family reads
        # without running anything it names. Any other file: the first error.
        family = model_name or FAMILY_OF_UNNAMED_FILES
        reader = get_recipe(family).read_for_export if family in FAMILIES else None
        try:
            parts = reader(Path(path), None, flag, reference_config) if reader is not None else None
        except UserError:
            parts = None
        if parts is None:
            raise unreadable from None
        return _metadata(path, family, {}, parts)
    recipe = get_recipe(_family_of(checkpoint, model_name, source))
    if recipe.read_for_export is not None:
        parts = recipe.read_for_export(Path(path), checkpoint, flag, reference_config)
        if parts is not None:
            return _metadata(path, recipe.name, checkpoint, parts)
    # A file without a model config (NVIDIA's bare weights) is the family's default architecture, as the Python API
    # and torch.hub read it; the weights then load strictly or fail naming the keys that do not fit.
    model, config = model_from_checkpoint(recipe, checkpoint, source, published_config={})
    return _metadata(path, recipe.name, checkpoint, WeightsForExport(
        config, model.state_dict(), checkpoint.get("text"), checkpoint.get("audio_params")))


def _metadata(path: str | Path, name: str, checkpoint: dict, parts: WeightsForExport
              ) -> tuple[dict, dict[str, torch.Tensor]]:
    training = {"epoch": checkpoint.get("epoch"), "iteration": checkpoint.get("iteration"),
                "dataset": _recorded_dataset(checkpoint.get("args"))}
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION, "model_name": name,
                "model_config": parts.model_config, "audio_params": parts.audio_params, "text": parts.text,
                "training": {**training, **parts.training}, "source": Path(path).name, **parts.extra_metadata}
    return metadata, parts.state_dict


# ---- writing and reading the exported folder -----------------------------------------------------------------------


def export_weights(checkpoint_path: str | Path, output: str | Path, model_name: str | None = None,
                   reference_config: str | None = None) -> Path:
    """Write OUTPUT/model.safetensors and OUTPUT/metadata.json from a checkpoint; returns the folder."""
    from safetensors.torch import save

    metadata, state_dict = read_checkpoint(checkpoint_path, model_name, reference_config=reference_config)
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise UserError(f"{output} is a file; give a folder to write {WEIGHTS_FILE} and {METADATA_FILE} in")
    output.mkdir(parents=True, exist_ok=True)
    # safetensors stores each tensor on its own: tied or viewed weights are written as separate contiguous copies.
    tensors = {key: value.detach().clone().contiguous() for key, value in state_dict.items()}
    # Each file replaces its old version whole (a crash leaves no half file), with the usual permissions (safetensors'
    # own save_file makes files only their owner can read).
    with replaced_whole(output / WEIGHTS_FILE) as temporary:
        temporary.write_bytes(save(tensors, metadata={"format": FORMAT, "model_name": metadata["model_name"]}))
    with replaced_whole(output / METADATA_FILE) as temporary:
        temporary.write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return output


def _exported_files(path: str | Path) -> tuple[Path, Path]:
    """(model.safetensors, metadata.json) of an exported folder (or of its model.safetensors), both checked to exist."""
    path = Path(path)
    folder = path.parent if path.name == WEIGHTS_FILE else path
    weights, metadata_file = folder / WEIGHTS_FILE, folder / METADATA_FILE
    for needed in (weights, metadata_file):
        if not needed.is_file():
            raise UserFileNotFoundError(f"exported weights not found: {needed} (scripts.export_weights writes "
                                        f"{WEIGHTS_FILE} and {METADATA_FILE} together)")
    return weights, metadata_file


def read_exported_metadata(path: str | Path, expected_model: str | None = None) -> dict:
    """metadata.json of an exported folder (or of its model.safetensors). `expected_model`: the family the caller
    needs; another family's weights are a UserError."""
    _, metadata_file = _exported_files(path)
    try:
        metadata = json.loads(metadata_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"cannot read {metadata_file}: not valid JSON ({error})") from error
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise UserError(f"{metadata_file} is not the metadata of exported weights (no \"format\": \"{FORMAT}\")")
    found = metadata.get("model_name")
    if expected_model is not None and found != expected_model:
        raise UserError(f"{path} holds {found} weights, expected {expected_model}; give exported {expected_model} "
                        "weights there")
    return metadata


def read_exported(path: str | Path, expected_model: str | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """(metadata, state dict) of an exported folder (or its model.safetensors); `expected_model` as
    read_exported_metadata's."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    metadata = read_exported_metadata(path, expected_model)
    weights, _ = _exported_files(path)
    try:
        state_dict = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as error:
        raise UserError(f"cannot read {weights}: the file is damaged or not safetensors ({error}); "
                        "export it again") from error
    return metadata, state_dict


def load_exported(path: str | Path, expected_model: str | None = None) -> tuple[torch.nn.Module, dict]:
    """The model of an exported folder, built from its metadata with its weights, in eval mode on the CPU, and the
    metadata. `expected_model`: the family the caller needs; another family's weights are a UserError."""
    model, metadata, _ = _load_exported(path, expected_model)
    return model, metadata


def _load_exported(path: str | Path, expected_model: str | None) -> tuple[torch.nn.Module, dict, str]:
    """load_exported's model and metadata, and the prefix of the model's names in the whole training model's state
    dict ("" unless the export holds one part of it)."""
    metadata, state_dict = read_exported(path, expected_model)
    found = metadata.get("model_name")
    if found not in FAMILIES:
        raise UserError(f"{path}: unknown model {found!r} in its {METADATA_FILE}")
    model, prefix = _model_with_weights(metadata, state_dict, str(path))
    return model, metadata, prefix


def _model_with_weights(metadata: dict, state_dict: dict[str, torch.Tensor], source: str
                        ) -> tuple[torch.nn.Module, str]:
    """The model that metadata describes with state_dict loaded strictly (every key, every shape), in eval mode, and
    the prefix of its names in the training model's state dict."""
    found = metadata["model_name"]
    recipe = get_recipe(found)
    prefix = ""
    try:
        part = recipe.build_exported_model(metadata) if recipe.build_exported_model is not None else None
        if part is not None:  # one part of the training model (e.g. a generator alone), under the part's own names
            model, prefix = part
            state_dict = {key.removeprefix(prefix): value for key, value in state_dict.items()}
        else:
            model = recipe.build_model(metadata["model_config"])
    except (TypeError, ValueError, KeyError) as error:
        raise UserError(f"{source}: its model config does not build a {found}: {error}") from error
    unfold_weight_norm_where_folded(model, state_dict)  # weights exported from a file saved with weight norm folded
    load_model_state(model, state_dict, source)
    return model.eval(), prefix


def load_any_checkpoint(path: str | Path, model_name: str | None = None, reference_config: str | None = None
                        ) -> tuple[torch.nn.Module, dict]:
    """The model of a checkpoint of any family, ours or another implementation's (read_checkpoint), built from what
    the file says and loaded strictly: a file that loads has every weight the model has, in its shape. Returns the
    model (eval mode, CPU) and the metadata export_weights would write."""
    metadata, state_dict = read_checkpoint(path, model_name, reference_config=reference_config)
    model, _ = _model_with_weights(metadata, state_dict, describe_source(path, None))
    return model, metadata


def is_exported_folder(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / METADATA_FILE).is_file()


def load_exported_as_checkpoint(path: str | Path, expected_model: str) -> tuple[torch.nn.Module, dict]:
    """load_exported, with the metadata as the checkpoint dict that load_trained_model's callers read (model_config,
    audio_params, text, epoch, iteration, state_dict): inference and the Python API take an exported folder."""
    model, metadata, prefix = _load_exported(path, expected_model)
    # The family's own metadata keys too (e.g. which mels a generator alone was trained on).
    checkpoint = {key: value for key, value in metadata.items()
                  if key not in ("format", "format_version", "training", "source")}
    # under the whole training model's names, as the family's checkpoints hold it
    state_dict = {f"{prefix}{key}": value for key, value in model.state_dict().items()}
    checkpoint.update(epoch=metadata["training"]["epoch"], iteration=metadata["training"]["iteration"],
                      state_dict=state_dict)
    return model, checkpoint
