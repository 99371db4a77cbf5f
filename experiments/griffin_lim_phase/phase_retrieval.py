"""Where fast Griffin-Lim starts its phase: at random, or from Phase Gradient Heap Integration's estimate
(common/audio.py). eSpeak NG speaks each line of a text file; its own STFT magnitude (no mel: the phase is all that
is missing) goes through griffin_lim_phase from each start and for each iteration count, and the audio is scored by
its spectral convergence, the time its phase took, and what a recognizer hears in it:

    python -m experiments.griffin_lim_phase.phase_retrieval --judge moonshine \
        --texts scripts/data/everyday_sentences.txt --limit 50 --iterations 0 16 32 100 [-o DIR]

Spectral convergence is the distance between the audio's STFT magnitude and the magnitude it was given, after the
best gain, relative to that magnitude, in dB (lower is closer). The judge's flags are scripts/intelligibility.py's
(--judge moonshine, or --asr CKPT). It prints a Markdown table; -o keeps each row's wavs and phase_retrieval.json.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch

from common.arguments import non_negative_int, positive_int
from common.audio import PHASE_INITS, AudioParams, MelSpectrogram, griffin_lim_phase, load_wav, save_wav
from common.errors import exit_on_user_error
from scripts.intelligibility import (ESPEAK_RATE, ESPEAK_VOICE, add_judge_args, check_judge_args, judge_from_args,
                                     numbered_lines, render_with_espeak)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--texts", required=True, help="a text file, one sentence per line")
    parser.add_argument("--limit", type=positive_int, default=50, help="its first LIMIT lines (default: %(default)s)")
    parser.add_argument("--iterations", type=non_negative_int, nargs="+", default=[0, 16, 32, 100],
                        help="fast Griffin-Lim's iteration counts (default: %(default)s)")
    parser.add_argument("--phase-inits", choices=PHASE_INITS, nargs="+", default=list(PHASE_INITS),
                        help="where the phase starts (default: %(default)s)")
    parser.add_argument("-o", "--output", default=None, help="keep each row's wavs and phase_retrieval.json here")
    parser.add_argument("--quiet", action="store_true", help="print only the table")
    add_judge_args(parser)
    return parser


def spectral_convergence_db(audio: torch.Tensor, magnitude: torch.Tensor, mel_spectrogram: MelSpectrogram) -> float:
    rebuilt = mel_spectrogram.magnitude(audio)[..., : magnitude.shape[-1]]
    gain = (rebuilt * magnitude).sum() / (rebuilt * rebuilt).sum().clamp(min=1e-30)
    return 20 * math.log10(float((gain * rebuilt - magnitude).norm() / magnitude.norm()))


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    check_judge_args(args)
    output = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="phase_retrieval_"))
    lines = list(numbered_lines(Path(args.texts)).items())[: args.limit]
    recordings = render_with_espeak([(number, text, None) for number, text in lines], output / "espeak",
                                    ESPEAK_VOICE, ESPEAK_RATE)
    params = AudioParams()
    mel_spectrogram = MelSpectrogram(params)
    magnitudes = [mel_spectrogram.magnitude(load_wav(path, params.sampling_rate).unsqueeze(0))
                  for _, _, path in recordings]
    judged = judge_from_args(args)
    report = {"texts": args.texts, "sentences": len(lines), "judge": args.judge, "asr": args.asr,
              "frames": sum(magnitude.shape[-1] for magnitude in magnitudes), "rows": []}
    rows = [(None, None, None, recordings)]  # eSpeak NG itself
    with torch.no_grad():
        for phase_init in args.phase_inits:
            for iterations in args.iterations:
                started = time.perf_counter()
                audios = [griffin_lim_phase(magnitude, params, iterations, phase_init=phase_init)
                          for magnitude in magnitudes]
                seconds = time.perf_counter() - started
                convergence = sum(spectral_convergence_db(audio, magnitude, mel_spectrogram)
                                  for audio, magnitude in zip(audios, magnitudes)) / len(audios)
                folder = output / f"{phase_init}_{iterations}"
                folder.mkdir(parents=True, exist_ok=True)
                pairs = []
                for (number, text, _), audio in zip(recordings, audios):
                    save_wav(folder / f"audio_{number}.wav", audio[0], params.sampling_rate)
                    pairs.append((number, text, folder / f"audio_{number}.wav"))
                rows.append((phase_init, iterations, (convergence, seconds), pairs))
    print(f"{len(lines)} lines of {args.texts} ({report['frames']} frames), eSpeak NG's STFT magnitudes, heard by "
          f"{args.asr or 'Moonshine base'}")
    print("| phase start | iterations | spectral convergence, dB | seconds | CER % | WER % |")
    print("| --- | --- | --- | --- | --- | --- |")
    for phase_init, iterations, scores, pairs in rows:
        result = judged(pairs)
        row = {"phase_init": phase_init, "iterations": iterations, **result}
        if scores is None:
            print(f"| eSpeak NG itself | | | | {result['cer']:.2f} | {result['wer']:.2f} |", flush=True)
        else:
            row["spectral_convergence_db"], row["seconds"] = scores
            print(f"| {phase_init} | {iterations} | {scores[0]:.2f} | {scores[1]:.2f} | {result['cer']:.2f} | "
                  f"{result['wer']:.2f} |", flush=True)
        report["rows"].append(row)
    if args.output:
        (output / "phase_retrieval.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        if not args.quiet:
            print(f"wrote {output / 'phase_retrieval.json'}")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
