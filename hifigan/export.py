"""Export a HiFi-GAN generator (weight norm folded away, fp32) to ONNX or TorchScript, checked against PyTorch.

    python -m hifigan.export --checkpoint H.pt [--ema] [--hifigan-config config_v1.json] \
        [--onnx generator.onnx [--opset N]] [--torchscript generator.pt]

H is any file inference.py takes with --hifigan (ours, NVIDIA's, jik876's with --hifigan-config). The ONNX graph
takes `mel` (batch, n_mel_channels, frames) and gives `audio` (batch, 1, frames * hop_length), with batch and frames
dynamic; its opset is the newest the installed onnx package knows (--opset to choose). It is run with onnxruntime on
two inputs of different batch sizes and lengths and must match PyTorch within 1e-4 (else the export fails;
common/onnx_export.py, shared by every family's export). The
TorchScript module is a trace: the generator has no data-dependent control flow, so one trace serves every batch size
and length (checked the same way, within 1e-5). Load it with torch.jit.load(path)(mel).

ONNX export needs the PyPI packages onnx, onnxscript (torch's exporter) and onnxruntime (the check); inference.py
itself does not.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from common.errors import UserError, exit_on_user_error
from common.onnx_export import ONNX_TOLERANCE, export_and_check
from hifigan.model import Generator
from hifigan.vocoder import load_generator

ONNX_FILE = "hifigan.onnx"  # what scripts/export_onnx.py writes
TORCHSCRIPT_TOLERANCE = 1e-5
CHECK_SHAPES = ((1, 37), (3, 64))  # (batch, mel frames) of the two check inputs


def check_inputs(n_mel_channels: int, seed: int = 0) -> list[torch.Tensor]:
    """Log mels in a speech-like range (silence at log(1e-5) ~ -11.5 up to about 2)."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(batch, n_mel_channels, frames, generator=generator) * 13.0 - 11.0
            for batch, frames in CHECK_SHAPES]


def export_onnx(generator: Generator, path: str | Path, n_mel_channels: int, opset: int | None = None) -> float:
    """Write the ONNX file and return the largest difference from PyTorch over the check inputs."""
    example = torch.zeros(2, n_mel_channels, 16)
    dynamic_axes = {"mel": {0: torch.export.Dim("batch", max=1024), 2: torch.export.Dim("frames", min=2)}}
    return export_and_check(generator, path, {"mel": example}, dynamic_axes, ["audio"],
                            [{"mel": mel} for mel in check_inputs(n_mel_channels)], opset, ONNX_TOLERANCE, "--onnx")


def export_torchscript(generator: Generator, path: str | Path, n_mel_channels: int) -> float:
    """Write the traced generator and return the largest difference from PyTorch over the check inputs."""
    with torch.no_grad():
        traced = torch.jit.trace(generator, torch.zeros(1, n_mel_channels, 16))
    traced.save(str(path))
    loaded = torch.jit.load(str(path))
    difference = 0.0
    with torch.no_grad():
        for mel in check_inputs(n_mel_channels):
            difference = max(difference, float((loaded(mel) - generator(mel)).abs().max()))
    if difference > TORCHSCRIPT_TOLERANCE:
        raise RuntimeError(f"TorchScript export of {path}: differs from PyTorch by {difference:.2e} "
                           f"(> {TORCHSCRIPT_TOLERANCE})")
    return difference


def add_export_args(group: argparse._ArgumentGroup) -> None:
    """The flags that choose what is exported: here and scripts/export_onnx.py -m HiFiGAN."""
    group.add_argument("--ema", action="store_true", help="HiFiGAN: export the generator's moving average")
    group.add_argument("--hifigan-config", default=None, help="HiFiGAN: jik876's config_v*.json, for his g_ files")


def export_checkpoint(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    """scripts/export_onnx.py -m HiFiGAN: the generator (its moving average with --ema) as hifigan.onnx
    (InferencePart.export_onnx)."""
    generator, audio_params, _ = load_generator(args.checkpoint, torch.device("cpu"), ema=args.ema,
                                                hifigan_config=args.hifigan_config, flag="--checkpoint")
    return {ONNX_FILE: export_onnx(generator.float().eval(), folder / ONNX_FILE, audio_params.n_mel_channels,
                                   args.opset)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Export a HiFi-GAN generator to ONNX and/or TorchScript",
                                     allow_abbrev=False)
    parser.add_argument("--checkpoint", required=True, help="HiFi-GAN file (ours, NVIDIA's or jik876's)")
    add_export_args(parser)
    parser.add_argument("--onnx", default=None, metavar="FILE", help="write an ONNX model here")
    parser.add_argument("--opset", type=int, default=None, help="ONNX opset (default: the newest onnx knows)")
    parser.add_argument("--torchscript", default=None, metavar="FILE", help="write a TorchScript module here")
    return parser


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if not args.onnx and not args.torchscript:
        raise UserError("give --onnx FILE and/or --torchscript FILE: nothing to export")
    generator, audio_params, _ = load_generator(args.checkpoint, torch.device("cpu"), ema=args.ema,
                                                hifigan_config=args.hifigan_config, flag="--checkpoint")
    generator = generator.float().eval()
    results = {}
    for flag, export in (("onnx", export_onnx), ("torchscript", export_torchscript)):
        path = getattr(args, flag)
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            extra = {"opset": args.opset} if flag == "onnx" else {}
            results[flag] = export(generator, path, audio_params.n_mel_channels, **extra)
            print(f"wrote {path}: matches PyTorch within {results[flag]:.1e} at (batch, frames) "
                  f"{' and '.join(map(str, CHECK_SHAPES))}")
    return results


if __name__ == "__main__":
    exit_on_user_error(main)
