"""Run any model of the framework for inference; `-m NAME` picks the family (default: Tacotron2, text to wav).

    python inference.py -i phrases/phrase.txt -o output/wavs --tacotron2 CKPT [--waveglow CKPT] [--cpu] [--bf16|--amp]
    python inference.py -m Tacotron2 -i phrases/phrase.txt -o output/wavs --tacotron2 CKPT --vocoder WaveNet \
        --vocoder-checkpoint CKPT
    python inference.py -i phrases/phrase_128.txt -o output/bench --tacotron2 CKPT --batch-size 4 --benchmark-repeats 20
    python inference.py -m WaveGlow -i output/wavs/mels -o output/vocoded --waveglow CKPT     # mel .pt files to wavs

`python inference.py -m NAME --help` lists the flags of that model; `--dry-run` prints what they resolve to and
exits. NVIDIA's inference command lines are read as they are (`--flag_name` spellings and the part's
translate_argv; tests/data/nvidia_inference_command_lines.json). Each family's part is the InferencePart its
inference.py declares (INFERENCE, common/inference_part.py); the flags every part shares are in
common/inference_args.py. A mistake in what was given (a missing or damaged file, a checkpoint of another model) ends
in one `error: ...` line, exit code 2.
"""
from __future__ import annotations

import json
import sys

import torch

from common.errors import exit_on_user_error
from common.inference_args import check_inference_args
from common.inference_command import build_inference_parser as build_parser, parse_inference_args
from common.registry import get_inference_part
from common.torch_version import check_torch_version

__all__ = ["build_parser", "main", "parse_inference_args"]  # build_parser: scripts and tests build Synthesizers with it


def main(argv: list[str] | None = None) -> None:
    check_torch_version()  # before any checkpoint is read: an older torch's weights_only can be bypassed
    argv = sys.argv[1:] if argv is None else argv
    args = parse_inference_args(argv)
    check_inference_args(args)
    if args.dry_run:
        print(json.dumps({"model_name": args.model_name, "args": vars(args)}, indent=2, default=str))
        return
    if args.cudnn_benchmark:
        torch.backends.cudnn.benchmark = True
    get_inference_part(args.model_name).run(args)


if __name__ == "__main__":
    exit_on_user_error(main)
