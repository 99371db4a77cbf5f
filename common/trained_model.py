"""A family's trained model for inference, from any file that holds it: a training checkpoint (the project's own, or
NVIDIA's with or without its config) or a folder of exported weights (scripts/export_weights.py)."""
from __future__ import annotations

from pathlib import Path

import torch

from common import exported_weights
from common.checkpoint import describe_source, load_checkpoint, model_from_checkpoint


def load_trained_model(recipe, path: str | Path, device: torch.device, published_config: dict | None = None,
                       flag: str | None = None):
    """Build a recipe's model from a checkpoint for inference; returns (model in eval mode, checkpoint dict).

    Our checkpoints carry their model config. NVIDIA's carry theirs under `config`, translated by the recipe; what it
    leaves out, and everything for a file with weights only, comes from `published_config` (the model flags on the
    command line, e.g. --wn-channels 256). Weights saved with weight norm folded away load too (see
    unfold_weight_norm_where_folded). `flag` names the command-line flag that gave the path, for error messages.
    A folder written by scripts.export_weights (safetensors and metadata.json) loads too."""
    if exported_weights.is_exported_folder(path):
        model, checkpoint = exported_weights.load_exported_as_checkpoint(path, recipe.name)
        return model.to(device).eval(), checkpoint
    source = describe_source(path, flag)
    checkpoint = load_checkpoint(path, expected_model=recipe.name, flag=flag)
    model, _ = model_from_checkpoint(recipe, checkpoint, source, published_config)
    return model.to(device).eval(), checkpoint
