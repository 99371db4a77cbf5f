"""Where each model family lives: train.py dispatches `-m NAME` to RECIPES (the module's RECIPE), inference.py to
INFERENCE (the module's INFERENCE, common/inference_part.py), and inference.py's `--vocoder NAME` (or the vocoder's
checkpoint flag, `--<name in lower case> CKPT`) to VOCODERS (the module's VOCODER, common/vocoder.py's VocoderSpec)."""
from __future__ import annotations

import importlib

from common.inference_part import InferencePart
from common.recipe import Recipe

RECIPES = {
    "Tacotron2": "tacotron2.recipe",
    "WaveGlow": "waveglow.recipe",
    "WaveNet": "nvwavenet.recipe",
    "HiFiGAN": "hifigan.recipe",
    "wav2vec2": "wav2vec2.recipe",
}

# inference.py -m NAME. The vocoders' parts turn mel .pt files into wavs.
INFERENCE = {
    "Tacotron2": "tacotron2.inference",
    "WaveGlow": "waveglow.inference",
    "WaveNet": "nvwavenet.inference",
    "HiFiGAN": "hifigan.inference",
    "wav2vec2": "wav2vec2.inference",  # speech to text
}
DEFAULT_INFERENCE = "Tacotron2"  # what inference.py runs without -m (its command line before -m existed)

# Vocoders an acoustic model's mels can go to. Griffin-Lim needs no checkpoint and is built in (common/vocoder.py).
VOCODERS = {
    "WaveGlow": "waveglow.vocoder",
    "WaveNet": "nvwavenet.vocoder",
    "HiFiGAN": "hifigan.vocoder",
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


def get_inference_part(name: str) -> InferencePart:
    """What runs `inference.py -m NAME`."""
    if name not in INFERENCE:
        raise ValueError(f"unknown model '{name}' for inference; choose one of {', '.join(INFERENCE)}")
    return importlib.import_module(INFERENCE[name]).INFERENCE
