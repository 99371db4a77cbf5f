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
FAMILY_FLAGS = {"--wn-channels": "WaveGlow", "--ema": "HiFiGAN", "--hifigan-config": "HiFiGAN",
                "--labels-path": "wav2vec2"}


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
    parser.add_argument("--wn-channels", type=int, default=None,
                        help="WaveGlow: for a checkpoint without a model config (NVIDIA's waveglow256: 256)")
    parser.add_argument("--ema", action="store_true", help="HiFiGAN: export the generator's moving average")
    parser.add_argument("--hifigan-config", default=None, help="HiFiGAN: jik876's config_v*.json, for his g_ files")
    parser.add_argument("--labels-path", default=None,
                        help="wav2vec2: the dictionary (dict.ltr.txt) if the checkpoint carries none")
    return parser


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = build_parser().parse_args(argv)
    for flag, family in FAMILY_FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value not in (None, False) and args.model_name != family:
            raise UserError(f"{flag} is for -m {family}, not -m {args.model_name}: drop it")
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
