"""Text to speech with Tacotron 2: `python inference.py [-m Tacotron2] -i phrases/phrase.txt -o out/ --tacotron2 T.pt
[--waveglow W.pt | --wavenet N.pt | --hifigan H.pt | --vocoder NAME --vocoder-checkpoint CKPT]` (Griffin-Lim without
a vocoder); `--text "Hello there." [--text ...]` instead of -i says the texts given, and `-i -` reads standard input.

Writes audio_<line number><suffix>.wav per non-empty input line (line numbers start at 1, in input order; the Nth
--text is line N), alignment_<line number><suffix>.png with --save-alignments, mel_<line number><suffix>.pt with
--save-mels (the input of `inference.py -m WaveGlow`), and the timings to the DLLogger --log-file. A line of several
sentences is said a sentence at a time and joined with --sentence-pause of silence (a sentence too long for the
decoder cut at its commas, then between words); with --save-alignments each such piece has its own
alignment_<line number>_<piece><suffix>.png. The synthesis itself is tacotron2/api.py's Synthesizer (the Python
API); this is its command line.

NVIDIA's Tacotron 2 inference.py command line (its README's: `--fp16` is --amp, `-sr` and `--stft-hop-length` are
the checkpoint's) and its HiFi-GAN scripts/inference_example.sh (FastPitch + HiFi-GAN through that model's
inference.py) parse here with the same meaning where there is one (add_reference_args, translate_argv): -i also
takes its .tsv filelists (the `text` column), and --warmup-steps, --repeats, --cudnn-benchmark, --cuda are every
part's (common/inference_args.py). FastPitch is not part of this framework: --fastpitch is refused, naming
--tacotron2 instead.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from common.arguments import (add_compatibility_flags, add_dataclass_args, add_reference_names, compatibility_group,
                              read_reference_spellings)
from common.audio import AudioParams, save_wav
from common.errors import UserError, UserFileNotFoundError
from common.filelist import read_text_file
from common.inference_args import RefusedFlag, benchmark, check_inference_args, open_run_logger, warm_up
from common.inference_part import InferencePart
from common.logger import plot_to_image
from common.vocoder import add_vocoder_args
from tacotron2 import export
from tacotron2.api import SynthesisSettings, Synthesizer
from tacotron2.recipe import RECIPE


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Tacotron 2 (text to mel)")
    texts = group.add_mutually_exclusive_group(required=True)
    texts.add_argument("-i", "--input",
                       help="text file, one utterance per line (-: standard input), or a .tsv with a header line "
                            "naming a `text` column (NVIDIA's FastPitch/HiFi-GAN filelists)")
    texts.add_argument("--text", action="append", metavar="TEXT",
                       help="a text to say, written to audio_<N>.wav for the Nth --text (repeatable)")
    group.add_argument("--tacotron2", required=True, help="Tacotron 2 checkpoint (ours or NVIDIA's published one)")
    add_dataclass_args(group, SynthesisSettings)
    group.add_argument("--save-alignments", action="store_true", help="write an alignment PNG per utterance")
    group.add_argument("--save-mels", action="store_true",
                       help="write each utterance's mel as mel_<line number><suffix>.pt (for inference.py -m WaveGlow)")
    add_vocoder_args(parser)
    add_reference_args(parser)


def only_speaker_zero(text: str) -> int:
    if int(text) != 0:
        raise argparse.ArgumentTypeError(f"Tacotron 2 here has one speaker, 0; got {text}")
    return 0


# NVIDIA's names of this part's flags (Tacotron 2's inference.py).
REFERENCE_FLAG_NAMES = {"--fp16": "--amp"}
# Flags of NVIDIA's Tacotron 2 inference.py and of its HiFi-GAN/FastPitch one (scripts/inference_example.sh) with
# nothing to do here.
COMPATIBILITY_FLAGS = {
    "--stft_hop_length": dict(type=int, metavar="N", help="the hop length is the Tacotron 2 checkpoint's (NVIDIA's "
                                                          "must equal it too)"),
    "--speaker": dict(type=only_speaker_zero, metavar="ID", help="0 only: a multi-speaker FastPitch's speaker; "
                                                                 "Tacotron 2 here has one"),
    "--p_arpabet": dict(type=float, metavar="P", help="the text front-end (ARPAbet included) is the one the Tacotron "
                                                      "2 checkpoint was trained with, as NVIDIA's takes p_arpabet "
                                                      "from its checkpoints"),
    "--dataset_path": dict(metavar="DIR", help="where a .tsv's mel and pitch columns are, which NVIDIA's reads only "
                                               "to vocode ground-truth mels (here: -m HiFiGAN -i MELS) or report a "
                                               "mel loss; text to wav reads only the text"),
}


def add_reference_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fastpitch", action=RefusedFlag, nargs=1, metavar="CKPT",
                        why="FastPitch is not part of this framework: give a Tacotron 2 checkpoint with --tacotron2 "
                            "(the vocoder flags stay as they are), or vocode mel files with -m HiFiGAN",
                        help="refused: FastPitch is not part of this framework (use --tacotron2)")
    add_compatibility_flags(parser, COMPATIBILITY_FLAGS)
    compatibility_group(parser).add_argument(  # "-sr" is one flag, not -s with the value "r"
        "-sr", "--sampling_rate", "--sampling-rate", dest="compat_sampling_rate", type=int, metavar="HZ",
        help="compatibility only: the wavs are written at the Tacotron 2 checkpoint's rate (NVIDIA's only labels "
             "the wav with this one)")
    add_reference_names(parser, REFERENCE_FLAG_NAMES)


def translate_argv(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """NVIDIA's command line -> this part's: REFERENCE_FLAG_NAMES, and `--flag_name` to `--flag-name`."""
    return read_reference_spellings(argv, parser, REFERENCE_FLAG_NAMES)


def tsv_text_column(path: Path, lines: list[str]) -> list[str]:
    """The `text` field of each line of a .tsv whose first line names the columns (NVIDIA's FastPitch/HiFi-GAN
    inference filelists: mel, output, text); the header becomes an empty line, so line numbers stay the file's."""
    columns = lines[0].split("\t")
    if "text" not in columns:
        raise UserError(f"-i {path}: a .tsv's first line names its columns, and one must be `text`; got {lines[0]!r}")
    column = columns.index("text")
    texts = [""]
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if line.strip() and len(fields) != len(columns):
            raise UserError(f"-i {path}:{number}: {len(fields)} fields, but the header names {len(columns)}")
        texts.append(fields[column] if line.strip() else "")
    return texts


