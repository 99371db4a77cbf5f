"""Text to speech with Tacotron 2: `python inference.py [-m Tacotron2] -i phrases/phrase.txt -o out/ --tacotron2 T.pt
[--waveglow W.pt | --wavenet N.pt | --hifigan H.pt | --vocoder NAME --vocoder-checkpoint CKPT]` (Griffin-Lim without
a vocoder).

Writes audio_<line number><suffix>.wav per non-empty input line (line numbers start at 1, in input order),
alignment_<line number><suffix>.png with --save-alignments, mel_<line number><suffix>.pt with --save-mels (the input
of `inference.py -m WaveGlow`), and the timings to the DLLogger --log-file. The synthesis itself is tacotron2/api.py's
Synthesizer (the Python API); this is its command line.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from common.audio import AudioParams, save_wav
from common.errors import UserError, UserFileNotFoundError
from common.filelist import read_text_file
from common.inference_args import benchmark, check_inference_args, open_run_logger, warm_up
from common.inference_part import InferencePart
from common.logger import plot_to_image
from common.vocoder import add_vocoder_args
from tacotron2.api import Synthesizer
from tacotron2.recipe import RECIPE


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Tacotron 2 (text to mel)")
    group.add_argument("-i", "--input", required=True, help="text file, one utterance per line")
    group.add_argument("--tacotron2", required=True, help="Tacotron 2 checkpoint (ours or NVIDIA's published one)")
    group.add_argument("--torchscript", action=argparse.BooleanOptionalAction, default=None,
                       help="run Tacotron 2 through TorchScript (default: on with --cpu)")
    group.add_argument("--fast-decoder", action=argparse.BooleanOptionalAction, default=False,
                       help="the decoder step rearranged for speed, equal to rounding (tacotron2/model.py: "
                            "fast_inference_step); --compile implies it")
    group.add_argument("-bs", "--batch-size", type=int, default=8, help="utterances synthesized together")
    group.add_argument("--max-decoder-steps", type=int, default=None, help="default: the checkpoint's")
    group.add_argument("--gate-threshold", type=float, default=None, help="default: the checkpoint's")
    group.add_argument("--save-alignments", action="store_true", help="write an alignment PNG per utterance")
    group.add_argument("--save-mels", action="store_true",
                       help="write each utterance's mel as mel_<line number><suffix>.pt (for inference.py -m WaveGlow)")
    add_vocoder_args(parser)


def read_phrases(path: str | Path) -> list[tuple[int, str]]:
    """(line number, text) for each non-empty line."""
    path = Path(path)
    if not path.is_file():
        raise UserFileNotFoundError(f"input file not found: {path} (-i)")
    phrases = [(number, line.strip()) for number, line in enumerate(read_text_file(path, "-i").splitlines(), 1)
               if line.strip()]
    if not phrases:
        raise UserError(f"input file {path} has no text (-i): give one utterance per line")
    return phrases


def throughput_record(result: dict, audio_params: AudioParams) -> dict:
    timings = result["timings"]
    mel_frames = int(result["mel_lengths"].sum())
    samples = int(result["audio_lengths"].sum())
    audio_seconds = samples / audio_params.sampling_rate
    return {**{f"{stage}_latency": seconds for stage, seconds in timings.items() if stage != "latency"},
            "latency": timings["latency"],
            "mel_frames": mel_frames,
            "tacotron2_mel_frames_per_sec": mel_frames / timings["tacotron2"],
            "vocoder_samples_per_sec": samples / timings["vocoder"],
            "samples_per_sec": samples / timings["latency"],
            "audio_seconds": audio_seconds,
            "real_time_factor": audio_seconds / timings["latency"],
            "alignment_score": result["alignment_score"]}


def save_alignment(result: dict, row: int, n_frames_per_step: int, path: Path, title: str) -> None:
    import matplotlib.pyplot as plt  # imported late: slow, and only needed here

    steps = -(-int(result["mel_lengths"][row]) // n_frames_per_step)
    alignment = result["alignments"][row, :steps, : int(result["text_lengths"][row])].float().cpu()
    plt.imsave(path, plot_to_image(alignment.numpy().T, title=title, xlabel="decoder step", ylabel="encoder step"))


def run(args: argparse.Namespace) -> None:
    check_inference_args(args)
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    phrases = read_phrases(args.input)
    synthesizer = Synthesizer(args)
    output = Path(args.output)
    logger = open_run_logger(args)
    logger.parameters({"tacotron2": args.tacotron2, "vocoder": synthesizer.vocoder.name, "device":
                       str(synthesizer.device), "precision": str(synthesizer.dtype), "batch_size": args.batch_size})
    batches = [phrases[start:start + args.batch_size] for start in range(0, len(phrases), args.batch_size)]

    def synthesize(batch, seed):
        return synthesizer.synthesize_batch([text for _, text in batch], [f"{args.input}:{n}" for n, _ in batch], seed)

    if args.benchmark_repeats:
        summary = benchmark(lambda seed: throughput_record(synthesize(batches[0], seed), synthesizer.audio_params),
                            args, averaged=("tacotron2_latency", "vocoder_latency", "samples_per_sec",
                                            "real_time_factor", "tacotron2_mel_frames_per_sec", "mel_frames"))
        summary["batch_size"] = len(batches[0])
        summary["input_characters"] = int(sum(len(text) for _, text in batches[0]) / len(batches[0]))
        logger.log([], summary)
        logger.close()
        return

    warm_up(lambda seed: synthesize(batches[0], seed), args)
    sampling_rate = synthesizer.audio_params.sampling_rate
    for index, batch in enumerate(batches):
        result = synthesize(batch, args.seed + index)
        logger.log([index], throughput_record(result, synthesizer.audio_params), echo=not args.quiet)
        for row, (line_number, _) in enumerate(batch):
            length = int(result["audio_lengths"][row])
            wav_path = output / f"audio_{line_number}{args.suffix}.wav"
            save_wav(wav_path, result["audio"][row, :length], sampling_rate)
            if args.save_mels:
                frames = int(result["mel_lengths"][row])
                torch.save(result["mel"][row, :, :frames].cpu().clone(), output / f"mel_{line_number}{args.suffix}.pt")
            if args.save_alignments:
                save_alignment(result, row, synthesizer.tacotron2.n_frames_per_step,
                               output / f"alignment_{line_number}{args.suffix}.png", title=f"line {line_number}")
            if not args.quiet:
                print(f"wrote {wav_path} ({length / sampling_rate:.2f} s)")
    logger.close()


INFERENCE = InferencePart(name=RECIPE.name, add_args=add_args, run=run)
