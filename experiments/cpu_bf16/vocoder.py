"""A vocoder in bf16 autocast against fp32 on the CPU, with the same trained weights: how much faster, how far the
audio moves, and whether Moonshine base, which nobody here trained, hears the same words.

    python -m experiments.cpu_bf16.vocoder --vocoder output/demo_hifigan/checkpoint_HiFiGAN_1_2.pt \
        output/demo_hifigan/checkpoint_HiFiGAN_last.pt -d data/synthetic \
        --filelist filelists/synthetic_audio_text_test.txt [--json report.json] [--no-judge]

For each vocoder checkpoint given (several: how the answer moves as training goes on), each recording of the filelist
is turned into its log mel (the vocoder's own audio parameters) and vocoded back in fp32 and in bf16, the two taking
turns file by file so that a change in the machine's load falls on both; the vocoder is the one inference.py loads
(common/vocoder.py: image rows for HiFi-GAN on the CPU). Printed per checkpoint (and written with --json): per
precision the vocoder's seconds and the mel L1 of its audio to the recordings (what HiFi-GAN trains on); bf16's audio
against fp32's (signal-to-difference ratio in dB, overall and of the worst file; the mel L1 between them); Moonshine's
CER and WER on the recordings (the ceiling) and on each precision's audio.
"""
from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import soundfile
import torch

from common.audio import MelSpectrogram, load_wav
from common.cpu import cpu_description, native_bf16
from common.filelist import read_filelist
from common.inference_args import autocast
from common.vocoder import load_vocoder, vocoder_settings_of_options
from experiments.cpu_bf16 import write_report
from scripts.hifigan.report_hifigan_demo import mel_l1

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16}


def signal_to_difference_db(reference: torch.Tensor, other: torch.Tensor) -> float:
    return 10 * math.log10(float(reference.square().sum()) / max(float((other - reference).square().sum()), 1e-30))


@torch.no_grad()
def vocode_in_turn(vocoder, mel_spectrogram: MelSpectrogram, recordings: list[torch.Tensor]) -> dict:
    """{precision: {"audio": [one waveform per recording], "seconds": the vocoder's total}}."""
    device = torch.device("cpu")
    results = {name: {"audio": [], "seconds": 0.0} for name in PRECISIONS}
    for recording in recordings:
        mel = mel_spectrogram(recording)
        for name, dtype in PRECISIONS.items():
            start = time.perf_counter()
            with autocast(device, dtype):
                audio = vocoder(mel)
            results[name]["seconds"] += time.perf_counter() - start
            results[name]["audio"].append(audio[0].float())
    return results


def compare(vocoder_path: str, dataset_path: str, filelist: str, judge: bool = True) -> dict:
    """One checkpoint's figures."""
    settings = vocoder_settings_of_options(vocoder_path, {})
    vocoder = load_vocoder(settings, torch.device("cpu"), torch.float32, mel_audio_params=None)
    params = vocoder.audio_params
    mel_spectrogram = MelSpectrogram(params)
    entries = read_filelist(filelist, dataset_path)
    recordings = [load_wav(entry.path, params.sampling_rate, min_samples=params.hop_length) for entry in entries]
    vocode_in_turn(vocoder, mel_spectrogram, recordings[:1])  # warm-up: oneDNN builds its kernels once per shape
    results = vocode_in_turn(vocoder, mel_spectrogram, recordings)
    frames = [mel_spectrogram(recording).size(-1) for recording in recordings]
    report = {"vocoder": vocoder_path, "files": len(entries), "frames": sum(frames), "precisions": {}}

    def frame_weighted_mel_l1(references: list[torch.Tensor], others: list[torch.Tensor]) -> float:
        l1 = [mel_l1(mel_spectrogram(reference), mel_spectrogram(other))
              for reference, other in zip(references, others)]
        return sum(value * count for value, count in zip(l1, frames)) / sum(frames)

    for name in PRECISIONS:
        report["precisions"][name] = {"seconds": results[name]["seconds"],
                                      "mel_l1_to_recordings": frame_weighted_mel_l1(recordings, results[name]["audio"])}
    fp32_audio, bf16_audio = results["fp32"]["audio"], results["bf16"]["audio"]
    report["bf16_against_fp32"] = {
        "signal_to_difference_db": signal_to_difference_db(torch.cat(fp32_audio), torch.cat(bf16_audio)),
        "worst_file_signal_to_difference_db": min(signal_to_difference_db(fp32, bf16)
                                                  for fp32, bf16 in zip(fp32_audio, bf16_audio)),
        "mel_l1": frame_weighted_mel_l1(fp32_audio, bf16_audio),
        "largest_sample_difference": max(float((bf16 - fp32).abs().max()) for fp32, bf16 in zip(fp32_audio,
                                                                                                 bf16_audio))}
    if judge:
        report["moonshine"] = judged(entries, recordings, results, params.sampling_rate)
    return report


def judged(entries, recordings: list[torch.Tensor], results: dict, sampling_rate: int) -> dict:
    """Moonshine's CER and WER on the recordings and on each precision's audio of them."""
    from scripts.intelligibility import evaluate_with_moonshine
    from scripts.moonshine_judge import MoonshineJudge

    judge = MoonshineJudge()
    heard = {}
    sets = {"recordings": recordings, **{name: results[name]["audio"] for name in PRECISIONS}}
    for name, waveforms in sets.items():
        with tempfile.TemporaryDirectory() as scratch:
            pairs = []
            for number, (entry, audio) in enumerate(zip(entries, waveforms), 1):
                wav = Path(scratch) / f"audio_{number}.wav"
                soundfile.write(wav, audio.numpy(), sampling_rate)
                pairs.append((number, entry.text, wav))
            rates = evaluate_with_moonshine(judge, pairs)
        heard[name] = {"cer": rates["cer"], "wer": rates["wer"]}
    return heard


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocoder", required=True, nargs="+",
                        help="vocoder checkpoints (HiFi-GAN, WaveGlow, mel inverter), each compared in turn")
    parser.add_argument("-d", "--dataset-path", default="./")
    parser.add_argument("--filelist", required=True, help="wav|text lines: the recordings to vocode back")
    parser.add_argument("--no-judge", dest="judge", action="store_false", help="skip Moonshine's CER")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    report = {"cpu": cpu_description(), "native_bf16": native_bf16(), "threads": torch.get_num_threads(),
              "vocoders": []}
    for path in args.vocoder:
        report["vocoders"].append(compare(path, args.dataset_path, args.filelist, args.judge))
        print(json.dumps(report["vocoders"][-1]), flush=True)
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
