"""Summarise a demo run, with an objective check that the synthesized speech follows its text:

    python -m scripts.report_demo --log output/demo/nvlog.json --inference-log output/demo/wavs/nvlog.json \
        --wavs output/demo/wavs --phrases phrases/phrase.txt

The corpus voice is eSpeak NG, so eSpeak NG saying the same line is a reference rendering. For each line, the
synthesized mel is aligned to that reference by dynamic time warping; its mean per-frame distance is compared with
the distance to eSpeak NG saying the *other* lines. Speech that follows its text is nearer its own reference than
the others ("matched" < "mismatched"); babble is not.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import librosa
import numpy as np
import torch

from common.audio import MelSpectrogram, load_wav
from common.logger import read_dllogger_file


def dtw_distance(mel_a: np.ndarray, mel_b: np.ndarray) -> float:
    """Mean Euclidean distance between log-mel frames along the best monotonic alignment."""
    cost, path = librosa.sequence.dtw(X=mel_a, Y=mel_b, metric="euclidean")
    return float(cost[-1, -1] / len(path))


def reference_check(wavs: Path, phrases: list[str], voice: str = "en-us") -> list[tuple[int, float, float]]:
    """(line number, distance to its own eSpeak rendering, mean distance to the other lines' renderings)."""
    from scripts.data.espeak import synthesize

    if len(phrases) < 2:  # nothing to compare with
        return []
    mel_spectrogram = MelSpectrogram()
    references = [mel_spectrogram(torch.from_numpy(synthesize(text, voice=voice)[0]))[0].numpy() for text in phrases]
    results = []
    for line, _ in enumerate(phrases, start=1):
        wav = wavs / f"audio_{line}.wav"
        if not wav.exists():
            continue
        mel = mel_spectrogram(load_wav(wav, 22050))[0].numpy()
        distances = [dtw_distance(mel, reference) for reference in references]
        others = [d for index, d in enumerate(distances) if index != line - 1]
        results.append((line, distances[line - 1], float(np.mean(others))))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="the training DLLogger file")
    parser.add_argument("--inference-log", required=True, help="the inference DLLogger file")
    parser.add_argument("--wavs", required=True)
    parser.add_argument("--phrases", required=True, help="the text file that was synthesized")
    parser.add_argument("--seconds", type=int, default=None, help="wall time of the whole demo")
    parser.add_argument("--voice", default="en-us", help="the eSpeak NG voice of the corpus (the reference renderings)")
    args = parser.parse_args()

    # [epoch] records: validation runs at the end and every --val-interval-epochs, so their epoch, not their count
    validations = [r for r in read_dllogger_file(args.log) if r["type"] == "LOG" and "val_loss" in r["data"]
                   and isinstance(r["step"], list) and len(r["step"]) == 1]
    synthesized = [r["data"] for r in read_dllogger_file(args.inference_log)
                   if r["type"] == "LOG" and "alignment_score" in r["data"]]
    print("\n== Demo summary ==")
    if args.seconds is not None:
        print(f"wall time: {args.seconds // 60} min {args.seconds % 60} s")
    if validations:
        epochs, last = validations[-1]["step"][0], validations[-1]["data"]
        print(f"epochs: {epochs}; final validation loss {last['val_loss']:.4f}; validation "
              f"alignment-health score {last.get('alignment_score', float('nan')):.3f} (aligned above ~0.7)")
    if synthesized:
        scores = [record["alignment_score"] for record in synthesized]
        print(f"alignment-health score of the synthesized phrases: {sum(scores) / len(scores):.3f}")
    phrases = [line.strip() for line in Path(args.phrases).read_text().splitlines() if line.strip()]
    checks = reference_check(Path(args.wavs), phrases, args.voice)
    if len(phrases) > 1 and checks:
        print("distance to eSpeak NG saying the same line vs. the other lines (lower = closer):")
        for line, matched, mismatched in checks:
            print(f"  line {line}: matched {matched:.2f}, mismatched {mismatched:.2f}"
                  f"{'' if matched < mismatched else '  <- not closer to its own text'}")
        following = sum(matched < mismatched for _, matched, mismatched in checks)
        print(f"{following} of {len(checks)} lines are closer to their own text than to the others")
    wavs = sorted(Path(args.wavs).glob("*.wav"))
    print(f"{len(wavs)} wav files and alignment plots in {args.wavs}/")


if __name__ == "__main__":
    main()
