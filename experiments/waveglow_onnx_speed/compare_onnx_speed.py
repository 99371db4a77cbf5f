"""WaveGlow inference in eager PyTorch beside its ONNX export in onnxruntime, at several batch shapes.

    python -m experiments.waveglow_onnx_speed.compare_onnx_speed [--wn-channels 256] [--shapes 1x86 4x86 1x344]
        [--threads 2] [--repeats 3]

Builds a random-weight WaveGlow (weight norm folded, as inference runs it), exports it with waveglow/export.py (which
checks onnxruntime against eager within 1e-4), then times `WaveGlow.infer(mel, 1, z)` and the ONNX session on the same
mel and noise for each BATCHxFRAMES shape (86 frames are 1 s of audio at 22050 Hz). Prints the best of --repeats
runs of each and their ratio: whether a batch costs PyTorch more per second of audio than onnxruntime (asked
after scripts/onnx_pipeline.py measured 1.9x at batch 4; docs/export.md).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from common.layers import remove_weight_norm
from common.onnx_export import session
from scripts.benchmark_speed import best_seconds
from waveglow import export
from waveglow.model import WaveGlow

SAMPLING_RATE = 22050  # of the mels WaveGlow is trained on (LJSpeech's)


def parse_shape(text: str) -> tuple[int, int]:
    try:
        batch, frames = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected BATCHxFRAMES (e.g. 4x86), got {text!r}") from None
    if batch < 1 or frames < 2:
        raise argparse.ArgumentTypeError(f"batch must be >= 1 and frames >= 2, got {text!r}")
    return batch, frames


def compare(model: WaveGlow, shapes: list[tuple[int, int]], threads: int, repeats: int) -> list[dict]:
    """[{batch, frames, eager_seconds, onnxruntime_seconds}] for each shape, on one export of `model`."""
    with tempfile.TemporaryDirectory() as folder:
        export.export(model, folder, what="experiments.waveglow_onnx_speed.compare_onnx_speed")
        onnx_session = session(Path(folder) / export.WAVEGLOW_FILE, threads)
        generator = torch.Generator().manual_seed(0)
        results = []
        for batch, frames in shapes:
            mel = torch.rand(batch, model.upsample.in_channels, frames, generator=generator) * 13.0 - 11.0
            z = 0.6 * torch.randn(export.noise_shape(model, batch, frames), generator=generator)
            inputs = {"mel": mel.numpy(), "z": z.numpy()}
            results.append({"batch": batch, "frames": frames,
                            "eager_seconds": best_seconds(lambda: model.infer(mel, 1.0, z), repeats),
                            "onnxruntime_seconds": best_seconds(lambda: onnx_session.run(None, inputs), repeats)})
    return results


def report_lines(results: list[dict], name: str, hop_length: int, threads: int, repeats: int) -> list[str]:
    lines = [f"{name}, random weights, fp32, {threads} threads, best of {repeats}"]
    for row in results:
        audio_seconds = row["batch"] * row["frames"] * hop_length / SAMPLING_RATE
        lines.append(f"batch {row['batch']} x {row['frames']} frames ({audio_seconds:.2f} s of audio): "
                     f"eager {row['eager_seconds']:.3f} s, onnxruntime {row['onnxruntime_seconds']:.3f} s, "
                     f"eager / onnxruntime {row['eager_seconds'] / row['onnxruntime_seconds']:.2f}")
    return lines


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wn-channels", type=int, default=256, help="256: NVIDIA's published WaveGlow-256")
    parser.add_argument("--shapes", type=parse_shape, nargs="+", default=[(1, 86), (4, 86), (1, 344)],
                        metavar="BATCHxFRAMES")
    parser.add_argument("--threads", type=int, default=2, help="of PyTorch and onnxruntime alike")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = WaveGlow(wn_channels=args.wn_channels).eval()
    remove_weight_norm(model)
    results = compare(model, args.shapes, args.threads, args.repeats)
    print("\n".join(report_lines(results, f"WaveGlow-{args.wn_channels}", model.hop_length, args.threads,
                                  args.repeats)))
    return results


if __name__ == "__main__":
    main()
