"""Latency of the whole text-to-wav pipeline (Tacotron 2 + WaveGlow + denoiser), as in NVIDIA's inference tables.

    python -m scripts.benchmark_pipeline --batch-size 1 --precision fp32 --wn-channels 256 --repeats 10 [--cpu]
        [--decoder eager|fast|cuda-graphs]
    scripts/benchmark_pipeline.sh            # the grid: batch 1 and 4, fp32/bf16/fp16, WN 256 and 512

Timing does not depend on the weights, only on the sizes and on how many frames are decoded. Without checkpoints
the models get random weights at NVIDIA's default sizes and the stop gate is held shut, so every utterance decodes
exactly --decoder-steps frames (600: what a 128-character sentence gives on LJSpeech) and the vocoder makes
600 x 256 samples. With --tacotron2/--waveglow checkpoints the real models run and stop where their gate fires.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

import inference
from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.inference_args import latency_statistics
from common.registry import get_recipe
from common.text import TextProcessor
from tacotron2.inference import Synthesizer, read_phrases, throughput_record


def random_checkpoint(model_name: str, config: dict, folder: Path, adjust=None) -> Path:
    model = get_recipe(model_name).build_model(config)
    if adjust is not None:
        adjust(model)
    path = folder / f"{model_name}.pt"
    save_checkpoint({"model_name": model_name, "model_config": config, "state_dict": model.state_dict(),
                     "audio_params": AudioParams().to_dict(), "text": TextProcessor().to_dict()}, path)
    return path


def hold_gate_shut(model) -> None:
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.bias.fill_(-1e4)


def decoding_to_max_steps(tacotron2_config: dict) -> dict:
    """The config of a Tacotron 2 whose utterances (its gate held shut) decode --max-decoder-steps frames: without
    the stop after the text's end, which random attention may reach at any step."""
    return {**tacotron2_config, "max_frames_after_text_end": 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--input-length", type=int, default=128, choices=[64, 128, 256],
                        help="characters per utterance (phrases/phrase_<N>.txt)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--wn-channels", type=int, default=256, choices=[256, 512])
    parser.add_argument("--decoder-steps", type=int, default=600, help="frames decoded with random weights")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--decoder", default="eager", choices=["eager", "fast", "cuda-graphs"],
                        help="Tacotron 2's decoder loop: the reference step, --fast-decoder, or --cuda-graphs")
    parser.add_argument("--tacotron2", default=None, help="a trained checkpoint instead of random weights")
    parser.add_argument("--waveglow", default=None, help="a trained checkpoint instead of random weights")
    parser.add_argument("--json", default=None, help="append the result as one JSON line to this file")
    options = parser.parse_args()
    if options.cpu and options.decoder == "cuda-graphs":
        parser.error("--decoder cuda-graphs needs a CUDA GPU: drop --cpu, or choose eager or fast")

    with tempfile.TemporaryDirectory() as folder:
        tacotron2 = options.tacotron2 or random_checkpoint("Tacotron2", decoding_to_max_steps({}), Path(folder),
                                                           hold_gate_shut)
        waveglow = options.waveglow or random_checkpoint(
            "WaveGlow", {"wn_channels": options.wn_channels}, Path(folder))
        argv = ["-i", f"phrases/phrase_{options.input_length}.txt", "-o", folder, "--tacotron2", str(tacotron2),
                "--waveglow", str(waveglow), "-s", "0.6", "-d", "0.01", "--max-decoder-steps",
                str(options.decoder_steps), "--no-torchscript"]
        argv += ["--cpu"] if options.cpu else []
        argv += {"eager": ["--no-fast-decoder"], "fast": ["--fast-decoder"],
                 "cuda-graphs": ["--cuda-graphs"]}[options.decoder]
        argv += {"fp32": [], "bf16": ["--bf16"], "fp16": ["--amp"]}[options.precision]
        synthesizer = Synthesizer.from_args(inference.build_parser().parse_args(argv))
    phrases = [text for _, text in read_phrases(f"phrases/phrase_{options.input_length}.txt")]
    texts = (phrases * options.batch_size)[: options.batch_size]

    def run():
        return synthesizer.synthesize_batch(texts, [f"line {i + 1}" for i in range(len(texts))], seed=0,
                                      warn_max_steps=options.tacotron2 is not None)

    for _ in range(options.warmup):
        run()
    records = [throughput_record(run(), synthesizer.audio_params) for _ in range(options.repeats)]
    result = {"device": str(synthesizer.device), "batch_size": options.batch_size,
              "input_length": options.input_length, "precision": options.precision,
              "wn_channels": options.wn_channels, "decoder": options.decoder, "torch_threads": torch.get_num_threads(),
              **latency_statistics([record["latency"] for record in records])}
    for key in ("tacotron2_latency", "vocoder_latency", "samples_per_sec", "real_time_factor", "mel_frames"):
        result[key] = float(np.mean([record[key] for record in records]))
    print(json.dumps(result))
    if options.json:
        with open(options.json, "a") as handle:
            handle.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
