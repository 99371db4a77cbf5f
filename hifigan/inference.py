"""`inference.py -m HiFiGAN`: mel files to wavs with a HiFi-GAN generator.

    python inference.py -m HiFiGAN -i mels/ more.npy -o out/wavs --hifigan H.pt [--ema] [-d 0.005] [--chunk-frames 64]

-i takes log mels of shape (n_mel_channels, frames) as .pt tensors (inference.py --save-mels,
scripts/prepare_mels.sh, scripts/extract_gta_mels.sh) or .npy arrays (NVIDIA's extraction), or folders of them, and
writes <file stem><suffix>.wav for each, one file at a time: in a padded batch the generator's convolutions would
see the padding near each mel's end. They are taken to be common/audio.py's mels (--input-mel-convention jik876 for
mels computed as jik876's and NVIDIA's HiFi-GAN training computes them). Text to wav: inference.py --tacotron2 T
--hifigan H (hifigan/vocoder.py).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from common.audio import save_wav
from common.errors import UserError, UserFileNotFoundError
from common.inference_args import (Stopwatch, autocast, benchmark, check_inference_args, inference_device,
                                   inference_dtype, open_run_logger, warm_up)
from common.mel_to_wav import read_mel
from common.vocoder import add_vocoder_args, load_vocoder
from hifigan.vocoder import MEL_CONVENTIONS, MODEL_NAME

MEL_SUFFIXES = (".pt", ".npy")


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("HiFi-GAN (mel to wav)")
    group.add_argument("-i", "--input", required=True, nargs="+",
                       help="mel .pt or .npy files, or folders of them (shape: n_mel_channels x frames)")
    group.add_argument("--input-mel-convention", choices=MEL_CONVENTIONS, default=None,
                       help="how the input mels were computed (default: tacotron, common/audio.py's mel)")
    add_vocoder_args(parser, only=MODEL_NAME)


def mel_files(paths: list[str]) -> list[Path]:
    """The .pt and .npy files given, folders expanded to theirs in name order; two that would write one wav are
    refused."""
    files = []
    for given in map(Path, paths):
        if given.is_dir():
            found = sorted(path for path in given.iterdir() if path.suffix in MEL_SUFFIXES)
            if not found:
                raise UserError(f"-i {given}: the folder holds no .pt or .npy mel files")
            files += found
        elif given.is_file():
            if given.suffix not in MEL_SUFFIXES:
                raise UserError(f"-i {given}: expected a .pt or .npy mel file")
            files.append(given)
        else:
            raise UserFileNotFoundError(f"mel file not found: {given} (-i)")
    first_with_stem = {}
    for path in files:
        if first_with_stem.setdefault(path.stem, path) != path:
            raise UserError(f"-i: {first_with_stem[path.stem]} and {path} would both write {path.stem}.wav; "
                            "rename one or vocode them into separate --output folders")
    return files


def read_mel_file(path: Path, n_mel_channels: int) -> torch.Tensor:
    """(1, n_mel_channels, frames) float mel from a .pt or .npy file."""
    if path.suffix == ".pt":
        return read_mel(path, n_mel_channels)
    try:
        mel = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise UserError(f"cannot read mel file {path}: it is damaged or not a saved numpy array") from error
    if mel.ndim == 3 and mel.shape[0] == 1:
        mel = mel[0]
    if mel.ndim != 2 or mel.shape[0] != n_mel_channels or mel.shape[1] < 1 or not np.issubdtype(mel.dtype,
                                                                                                  np.floating):
        raise UserError(f"{path} holds a {mel.dtype} array of shape {mel.shape}, expected a float log mel of shape "
                        f"({n_mel_channels}, frames) for this vocoder")
    return torch.from_numpy(mel.astype(np.float32)).unsqueeze(0)


def run(args: argparse.Namespace) -> None:
    check_inference_args(args)
    args.vocoder = MODEL_NAME  # what common.vocoder.load_vocoder reads; --hifigan is required here
    files = mel_files(args.input)
    device, dtype = inference_device(args), inference_dtype(args)
    vocoder = load_vocoder(args, device, mel_audio_params=None)
    params = vocoder.audio_params
    logger = open_run_logger(args)
    logger.parameters({"vocoder": vocoder.name, "hifigan": args.hifigan, "ema": args.ema, "device": str(device),
                       "precision": str(vocoder.dtype), "chunk_frames": args.chunk_frames,
                       "denoising_strength": args.denoising_strength})

    def vocode(mel: torch.Tensor) -> tuple[torch.Tensor, dict]:
        with Stopwatch(device) as stopwatch:
            with autocast(device, dtype):  # on a GPU the generator itself is cast; this is for --bf16 on a CPU
                audio = vocoder(mel.to(device))
            audio = audio.float().cpu()
        samples = audio.size(1)
        return audio[0], {"latency": stopwatch.seconds, "vocoder_latency": stopwatch.seconds,
                          "samples_per_sec": samples / stopwatch.seconds,
                          "real_time_factor": samples / params.sampling_rate / stopwatch.seconds}

    first = read_mel_file(files[0], params.n_mel_channels)
    if args.benchmark_repeats:
        summary = benchmark(lambda seed: vocode(first)[1], args, averaged=("samples_per_sec", "real_time_factor"))
        logger.log([], {**summary, "mel_frames": first.size(2)})
        logger.close()
        return
    warm_up(lambda seed: vocode(first), args)
    output = Path(args.output)
    for index, path in enumerate(files):
        audio, record = vocode(read_mel_file(path, params.n_mel_channels))
        logger.log([index], {**record, "input": str(path)}, echo=not args.quiet)
        wav_path = output / f"{path.stem}{args.suffix}.wav"
        save_wav(wav_path, audio, params.sampling_rate)
        if not args.quiet:
            print(f"wrote {wav_path} ({audio.numel() / params.sampling_rate:.2f} s)")
    logger.close()
