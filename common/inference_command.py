"""inference.py's command line for `-m NAME`: the flags every part shares (common/inference_args.py), then the
family's own (its InferencePart's add_args), with NVIDIA's spellings read. Here rather than in the root script so
that a family's Python API (tacotron2/api.py) builds its settings from the same parser without importing the root."""
from __future__ import annotations

import argparse

from common.arguments import compatibility_group, read_reference_spellings
from common.errors import ArgumentParser
from common.inference_args import add_inference_args
from common.registry import DEFAULT_INFERENCE, INFERENCE, get_inference_part, model_name_in


def build_inference_parser(model_name: str | None = None) -> argparse.ArgumentParser:
    """The full parser for -m model_name (default: Tacotron2, as before -m existed)."""
    model_name = model_name or DEFAULT_INFERENCE
    parser = ArgumentParser(description="Synthesize speech with a trained model", allow_abbrev=False)
    parser.add_argument("-m", "--model-name", default=DEFAULT_INFERENCE, choices=list(INFERENCE),
                        help=f"the model family (default: {DEFAULT_INFERENCE}, text to wav)")
    add_inference_args(parser)
    if model_name in INFERENCE:  # otherwise parse_args reports the bad -m value with the choices
        get_inference_part(model_name).add_args(parser)
    compatibility_group(parser)  # --help says that NVIDIA's `--flag_name` spellings are read
    return parser


def parse_inference_args(argv: list[str]) -> argparse.Namespace:
    """inference.py's flags for argv: the model's parser, with the reference's spellings translated."""
    model_name = model_name_in(argv) or DEFAULT_INFERENCE
    parser = build_inference_parser(model_name)
    part = get_inference_part(model_name) if model_name in INFERENCE else None
    translate_argv = part.translate_argv if part is not None and part.translate_argv else read_reference_spellings
    return parser.parse_args(translate_argv(argv, parser))
