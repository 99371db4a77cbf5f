"""How close a HiFi-GAN's audio comes to the real recordings, next to Griffin-Lim's on the same files.

    python -m scripts.hifigan.report_hifigan_demo --hifigan output/demo_hifigan/checkpoint_HiFiGAN_last.pt \
        -d data/synthetic --filelists filelists/synthetic_audio_text_val.txt [--ema] [--griffin-lim-iters 60] \
        [--json report.json]

For each wav of the filelists: its log mel (common/audio.py, the vocoder's input) is vocoded whole by the HiFi-GAN
and by Griffin-Lim, and the mel of each result is compared with the original's: the mean absolute difference of the
log mels over every frame and band (unscaled; training's validation reports the same number, and 45 times it as the
loss term). Griffin-Lim scales its output to a peak of 0.95, a loudness it cannot know; its audio is rescaled to the
original's peak first, so that level does not count against it. Lower is better; the report says which won.
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from common.audio import MelSpectrogram, griffin_lim, load_wav
from common.errors import exit_on_user_error
from common.filelist import read_filelist
from hifigan.vocoder import load_generator


def mel_l1(reference: torch.Tensor, other: torch.Tensor) -> float:
    frames = min(reference.size(-1), other.size(-1))
    return float((reference[..., :frames] - other[..., :frames]).abs().mean())


@torch.no_grad()
def compare(hifigan: str, dataset_path: str, filelists: list[str], ema: bool = False,
            griffin_lim_iters: int = 60) -> dict:
    generator, params, _ = load_generator(hifigan, torch.device("cpu"), ema=ema, flag="--hifigan")
    mel_spectrogram = MelSpectrogram(params)
    per_file = []
    for entry in [entry for filelist in filelists for entry in read_filelist(filelist, dataset_path,
                                                                            need_text=False)]:
        audio = load_wav(entry.path, params.sampling_rate, min_samples=params.hop_length)
        mel = mel_spectrogram(audio)
        start = time.perf_counter()
        vocoded = generator(mel)[0, 0]
        hifigan_seconds = time.perf_counter() - start
        start = time.perf_counter()
        inverted = griffin_lim(mel, params, n_iters=griffin_lim_iters)[0]
        griffin_lim_seconds = time.perf_counter() - start
        inverted = inverted / inverted.abs().max().clamp(min=1e-8) * audio.abs().max()
        per_file.append({"file": str(entry.path), "frames": mel.size(-1),
                         "hifigan_mel_l1": mel_l1(mel, mel_spectrogram(vocoded)),
                         "griffin_lim_mel_l1": mel_l1(mel, mel_spectrogram(inverted)),
                         "hifigan_seconds": hifigan_seconds, "griffin_lim_seconds": griffin_lim_seconds})
    frames = sum(record["frames"] for record in per_file)
    summary = {name: sum(record[name] * record["frames"] for record in per_file) / frames  # frame-weighted means
               for name in ("hifigan_mel_l1", "griffin_lim_mel_l1")}
    summary["better"] = "HiFi-GAN" if summary["hifigan_mel_l1"] < summary["griffin_lim_mel_l1"] else "Griffin-Lim"
    return {"hifigan": hifigan, "ema": ema, "griffin_lim_iters": griffin_lim_iters, "files": len(per_file),
            "frames": frames, **summary, "per_file": per_file}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="HiFi-GAN vs Griffin-Lim: mel L1 to the real recordings")
    parser.add_argument("--hifigan", required=True, help="HiFi-GAN checkpoint")
    parser.add_argument("-d", "--dataset-path", default="./")
    parser.add_argument("--filelists", nargs="+", required=True)
    parser.add_argument("--ema", action="store_true")
    parser.add_argument("--griffin-lim-iters", type=int, default=60)
    parser.add_argument("--json", default=None, help="also write the report here")
    return parser


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    report = compare(args.hifigan, args.dataset_path, args.filelists, args.ema, args.griffin_lim_iters)
    print(f"mel L1 to the recordings over {report['files']} files ({report['frames']} frames): "
          f"HiFi-GAN {report['hifigan_mel_l1']:.3f}, Griffin-Lim ({args.griffin_lim_iters} iterations) "
          f"{report['griffin_lim_mel_l1']:.3f}; lower is better: {report['better']}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=1)
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
