"""Checkpoints: written atomically, read with weights_only=True, and tolerant of NVIDIA's published layouts.

A training checkpoint of this project is a dict:
    format_version, model_name, model_config, audio_params, text (symbol table and cleaners, text models only),
    state_dict, optimizer, scaler, lr_schedule, epoch (epochs completed), iteration (optimizer steps taken),
    rng_states (one entry per rank), args (the training command line as a dict)
NVIDIA's published checkpoints hold only {'state_dict', 'config', ...} (or a bare state dict) with DDP's `module.`
prefix and the old weight_g/weight_v weight-norm names; `read_model_state` accepts those too.
"""
from __future__ import annotations

import os
import pickle
import re
from pathlib import Path

import torch
from torch import nn

FORMAT_VERSION = 1


def checkpoint_path(output_dir: str | Path, model_name: str, epoch: int) -> Path:
    return Path(output_dir) / f"checkpoint_{model_name}_{epoch}.pt"


def last_checkpoint_pointer(output_dir: str | Path, model_name: str) -> Path:
    return Path(output_dir) / f"checkpoint_{model_name}_last.pt"


def save_checkpoint(checkpoint: dict, path: str | Path) -> None:
    """Write to a temporary file in the same folder, flush it to disk, then rename: a crash never leaves half a file."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as handle:
            torch.save(checkpoint, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def point_last_checkpoint_to(output_dir: str | Path, model_name: str, target: Path) -> None:
    """Repoint checkpoint_<model>_last.pt (a relative symlink) at target, atomically."""
    pointer = last_checkpoint_pointer(output_dir, model_name)
    temporary = pointer.with_name(f".{pointer.name}.tmp-{os.getpid()}")
    if temporary.is_symlink() or temporary.exists():
        temporary.unlink()
    os.symlink(target.name, temporary)
    os.replace(temporary, pointer)


def load_checkpoint(path: str | Path, expected_model: str | None = None) -> dict:
    """Read a checkpoint safely (tensors and plain containers only) and check which model it belongs to."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as error:
        raise ValueError(f"cannot read checkpoint {path}: {error}") from error
    if not isinstance(checkpoint, dict):
        raise ValueError(f"checkpoint {path} holds a {type(checkpoint).__name__}, expected a dict")
    found = checkpoint.get("model_name")
    if expected_model is not None and found is not None and found != expected_model:
        raise ValueError(f"checkpoint {path} is a {found} checkpoint, expected {expected_model}")
    return checkpoint


_LEGACY_WEIGHT_NORM = re.compile(r"^(.*)\.weight_([gv])$")


def remap_legacy_state_dict(state_dict: dict) -> dict:
    """Strip DDP/DataParallel prefixes and rename torch.nn.utils.weight_norm's weight_g/weight_v to parametrizations."""
    remapped = {}
    for key, value in state_dict.items():
        for prefix in ("module.1.", "module."):  # module.1. came from an older NVIDIA wrapper around the model
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        match = _LEGACY_WEIGHT_NORM.match(key)
        if match:
            which = "original0" if match.group(2) == "g" else "original1"
            key = f"{match.group(1)}.parametrizations.weight.{which}"
        remapped[key] = value
    return remapped


def model_state_from_checkpoint(checkpoint: dict) -> dict:
    """The model weights of a checkpoint of ours, of NVIDIA's ({'state_dict': ...}), or a bare state dict."""
    if "state_dict" in checkpoint:
        return remap_legacy_state_dict(checkpoint["state_dict"])
    if all(isinstance(value, torch.Tensor) for value in checkpoint.values()):
        return remap_legacy_state_dict(checkpoint)
    raise ValueError(f"checkpoint has no 'state_dict' entry (keys: {sorted(checkpoint)[:10]})")


def load_model_state(model: nn.Module, state_dict: dict, source: str) -> None:
    """Strict load whose error lists the missing and unexpected keys and any shape mismatch, naming the source."""
    expected = model.state_dict()
    missing = [key for key in expected if key not in state_dict]
    unexpected = [key for key in state_dict if key not in expected]
    wrong_shape = [
        f"{key}: {tuple(state_dict[key].shape)} in {source}, {tuple(expected[key].shape)} in the model"
        for key in expected
        if key in state_dict and tuple(state_dict[key].shape) != tuple(expected[key].shape)
    ]
    if missing or unexpected or wrong_shape:
        def first(items):
            return ", ".join(items[:8]) + (f" ... ({len(items)} in all)" if len(items) > 8 else "")
        problems = []
        if missing:
            problems.append(f"missing keys: {first(missing)}")
        if unexpected:
            problems.append(f"unexpected keys: {first(unexpected)}")
        if wrong_shape:
            problems.append(f"shape mismatches (check the model flags, e.g. --wn-channels): {first(wrong_shape)}")
        raise ValueError(f"weights in {source} do not fit the model: " + "; ".join(problems))
    model.load_state_dict(state_dict, strict=True)


def load_trained_model(recipe, path: str | Path, device: torch.device, published_config: dict | None = None):
    """Build a recipe's model from a checkpoint for inference; returns (model in eval mode, checkpoint dict).

    Our checkpoints carry their model config. NVIDIA's carry theirs under `config`, translated by the recipe; what it
    leaves out, and everything for a file with weights only, comes from `published_config` (the model flags on the
    command line, e.g. --wn-channels 256)."""
    checkpoint = load_checkpoint(path, expected_model=recipe.name)
    config = checkpoint.get("model_config")
    if config is None and isinstance(checkpoint.get("config"), dict) and recipe.config_from_reference is not None:
        try:
            config = {**(published_config or {}), **recipe.config_from_reference(checkpoint["config"])}
        except (KeyError, TypeError) as error:
            raise ValueError(f"{path}: cannot read NVIDIA's model config {checkpoint['config']}: {error!r}") from error
    config = config if config is not None else published_config
    if config is None:
        raise ValueError(f"{path} carries no model config; give the model flags on the command line")
    model = recipe.build_model(config)
    load_model_state(model, model_state_from_checkpoint(checkpoint), str(path))
    return model.to(device).eval(), checkpoint
