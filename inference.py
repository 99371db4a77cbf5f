"""Text to speech: Tacotron 2 makes mels, a vocoder (Griffin-Lim by default) makes audio.

    python inference.py -i phrases/phrase.txt -o output/wavs --tacotron2 CKPT [--waveglow CKPT] [--cpu] [--bf16|--amp]
    python inference.py -i phrases/phrase_128.txt -o output/bench --tacotron2 CKPT --batch-size 4 --benchmark-repeats 20

Writes audio_<line number><suffix>.wav per non-empty input line (line numbers start at 1, in input order),
alignment_<line number><suffix>.png with --save-alignments, and the timings to the DLLogger --log-file.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch

from common.arguments import add_device_args
from common.audio import LOG_CLAMP_MIN, AudioParams, save_wav
from common.checkpoint import load_trained_model
from common.layers import lengths_to_mask
from common.logger import RunLogger, plot_to_image
from common.registry import get_recipe
from common.text import TextProcessor
from common.vocoder import GriffinLimVocoder
from tacotron2.alignment import alignment_health
from tacotron2.model import max_steps_warnings_silenced

VOCODER_FLAGS = {"waveglow": "waveglow.vocoder", "wavenet": "nvwavenet.vocoder"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Synthesize speech from text", allow_abbrev=False)
    parser.add_argument("-i", "--input", required=True, help="text file, one utterance per line")
    parser.add_argument("-o", "--output", required=True, help="directory for the wavs (created)")
    parser.add_argument("--suffix", default="", help="appended to output file names")
    parser.add_argument("--tacotron2", required=True, help="Tacotron 2 checkpoint (ours or NVIDIA's published one)")
    parser.add_argument("--waveglow", default=None, help="WaveGlow checkpoint (default vocoder: Griffin-Lim)")
    parser.add_argument("--wavenet", default=None, help="WaveNet checkpoint")
    parser.add_argument("--griffin-lim-iters", type=int, default=60)
    add_device_args(parser)
    parser.add_argument("--torchscript", action=argparse.BooleanOptionalAction, default=None,
                        help="run Tacotron 2 through TorchScript (default: on with --cpu)")
    parser.add_argument("--seed", type=int, default=1234, help="seeds the prenet dropout and vocoder noise")
    parser.add_argument("-bs", "--batch-size", type=int, default=8, help="utterances synthesized together")
    parser.add_argument("--max-decoder-steps", type=int, default=None, help="default: the checkpoint's")
    parser.add_argument("--gate-threshold", type=float, default=None, help="default: the checkpoint's")
    parser.add_argument("--save-alignments", action="store_true", help="write an alignment PNG per utterance")
    parser.add_argument("--log-file", default="nvlog.json", help="DLLogger file, relative to --output")
    parser.add_argument("--include-warmup", action="store_true",
                        help="run 3 warm-up batches before the measured one (first-call costs excluded)")
    parser.add_argument("--benchmark-repeats", type=int, default=0,
                        help="benchmark mode: synthesize the first batch N times and report latency statistics")
    parser.add_argument("--quiet", action="store_true")
    for flag, module in VOCODER_FLAGS.items():
        add_vocoder_args = getattr(_import_optional(module), "add_inference_args", None)
        if add_vocoder_args is not None:
            add_vocoder_args(parser)
    return parser


def _import_optional(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != module:
            raise
        return None


def read_phrases(path: str | Path) -> list[tuple[int, str]]:
    """(line number, text) for each non-empty line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    phrases = [(number, line.strip()) for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if line.strip()]
    if not phrases:
        raise ValueError(f"input file {path} has no text")
    return phrases