def read_phrases(path: str) -> list[tuple[int, str]]:
    """(line number, text) for each non-empty line of a file, or of standard input for "-"."""
    if path == "-":
        lines = sys.stdin.read().splitlines()
    else:
        if not Path(path).is_file():
            raise UserFileNotFoundError(f"input file not found: {path} (-i)")
        lines = read_text_file(Path(path), "-i").splitlines()
        if Path(path).suffix == ".tsv" and lines:
            lines = tsv_text_column(Path(path), lines)
    phrases = [(number, line.strip()) for number, line in enumerate(lines, 1) if line.strip()]
    if not phrases:
        raise UserError(f"{'standard input' if path == '-' else f'input file {path}'} has no text (-i): give one "
                        "utterance per line")
    return phrases


def texts_given(args: argparse.Namespace) -> tuple[list[tuple[int, str]], str]:
    """(number, text) of each utterance -i or --text gives, and how messages name them (`phrases.txt:3`)."""
    if args.text is None:
        return read_phrases(args.input), ("<stdin>" if args.input == "-" else args.input) + ":{}"
    for number, text in enumerate(args.text, 1):
        if not text.strip():
            raise UserError(f"--text number {number} is empty: give the words to say")
    return [(number, text.strip()) for number, text in enumerate(args.text, 1)], "--text {}"


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
    phrases, source_of = texts_given(args)
    synthesizer = Synthesizer.from_args(args)
    output = Path(args.output)
    logger = open_run_logger(args)
    logger.parameters({"tacotron2": args.tacotron2, "vocoder": synthesizer.vocoder.name,
                       "device": str(synthesizer.device), "precision": str(synthesizer.dtype),
                       "decoder": synthesizer.decoder_path, "batch_size": args.batch_size})
    pieces = synthesizer.pieces([text for _, text in phrases], [source_of.format(number) for number, _ in phrases])
    first_batch = pieces[:args.batch_size]

    def synthesize(batch, seed):
        return synthesizer.synthesize_batch([piece.text for piece in batch], [piece.source for piece in batch], seed)

    if args.benchmark_repeats:
        summary = benchmark(lambda seed: throughput_record(synthesize(first_batch, seed), synthesizer.audio_params),
                            args, averaged=("tacotron2_latency", "vocoder_latency", "samples_per_sec",
                                            "real_time_factor", "tacotron2_mel_frames_per_sec", "mel_frames"))
        summary["batch_size"] = len(first_batch)
        summary["input_characters"] = int(sum(len(piece.text) for piece in first_batch) / len(first_batch))
        logger.log([], summary)
        logger.close()
        return

    warm_up(lambda seed: synthesize(first_batch, seed), args)
    sampling_rate = synthesizer.audio_params.sampling_rate
    audio_parts: list[torch.Tensor] = []  # the pieces of the line being said
    mel_parts: list[torch.Tensor] = []
    for index, (batch, result) in enumerate(synthesizer.synthesize_pieces(pieces, args.seed)):
        logger.log([index], throughput_record(result, synthesizer.audio_params), echo=not args.quiet)
        for row, piece in enumerate(batch):
            line_number = phrases[piece.utterance][0]
            audio_parts.append(result["audio"][row, :int(result["audio_lengths"][row])])
            mel_parts.append(result["mel"][row, :, :int(result["mel_lengths"][row])].cpu())
            if args.save_alignments:
                part = "" if piece.parts == 1 else f"_{piece.part}"
                save_alignment(result, row, synthesizer.tacotron2.n_frames_per_step,
                               output / f"alignment_{line_number}{part}{args.suffix}.png",
                               title=f"line {line_number}" + (f", part {piece.part}" if part else ""))
            if piece.part < piece.parts:
                continue
            audio = synthesizer.join(audio_parts)
            wav_path = output / f"audio_{line_number}{args.suffix}.wav"
            save_wav(wav_path, audio, sampling_rate)
            if args.save_mels:
                torch.save(synthesizer.join(mel_parts).clone(), output / f"mel_{line_number}{args.suffix}.pt")
            if not args.quiet:
                print(f"wrote {wav_path} ({audio.numel() / sampling_rate:.2f} s"
                      + (f", {piece.parts} pieces)" if piece.parts > 1 else ")"))
            audio_parts, mel_parts = [], []
    logger.close()


INFERENCE = InferencePart(name=RECIPE.name, add_args=add_args, run=run, translate_argv=translate_argv,
                          export_onnx=export.export_checkpoint)
