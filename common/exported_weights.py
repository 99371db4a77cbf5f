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
    generator_only           HiFi-GAN from NVIDIA's or jik876's generator file: true, the weights are the generator's
                             alone ("generator." keys; no discriminators), and mel_convention says which mels it
                             was trained on
The folder layout is the Hugging Face one (one folder per model, a README.md model card can sit beside them).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from common.checkpoint import (describe_source, load_checkpoint, load_model_state, model_from_checkpoint,
                               replaced_whole, unfold_weight_norm_where_folded)
from common.errors import UserError, UserFileNotFoundError
from common.registry import FAMILIES, get_recipe

FORMAT = "speech-weights"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
METADATA_FILE = "metadata.json"


# ---- reading a training checkpoint ---------------------------------------------------------------------------------


def _family_of(checkpoint: dict, model_name: str | None, source: str) -> str:
    """The family the checkpoint names, else -m's, else wav2vec 2.0 for a fairseq-style file ({"model": ...})."""
    found = checkpoint.get("model_name")
    if found is not None and model_name is not None and found != model_name:
        raise UserError(f"checkpoint {source} is a {found} checkpoint, not {model_name} (-m)")
    name = found or model_name or ("wav2vec2" if "model" in checkpoint else None)
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
                    hifigan_config: str | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """(metadata, state dict) of a checkpoint of any family: ours, NVIDIA's (then `model_name` says the family when
    the file does not), or for wav2vec 2.0 fairseq's. The state dict is what the family's model loads strictly; for
    NVIDIA's and jik876's HiFi-GAN generator files (jik876's with `hifigan_config`, his JSON), the generator's."""
    source = describe_source(path, flag)
    try:
        checkpoint = load_checkpoint(path, flag=flag)
    except UserFileNotFoundError:
        raise
    except UserError as unreadable:
        # fairseq's and NVIDIA's wav2vec 2.0 files hold a Namespace or a DictConfig, which weights_only refuses;
        # wav2vec2/checkpoints.py reads them without running anything they name. Any other file: the first error.
        if model_name not in (None, "wav2vec2"):
            raise
        try:
            return _metadata(path, "wav2vec2", {}, *_wav2vec2_parts(path, flag, {}))
        except UserError:
            raise unreadable from None
    name = _family_of(checkpoint, model_name, source)
    if name == "wav2vec2":
        return _metadata(path, name, checkpoint, *_wav2vec2_parts(path, flag, checkpoint))
    if name == "HiFiGAN" and checkpoint.get("model_name") != name:
        return _reference_hifigan_generator(path, checkpoint, source, hifigan_config)
    # A file without a model config (NVIDIA's bare weights) is the family's default architecture, as the Python API
    # and torch.hub read it; the weights then load strictly or fail naming the keys that do not fit.
    model, config = model_from_checkpoint(get_recipe(name), checkpoint, source, published_config={})
    return _metadata(path, name, checkpoint, config, model.state_dict(), checkpoint.get("text"),
                     checkpoint.get("audio_params"))


def _wav2vec2_parts(path: str | Path, flag: str | None, checkpoint: dict) -> tuple:
    """(model config, state dict, dictionary, audio parameters) of a wav2vec 2.0 file: ours, NVIDIA's or fairseq's."""
    from wav2vec2.checkpoints import read_any_checkpoint  # imported only for this family, as the registry does

    found = read_any_checkpoint(path, flag)
    text = {"symbols": found["symbols"]} if found["symbols"] is not None else None
    return (found["model_config"], found["state_dict"], text,
            checkpoint.get("audio_params") or {"sampling_rate": 16000})


def _reference_hifigan_generator(path: str | Path, checkpoint: dict, source: str, hifigan_config: str | None
                                 ) -> tuple[dict, dict[str, torch.Tensor]]:
    """NVIDIA's or jik876's generator file, exported as the generator alone: the file has no discriminators to fill
    the whole training model with."""
    from hifigan.checkpoints import generator_from_checkpoint, reference_audio_params

    generator, info = generator_from_checkpoint(checkpoint, source, Path(path).name, hifigan_config)
    state_dict = {f"generator.{key}": value for key, value in generator.state_dict().items()}
    audio = reference_audio_params(info, hifigan_config).to_dict()
    metadata, state_dict = _metadata(path, "HiFiGAN", checkpoint, {"generator": info["config"]}, state_dict, None,
                                     audio)
    train_state = info.get("train_state", {})
    metadata["training"].update(epoch=train_state.get("epoch"), iteration=train_state.get("iters_all"))
    metadata.update(generator_only=True, mel_convention=info["mel_convention"])
    return metadata, state_dict


def _metadata(path: str | Path, name: str, checkpoint: dict, config: dict, state_dict: dict, text: dict | None,
              audio: dict | None) -> tuple[dict, dict[str, torch.Tensor]]:
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION, "model_name": name, "model_config": config,
                "audio_params": audio, "text": text,
                "training": {"epoch": checkpoint.get("epoch"), "iteration": checkpoint.get("iteration"),
                             "dataset": _recorded_dataset(checkpoint.get("args"))},
                "source": Path(path).name}
    return metadata, state_dict


# ---- writing and reading the exported folder -----------------------------------------------------------------------


def export_weights(checkpoint_path: str | Path, output: str | Path, model_name: str | None = None,
                   hifigan_config: str | None = None) -> Path:
    """Write OUTPUT/model.safetensors and OUTPUT/metadata.json from a checkpoint; returns the folder."""
    from safetensors.torch import save

    metadata, state_dict = read_checkpoint(checkpoint_path, model_name, hifigan_config=hifigan_config)
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
    metadata, state_dict = read_exported(path, expected_model)
    found = metadata.get("model_name")
    if found not in FAMILIES:
        raise UserError(f"{path}: unknown model {found!r} in its {METADATA_FILE}")
    try:
        if metadata.get("generator_only"):  # a reference HiFi-GAN generator file's export: the generator alone
            from hifigan.model import Generator

            model = Generator(**metadata["model_config"]["generator"])
            state_dict = {key.removeprefix("generator."): value for key, value in state_dict.items()}
        else:
            model = get_recipe(found).build_model(metadata["model_config"])
    except (TypeError, ValueError, KeyError) as error:
        raise UserError(f"{path}: its model config does not build a {found}: {error}") from error
    unfold_weight_norm_where_folded(model, state_dict)  # weights exported from a file saved with weight norm folded
    load_model_state(model, state_dict, str(path))
    return model.eval(), metadata


def is_exported_folder(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / METADATA_FILE).is_file()


def load_exported_as_checkpoint(path: str | Path, expected_model: str) -> tuple[torch.nn.Module, dict]:
    """load_exported, with the metadata as the checkpoint dict that load_trained_model's callers read (model_config,
    audio_params, text, epoch, iteration, state_dict): inference and the Python API take an exported folder."""
    model, metadata = load_exported(path, expected_model)
    checkpoint = {key: metadata[key] for key in ("model_name", "model_config", "audio_params", "text")}
    state_dict = model.state_dict()
    if metadata.get("generator_only"):  # under the whole model's names, as our HiFi-GAN checkpoints hold it
        state_dict = {f"generator.{key}": value for key, value in state_dict.items()}
        checkpoint["mel_convention"] = metadata["mel_convention"]
    checkpoint.update(epoch=metadata["training"]["epoch"], iteration=metadata["training"]["iteration"],
                      state_dict=state_dict)
    return model, checkpoint
