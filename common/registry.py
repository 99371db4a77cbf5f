"""The families and where each lives: train.py dispatches `-m NAME` to the family's recipe, inference.py `-m NAME` to
its inference part, and inference.py's `--vocoder NAME` (or the vocoder's checkpoint flag, `--<name in lower case>
CKPT`) to its vocoder.

Every family folder holds recipe.py (`RECIPE = Recipe(name=NAME, ...)`, common/recipe.py) and inference.py
(`INFERENCE = InferencePart(...)`, common/inference_part.py); a vocoder family also vocoder.py
(`VOCODER = VocoderSpec(...)`, common/vocoder.py). The inference part and the vocoder take their name from the
family's RECIPE, whose name is the one given here (tests/test_inference.py checks). The modules are imported only
when chosen, so an installation without a vocoder's folder still runs the others.
"""
from __future__ import annotations

import importlib

from common.inference_part import InferencePart
from common.recipe import Recipe

FAMILIES = {  # -m NAME: the family's folder
    "Tacotron2": "tacotron2",
    "WaveGlow": "waveglow",
    "WaveNet": "nvwavenet",
    "HiFiGAN": "hifigan",
    "MelInverter": "melinverter",  # a learned linear spectrogram for Griffin-Lim
    "wav2vec2": "wav2vec2",  # speech to text
}
# the families whose vocoder.py an acoustic model's mels go to
VOCODER_FAMILIES = ("WaveGlow", "WaveNet", "HiFiGAN", "MelInverter")
DEFAULT_INFERENCE = "Tacotron2"  # what inference.py runs without -m (its command line before -m existed)
# The family of a file that names none and holds {"model": ...}, or that only a restricted unpickler reads (fairseq's
# and NVIDIA's wav2vec 2.0 files), where -m does not say.
FAMILY_OF_UNNAMED_FILES = "wav2vec2"

RECIPES = {name: f"{folder}.recipe" for name, folder in FAMILIES.items()}
INFERENCE = {name: f"{folder}.inference" for name, folder in FAMILIES.items()}
# Griffin-Lim needs no checkpoint and is built in (common/vocoder.py).
VOCODERS = {name: f"{FAMILIES[name]}.vocoder" for name in VOCODER_FAMILIES}


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
