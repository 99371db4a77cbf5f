"""Long recordings through the recognizer: the same words read in chunks as one by one, and the memory it takes.

    python -m experiments.wav2vec2_long_audio.measure_long_audio \
        --checkpoint output/demo_asr/checkpoint_wav2vec2_best.pt \
        --manifests data/asr/test_sentences.tsv data/asr/test_voice.tsv -o output/long_audio.json

Joins the utterances of the manifests, in order, with --pause seconds of silence between them, into one recording
(the two demo test sets: 200 eSpeak NG sentences, about 10 minutes), and reports the greedy CER and WER of:
- each utterance alone, the hypotheses joined (the reference: what the model says of the same audio in pieces it
  was trained on);
- the whole recording through Recognizer.transcribe, read in chunks of --chunk-seconds with --context-seconds on
  either side, for each pair given;
- the first --whole-seconds of the recording read whole (no chunks), chunked, and its utterances alone;
- the first --memory-spans seconds read in the default chunks, for the peak memory against length.
Each reading runs in its own process, which reports its resident memory before the reading (the recording and the
model loaded), its peak (ru_maxrss) and its time. letter_cer is
the CER of the letters alone (spaces dropped): what is left when merged or split words are not counted.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from common.cpu import cpu_description
from wav2vec2.api import SAMPLING_RATE, Recognizer
from wav2vec2.decoding import error_counts, error_rates
from wav2vec2.inference import read_inputs


def recording(manifests: list[str], pause: float) -> tuple[np.ndarray, list[str], list[np.ndarray]]:
    """(the joined recording, each utterance's words, each utterance's audio)."""
    pieces, words = [], []
    for manifest in manifests:
        for utterance in read_inputs([manifest], SAMPLING_RATE):
            pieces.append(utterance.audio.numpy())
            words.append(utterance.reference)
    silence = np.zeros(round(pause * SAMPLING_RATE), dtype=np.float32)
    joined = [part for piece in pieces for part in (piece, silence)][:-1]
    return np.concatenate(joined), words, pieces


def read_once(args: argparse.Namespace) -> dict:
    """One reading, in this process: --mode alone | chunked | whole."""
    audio, words, pieces = recording(args.manifests, args.pause)
    recognizer = Recognizer.from_checkpoint(args.checkpoint, device="cpu", batch_size=args.batch_size,
                                            chunk_seconds=args.chunk_seconds, context_seconds=args.context_seconds)
    if args.span_seconds:  # the first span_seconds of the recording: the utterances wholly inside it
        ends = np.cumsum([len(piece) + round(args.pause * SAMPLING_RATE) for piece in pieces])
        inside = int(np.searchsorted(ends, args.span_seconds * SAMPLING_RATE, side="right"))
        audio = audio[:ends[inside - 1] - round(args.pause * SAMPLING_RATE)]
        words, pieces = words[:inside], pieces[:inside]
    rss_before = current_rss_mib()
    start = time.perf_counter()
    if args.mode == "alone":
        hypothesis = " ".join(recognizer.transcribe(pieces))
    else:
        (hypothesis,) = recognizer.transcribe([audio])
    seconds = time.perf_counter() - start
    reference = " ".join(words)
    rates = error_rates(error_counts([reference], [hypothesis]))
    # The letters alone: a reading that merges or splits words differs here only by its letters.
    letters = error_rates(error_counts([reference.replace(" ", "")], [hypothesis.replace(" ", "")]))
    return {"mode": args.mode, "chunk_seconds": args.chunk_seconds, "context_seconds": args.context_seconds,
            "audio_seconds": round(len(audio) / SAMPLING_RATE, 1), "cer": round(rates["cer"], 2),
            "wer": round(rates["wer"], 2), "letter_cer": round(letters["cer"], 2), "seconds": round(seconds, 1),
            "rss_before_mib": rss_before,
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def current_rss_mib() -> int:
    """The resident memory now (the recording and the model loaded), from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024)
    return 0


def in_subprocess(args: argparse.Namespace, **changes) -> dict:
    argv = [sys.executable, "-m", "experiments.wav2vec2_long_audio.measure_long_audio", "--one",
            "--checkpoint", args.checkpoint, "--manifests", *args.manifests, "--pause", str(args.pause),
            "--batch-size", str(args.batch_size)]
    for key, value in changes.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    completed = subprocess.run(argv, capture_output=True, text=True, check=True)
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--manifests", nargs="+", required=True)
    parser.add_argument("--pause", type=float, default=0.3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--chunks", nargs="+", default=["30:5", "15:2.5", "10:2"],
                        help="chunk:context seconds pairs to read the whole recording with")
    parser.add_argument("--whole-seconds", type=float, default=60.0)
    parser.add_argument("--memory-spans", type=float, nargs="*", default=[150.0, 300.0])
    parser.add_argument("-o", "--output", default=None)
    # one reading, in a child process
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="chunked", choices=("alone", "chunked", "whole"), help=argparse.SUPPRESS)
    parser.add_argument("--chunk-seconds", type=float, default=30.0, help=argparse.SUPPRESS)
    parser.add_argument("--context-seconds", type=float, default=5.0, help=argparse.SUPPRESS)
    parser.add_argument("--span-seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    torch.set_num_threads(torch.get_num_threads())
    if args.one:
        print(json.dumps(read_once(args)))
        return
    rows = [in_subprocess(args, mode="alone")]
    for pair in args.chunks:
        chunk, context = pair.split(":")
        rows.append(in_subprocess(args, mode="chunked", chunk_seconds=chunk, context_seconds=context))
    for mode in ("alone", "whole", "chunked"):
        rows.append(in_subprocess(args, mode=mode, span_seconds=args.whole_seconds,
                                  **({"chunk_seconds": 0} if mode == "whole" else {})))
    for span in args.memory_spans:  # the default chunks: peak memory against length
        rows.append(in_subprocess(args, mode="chunked", span_seconds=span))
    report = {"machine": cpu_description(), "checkpoint": args.checkpoint, "manifests": args.manifests, "rows": rows}
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
