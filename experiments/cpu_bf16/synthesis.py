"""Text to speech in bf16 autocast (and int8) against fp32 on the CPU, with the same trained weights: how much faster,
how far the mels move, and whether Moonshine base, which nobody here trained, hears the same words.

    python -m experiments.cpu_bf16.synthesis --tacotron2 output/demo/checkpoint_Tacotron2_last.pt \
        --vocoder output/demo/melinverter/checkpoint_MelInverter_last.pt --texts output/demo/everyday_plain.txt \
        [--variants fp32 bf16 int8 fp16-lstm] [--seeds 1234 1 2] [--batch-size 8]

Every line is synthesized alone (or in batches of --batch-size) in each variant (fp32: the fast decoder all in float32,
--no-half-lstm-weights; bf16: --bf16; int8: --quantize int8; fp16-lstm: --half-lstm-weights, the CPU's default: 16-bit
LSTM weights, float16 at one or two lines, bf16 at more where it is native) at each seed, the variants taking turns
batch by batch so that a change in the machine's load falls on all of them. fp32 at several seeds says how far a
change of seed alone (the prenet's dropout) moves Moonshine's CER: the yardstick for the others. The vocoder is also
run alone in each precision on fp32's own mels. Printed (and written with --json): per variant and seed the seconds
of each stage, the lines that ran to --max-decoder-steps, the mean alignment score and Moonshine's CER and WER; per
variant how its mels differ from fp32's at the same seed (lengths, and values over the frames both have).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import soundfile
import torch

from common.cpu import cpu_description, native_bf16
from experiments.cpu_bf16 import write_report
from common.inference_args import autocast
from scripts.intelligibility import evaluate_with_moonshine, numbered_lines
from tacotron2.api import Synthesizer

VARIANTS = {"fp32": {"precision": "fp32", "half_lstm_weights": False}, "bf16": {"precision": "bf16"},
            "int8": {"precision": "fp32", "quantize": "int8"},
            "fp16-lstm": {"precision": "fp32", "half_lstm_weights": True}}


def synthesize_in_turn(synthesizers: dict[str, Synthesizer], lines: dict[int, str], seed: int,
                       batch_size: int = 1) -> dict[str, list]:
    """The lines in batches of batch_size in each variant, the variants taking turns batch by batch: {variant:
    [one result per line, as synthesize_batch gives a batch of one, its batch's timings shared out]}."""
    results = {name: [] for name in synthesizers}
    numbers = list(lines)
    for first in range(0, len(numbers), batch_size):
        batch = numbers[first:first + batch_size]
        for name, synthesizer in synthesizers.items():
            result = synthesizer.synthesize_batch([lines[number] for number in batch],
                                                  [f"line {number}" for number in batch], seed=seed,
                                                  warn_max_steps=False)
            for row in range(len(batch)):
                results[name].append({
                    **{key: result[key][row:row + 1] for key in ("mel", "mel_lengths", "audio", "audio_lengths")},
                    "timings": {stage: seconds / len(batch) for stage, seconds in result["timings"].items()},
                    "alignment_score": result["alignment_score"]})
    return results


def vocoder_seconds(synthesizers: dict[str, Synthesizer], mels: list[torch.Tensor]) -> dict[str, float]:
    """Each variant's vocoder, in its precision, on the same (fp32's) mels."""
    seconds = {name: 0.0 for name in synthesizers}
    for mel in mels:
        for name, synthesizer in synthesizers.items():
            start = time.perf_counter()
            with torch.no_grad(), autocast(synthesizer.device, synthesizer.dtype):
                synthesizer.vocoder(mel)
            seconds[name] += time.perf_counter() - start
    return seconds


def mel_differences(reference: list[dict], other: list[dict]) -> dict:
    """How one variant's mels differ from fp32's at the same seed: lengths, and values over the frames both have."""
    length_changes, largest, total, frames = [], 0.0, 0.0, 0
    for fp32, result in zip(reference, other):
        fp32_length, length = int(fp32["mel_lengths"][0]), int(result["mel_lengths"][0])
        length_changes.append(length - fp32_length)
        common = min(fp32_length, length)
        gap = (result["mel"][0, :, :common].float() - fp32["mel"][0, :, :common].float()).abs()
        largest, total, frames = max(largest, float(gap.max())), total + float(gap.sum()), frames + gap.numel()
    return {"lines_of_another_length": sum(change != 0 for change in length_changes),
            "mean_abs_length_change_frames": sum(abs(change) for change in length_changes) / len(length_changes),
            "mel_max_abs_difference": largest, "mel_mean_abs_difference": total / frames}


def write_wavs(results: list[dict], numbers: list[int], folder: Path, sampling_rate: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number, result in zip(numbers, results):
        soundfile.write(folder / f"audio_{number}.wav",
                        result["audio"][0, :int(result["audio_lengths"][0])].numpy(), sampling_rate)


def summary(results: list[dict], max_frames: int) -> dict:
    return {"tacotron2_seconds": sum(result["timings"]["tacotron2"] for result in results),
            "vocoder_seconds": sum(result["timings"]["vocoder"] for result in results),
            "mel_frames": sum(int(result["mel_lengths"][0]) for result in results),
            "lines_that_ran_to_max_steps": sum(int(result["mel_lengths"][0]) >= max_frames for result in results),
            "mean_alignment_score": sum(float(result["alignment_score"]) for result in results) / len(results)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tacotron2", required=True, type=Path)
    parser.add_argument("--vocoder", default="griffin-lim", help="a vocoder checkpoint, or griffin-lim")
    parser.add_argument("--texts", required=True, type=Path, help="one line of text per utterance")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1234])
    parser.add_argument("--batch-size", type=int, default=1, help="lines synthesized together (default 1: alone)")
    parser.add_argument("--no-judge", dest="judge", action="store_false", help="skip Moonshine's CER")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    names = ["fp32"] + [name for name in args.variants if name != "fp32"]
    lines = numbered_lines(args.texts)
    synthesizers = {name: Synthesizer.from_checkpoints(args.tacotron2, args.vocoder, device="cpu",
                                                       batch_size=args.batch_size,
                                                       **VARIANTS[name]) for name in names}
    reference = synthesizers["fp32"]
    max_frames = ((reference.settings.max_decoder_steps or reference.tacotron2.max_decoder_steps)
                  * reference.tacotron2.n_frames_per_step)
    judge = None
    if args.judge:
        from scripts.moonshine_judge import MoonshineJudge

        judge = MoonshineJudge()
    report = {"cpu": cpu_description(), "native_bf16": native_bf16(), "threads": torch.get_num_threads(),
              "lines": len(lines), "batch_size": args.batch_size, "runs": []}
    for seed in args.seeds:
        results = synthesize_in_turn(synthesizers, lines, seed, args.batch_size)
        for name in names:
            run = {"variant": name, "seed": seed, **summary(results[name], max_frames)}
            if name != "fp32":
                run["mels_against_fp32"] = mel_differences(results["fp32"], results[name])
            if judge is not None:
                with tempfile.TemporaryDirectory() as scratch:
                    write_wavs(results[name], list(lines), Path(scratch), reference.sampling_rate)
                    heard = evaluate_with_moonshine(judge, [(number, text, Path(scratch) / f"audio_{number}.wav")
                                                            for number, text in lines.items()])
                run["moonshine_cer"], run["moonshine_wer"] = heard["cer"], heard["wer"]
            report["runs"].append(run)
            print(json.dumps(run), flush=True)
        if seed == args.seeds[0]:
            mels = [result["mel"][:, :, :int(result["mel_lengths"][0])] for result in results["fp32"]]
            report["vocoder_alone_seconds"] = vocoder_seconds(synthesizers, mels)
            print(json.dumps({"vocoder_alone_seconds": report["vocoder_alone_seconds"]}), flush=True)
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
