"""Which folder holds each model family's Recipe: train.py and inference.py dispatch on `-m NAME` through this."""
from __future__ import annotations

import importlib

from common.recipe import Recipe

RECIPES = {
    "Tacotron2": "tacotron2.recipe",
    "WaveGlow": "waveglow.recipe",
    "WaveNet": "nvwavenet.recipe",
}


def get_recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ValueError(f"unknown model '{name}'; choose one of {', '.join(RECIPES)}")
    return importlib.import_module(RECIPES[name]).RECIPE


def model_name_in(argv: list[str]) -> str | None:
    """The value of -m/--model-name in argv, read before the full parser (whose flags depend on it) exists."""
    for index, token in enumerate(argv):
        if token in ("-m", "--model-name") and index + 1 < len(argv):
            return argv[index + 1]
        if token.startswith("--model-name="):
            return token.split("=", 1)[1]
    return None