def pad_token_ids(sequences: list[list[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(ids) for ids in sequences], dtype=torch.long)
    padded = torch.zeros(len(sequences), int(lengths.max()), dtype=torch.long)
    for row, ids in enumerate(sequences):
        padded[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return padded.to(device), lengths.to(device)


class Synthesizer:
    """Tacotron 2 + vocoder, with per-stage timing."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.device = torch.device("cpu") if args.cpu or not torch.cuda.is_available() else torch.device("cuda")
        recipe = get_recipe("Tacotron2")
        # NVIDIA's published checkpoint carries no config: it is the default architecture.
        self.tacotron2, checkpoint = load_trained_model(recipe, args.tacotron2, self.device, published_config={})
        self.text = TextProcessor.from_dict(checkpoint["text"]) if checkpoint.get("text") else TextProcessor()
        self.audio_params = (AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params")
                             else AudioParams())
        self.dtype = torch.float16 if args.amp else torch.bfloat16 if args.bf16 else torch.float32
        self.vocoder = self.load_vocoder()
        self.vocoder.audio_params.check_matches(self.audio_params, f"the vocoder ({self.vocoder.name})",
                                                f"the Tacotron 2 checkpoint {args.tacotron2}")
        use_torchscript = args.torchscript if args.torchscript is not None else self.device.type == "cpu"
        self.infer = torch.jit.script(self.tacotron2).infer if use_torchscript else self.tacotron2.infer

    def load_vocoder(self):
        chosen = [flag for flag in VOCODER_FLAGS if getattr(self.args, flag)]
        if len(chosen) > 1:
            raise SystemExit(f"error: give one vocoder checkpoint, got --{' and --'.join(chosen)}")
        if not chosen:
            return GriffinLimVocoder(self.audio_params, self.args.griffin_lim_iters)
        module = _import_optional(VOCODER_FLAGS[chosen[0]])
        if module is None:
            raise SystemExit(f"error: --{chosen[0]} is not available in this installation")
        return module.load_vocoder(getattr(self.args, chosen[0]), self.args, self.device)

    def autocast(self):
        if self.dtype == torch.float32:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    def _synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    @torch.no_grad()
    def synthesize(self, texts: list[str], sources: list[str], seed: int, warn_max_steps: bool = True) -> dict:
        timings = {}
        start = time.perf_counter()
        token_ids = [self.text.encode(text, source=source) for text, source in zip(texts, sources)]
        text, text_lengths = pad_token_ids(token_ids, self.device)
        timings["preprocessing"] = time.perf_counter() - start

        generator = torch.Generator(device=self.device).manual_seed(seed)
        self._synchronize()
        start = time.perf_counter()
        with self.autocast(), max_steps_warnings_silenced():  # warned below instead, naming the input line
            result = self.infer(text, text_lengths, self.args.max_decoder_steps, self.args.gate_threshold, generator)
        mel, mel_lengths, alignments, hit_max_steps = result
        self._synchronize()
        timings["tacotron2"] = time.perf_counter() - start

        # Past each utterance's end the mel is silence for the vocoder (a zero log-mel would be loud).
        valid = lengths_to_mask(mel_lengths, mel.shape[-1]).unsqueeze(1)
        mel = mel.float().masked_fill(~valid, math.log(LOG_CLAMP_MIN))
        start = time.perf_counter()
        with self.autocast():
            audio = self.vocoder(mel)
        audio = audio.float()
        self._synchronize()
        timings["vocoder"] = time.perf_counter() - start
        timings["latency"] = timings["tacotron2"] + timings["vocoder"]
        for index in torch.nonzero(hit_max_steps).flatten().tolist() if warn_max_steps else []:
            print(f"warning: {sources[index]}: reached --max-decoder-steps before the stop gate fired; "
                  "the audio is cut off", file=sys.stderr)
        hop = self.audio_params.hop_length
        audio_lengths = mel_lengths.cpu() * hop
        health = alignment_health(alignments, text_lengths, mel_lengths, self.tacotron2.n_frames_per_step)
        return {"mel": mel, "mel_lengths": mel_lengths.cpu(), "alignments": alignments, "audio": audio.cpu(),
                "audio_lengths": audio_lengths, "text_lengths": text_lengths.cpu(), "timings": timings,
                "alignment_score": health["score"]}


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


def latency_statistics(latencies: list[float]) -> dict:
    """Mean, std and measured percentiles (numpy's linear interpolation between the observed latencies)."""
    values = np.asarray(latencies)
    stats = {"latency_mean": float(values.mean()), "latency_std": float(values.std()), "repeats": len(values)}
    for percentile in (50, 90, 95, 99):
        stats[f"latency_p{percentile}"] = float(np.percentile(values, percentile))
    return stats


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.batch_size < 1:
        raise SystemExit(f"error: --batch-size must be at least 1, got {args.batch_size}")
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    phrases = read_phrases(args.input)
    synthesizer = Synthesizer(args)
    logger = RunLogger(output / args.log_file)
    logger.parameters({"tacotron2": args.tacotron2, "vocoder": synthesizer.vocoder.name, "device":
                       str(synthesizer.device), "precision": str(synthesizer.dtype), "batch_size": args.batch_size})
    batches = [phrases[start:start + args.batch_size] for start in range(0, len(phrases), args.batch_size)]

    def run(batch, seed):
        return synthesizer.synthesize([text for _, text in batch], [f"{args.input}:{n}" for n, _ in batch], seed)

    if args.include_warmup or args.benchmark_repeats:
        for repeat in range(3):
            run(batches[0], args.seed + repeat)

    if args.benchmark_repeats:
        batch = batches[0]
        results = [run(batch, args.seed) for _ in range(args.benchmark_repeats)]
        records = [throughput_record(result, synthesizer.audio_params) for result in results]
        summary = latency_statistics([record["latency"] for record in records])
        for key in ("tacotron2_latency", "vocoder_latency", "samples_per_sec", "real_time_factor",
                    "tacotron2_mel_frames_per_sec", "mel_frames"):
            summary[key] = float(np.mean([record[key] for record in records]))
        summary["batch_size"] = len(batch)
        summary["input_characters"] = int(np.mean([len(text) for _, text in batch]))
        logger.log([], summary)
        logger.close()
        return

    for index, batch in enumerate(batches):
        result = run(batch, args.seed + index)
        logger.log([index], throughput_record(result, synthesizer.audio_params), echo=not args.quiet)
        for row, (line_number, _) in enumerate(batch):
            length = int(result["audio_lengths"][row])
            wav_path = output / f"audio_{line_number}{args.suffix}.wav"
            save_wav(wav_path, result["audio"][row, :length], synthesizer.audio_params.sampling_rate)
            if args.save_alignments:
                steps = -(-int(result["mel_lengths"][row]) // synthesizer.tacotron2.n_frames_per_step)
                alignment = result["alignments"][row, :steps, : int(result["text_lengths"][row])].float().cpu()
                image = plot_to_image(alignment.numpy().T, title=f"line {line_number}", xlabel="decoder step",
                                      ylabel="encoder step")
                import matplotlib.pyplot as plt

                plt.imsave(output / f"alignment_{line_number}{args.suffix}.png", image)
            if not args.quiet:
                print(f"wrote {wav_path} ({length / synthesizer.audio_params.sampling_rate:.2f} s)")
    logger.close()


if __name__ == "__main__":
    main()
