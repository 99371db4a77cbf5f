"""Export a checkpoint to ONNX, each file checked by running it with onnxruntime against PyTorch.

    python -m scripts.export_onnx -m Tacotron2 --checkpoint T.pt -o exported/onnx
    python -m scripts.export_onnx -m WaveGlow --checkpoint W.pt -o exported/onnx [--wn-channels 256]
    python -m scripts.export_onnx -m HiFiGAN --checkpoint H.pt -o exported/onnx [--ema] [--hifigan-config C.json]
    python -m scripts.export_onnx -m wav2vec2 --checkpoint R.pt -o exported/onnx [--labels-path dict.ltr.txt]

Writes, into the folder (one folder can hold every family's files):
- Tacotron2: tacotron2_encoder.onnx, tacotron2_decoder_step.onnx, tacotron2_postnet.onnx (tacotron2/export.py)
- WaveGlow: waveglow.onnx, mel and noise z in, audio out (waveglow/export.py)
- HiFiGAN: hifigan.onnx, mel in, audio out (hifigan/export.py, which also writes TorchScript on its own command line)
- wav2vec2: wav2vec2_ctc.onnx, audio and padding mask in, CTC logits out (wav2vec2/export.py)
Each at the newest opset the installed onnx knows (--opset to choose; 17 or newer), batch and lengths dynamic, and
matching PyTorch within 1e-4 in fp32 on two inputs of other lengths than the export's example, else no success is
reported (common/onnx_export.py). The checkpoints are those inference.py takes (ours or NVIDIA's; fairseq's or a
Hugging Face folder for wav2vec2). Needs the onnx, onnxscript and onnxruntime packages.
scripts/onnx_pipeline.py runs the files end to end in onnxruntime.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from common.errors import ArgumentParser, UserError, exit_on_user_error
from common.onnx_export import require_onnx
from common.registry import INFERENCE, get_inference_part

MINIMUM_OPSET = 17


def exporting_families() -> list[str]:
    """The families whose inference part has an ONNX export (InferencePart.export_onnx)."""
    return [name for name in INFERENCE if get_inference_part(name).export_onnx is not None]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description="Export a checkpoint to ONNX, checked against PyTorch with onnxruntime",
                            allow_abbrev=False)
    parser.add_argument("-m", "--model-name", required=True, choices=exporting_families(),
                        help="the checkpoint's family")
    parser.add_argument("--checkpoint", required=True, help="the checkpoint (or exported folder) inference.py takes")
    parser.add_argument("-o", "--output", required=True, metavar="FOLDER", help="where the .onnx files go")
    parser.add_argument("--opset", type=int, default=None,
                        help=f"ONNX opset, {MINIMUM_OPSET} or newer (default: the newest the onnx package knows)")
    for name in exporting_families():  # each family's own flags (InferencePart.add_export_args)
        add_export_args = get_inference_part(name).add_export_args
        if add_export_args is not None:
            add_export_args(parser.add_argument_group(f"-m {name}"))
    return parser


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = build_parser()
    args = parser.parse_args(argv)
    for group in parser._action_groups:  # a flag of another family's export would change nothing: refused
        family = group.title[3:] if group.title and group.title.startswith("-m ") else None
        for action in group._group_actions if family not in (None, args.model_name) else ():
            if vars(args)[action.dest] != action.default:
                raise UserError(f"{action.option_strings[0]} is for -m {family}, not -m {args.model_name}: drop it")
    if args.opset is not None and args.opset < MINIMUM_OPSET:
        raise UserError(f"--opset {args.opset}: give {MINIMUM_OPSET} or newer (torch's exporter targets them)")
    require_onnx("scripts.export_onnx")
    folder = Path(args.output)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"-o {folder}: cannot create the folder: {error.strerror}") from error
    differences = get_inference_part(args.model_name).export_onnx(args, folder)
    for name, difference in differences.items():
        print(f"wrote {folder / name}: onnxruntime matches PyTorch within {difference:.1e} on two inputs")
    return differences


if __name__ == "__main__":
    exit_on_user_error(main)
