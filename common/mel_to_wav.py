"""Vocoding mel files: the inference part of every vocoder family (`inference.py -m WaveGlow`, `-m WaveNet`,
`-m HiFiGAN`), made by mel_to_wav_part from the family's VocoderSpec.

    python inference.py -m WaveGlow -i out/mels/ -o out/wavs --waveglow W.pt [-s 0.6 -d 0.01] [--cpu] [--amp|--bf16]

Reads log mels of shape (n_mel_channels, frames) saved as .pt tensors (what `inference.py --save-mels`,
scripts/prepare_mels.sh and scripts/extract_gta_mels.sh write) or .npy arrays (NVIDIA's mel extraction), given
as files or folders of them, and writes <file stem><suffix>.wav for each, one
at a time (padding a batch would change the audio near each mel's end: the vocoders' convolutions see across it).
Each file's noise is drawn from --seed, so a file gives the same audio alone or among others, and the same audio as
text-to-wav with that vocoder and seed at batch size 1.
"""
from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Callable

import torch

from common.audio import save_wav
from common.errors import UserError, UserFileNotFoundError
from common.inference_args import (Stopwatch, autocast, benchmark, check_inference_args, inference_device,
                                   inference_dtype, open_run_logger, warm_up)
from common.inference_part import InferencePart
from common.mel_files import read_mel
from common.vocoder import VocoderSpec, add_vocoder_args, load_vocoder, vocoder_settings_from_args

MEL_SUFFIXES = (".pt", ".npy")


def mel_files(paths: list[str]) -> list[Path]:
    """The .pt and .npy files given, folders expanded to theirs in name order."""
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
    for path in files:  # each names its wav: two with one name would overwrite each other
        if first_with_stem.setdefault(path.stem, path) != path:
            raise UserError(f"-i: {first_with_stem[path.stem]} and {path} would both write {path.stem}.wav; "
                            "rename one or vocode them into separate --output folders")
    return files


def mel_to_wav_part(vocoder: VocoderSpec, add_input_args: Callable[[argparse._ArgumentGroup], None] | None = None,
                    logged: Callable[[argparse.Namespace], dict] | None = None,
                    export_onnx: Callable[[argparse.Namespace, Path], dict[str, float]] | None = None,
                    add_export_args: Callable[[argparse._ArgumentGroup], None] | None = None) -> InferencePart:
    """`inference.py -m <vocoder.name>`: vocode mel files with that vocoder.

    add_input_args(group) adds the family's own input flags; logged(args) -> what it adds to the logged parameters;
    export_onnx, add_export_args: the vocoder's ONNX export and its flags (InferencePart)."""
    return InferencePart(name=vocoder.name,
                         add_args=functools.partial(add_args, vocoder_name=vocoder.name, add_input_args=add_input_args),
                         run=functools.partial(run, vocoder_name=vocoder.name, logged=logged), export_onnx=export_onnx,
                         add_export_args=add_export_args)


def add_args(parser: argparse.ArgumentParser, vocoder_name: str,
             add_input_args: Callable[[argparse._ArgumentGroup], None] | None) -> None:
    group = parser.add_argument_group(f"{vocoder_name} (mel to wav)")
    group.add_argument("-i", "--input", required=True, nargs="+",
                       help="mel .pt or .npy files, or folders of them (shape: n_mel_channels x frames)")
    if add_input_args is not None:
        add_input_args(group)
    add_vocoder_args(parser, only=vocoder_name)


def run(args: argparse.Namespace, vocoder_name: str, logged: Callable[[argparse.Namespace], dict] | None) -> None:
    check_inference_args(args)
    files = mel_files(args.input)
    device, dtype = inference_device(args), inference_dtype(args)
    vocoder = load_vocoder(vocoder_settings_from_args(args, only=vocoder_name), device, dtype, mel_audio_params=None)
    params = vocoder.audio_params
    logger = open_run_logger(args)
    logger.parameters({"vocoder": vocoder.name, "device": str(device), "precision": str(dtype),
                       **(logged(args) if logged is not None else {})})

    @torch.no_grad()
    def vocode(mel: torch.Tensor) -> tuple[torch.Tensor, dict]:
        with Stopwatch(device) as stopwatch:
            with autocast(device, dtype):
                audio = vocoder(mel.to(device))
            audio = audio.float().cpu()
        samples = audio.size(1)
        return audio[0], {"latency": stopwatch.seconds, "vocoder_latency": stopwatch.seconds,
                          "samples_per_sec": samples / stopwatch.seconds,
                          "real_time_factor": samples / params.sampling_rate / stopwatch.seconds}

    first = read_mel(files[0], params.n_mel_channels).unsqueeze(0)
    if args.benchmark_repeats:
        summary = benchmark(lambda seed: vocode(first)[1], args, averaged=("samples_per_sec", "real_time_factor"))
        logger.log([], {**summary, "mel_frames": first.size(2)})
        logger.close()
        return
    warm_up(lambda seed: vocode(first), args)
    output = Path(args.output)
    for index, path in enumerate(files):
        audio, record = vocode(read_mel(path, params.n_mel_channels).unsqueeze(0))
        logger.log([index], {**record, "input": str(path)}, echo=not args.quiet)
        wav_path = output / f"{path.stem}{args.suffix}.wav"
        save_wav(wav_path, audio, params.sampling_rate)
        if not args.quiet:
            print(f"wrote {wav_path} ({audio.numel() / params.sampling_rate:.2f} s)")
    logger.close()
