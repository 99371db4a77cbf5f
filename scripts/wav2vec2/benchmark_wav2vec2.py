"""wav2vec 2.0 benchmarks (scripts/wav2vec2/benchmark_wav2vec2.sh and benchmark_wav2vec2_inference.sh run them).

    python -m scripts.wav2vec2.benchmark_wav2vec2 training [--modes pretrain finetune] [--sizes small base]
        [--factors 1 2 4] [--precision fp32|tf32|bf16|amp] [--cpu] [--max-tokens N] [--num-concat-batches N]
        [--warmup 2] [--iterations 5] [--data data/wav2vec2_benchmark] [--output output/benchmark/wav2vec2]
        [--json FILE]
    python -m scripts.wav2vec2.benchmark_wav2vec2 inference [--batch-sizes 1 4 8 16] [--repeats 10]
        [--precision fp32|bf16|amp] [--cpu] [--hourglass "[2,(8,4),2]"|none]
        [--output output/benchmark/wav2vec2_inference] [--json FILE]
    python -m scripts.wav2vec2.benchmark_wav2vec2 training|inference --quick    # smoke tests: tiny model, seconds

**Training**: throughput of pre-training (and CTC fine-tuning) of a small and the Base model, with the Hourglass
transformer's shortening factors 1 (none), 2 and 4, on a synthetic 16 kHz corpus that it builds if missing.

Each cell is scripts/benchmark_training.py (a Trainer's train_step on the recipe's own batches, host-to-device copy
included, --warmup untimed steps first) in a process of its own, with the preset of NVIDIA's recipe
(configs/wav2vec2_pretrain_base.json, configs/wav2vec2_finetune_960h.json: dropouts, LayerDrop, masking, the loss as
the reference trains them) and the size's architecture. Reported per cell:
  frames/s          frames the transformer sees per second (padding excluded): the recipe's items
  masked frames/s   masked frames per second (pre-training): the frames the contrastive loss is taken over. NVIDIA's
                    training log counts these as its "ntokens", the unit of its README's throughput table
  label tokens/s    target letters per second (fine-tuning; NVIDIA's "ntokens" there). The corpus's labels have
                    LibriSpeech's rate of about 15 letters and word boundaries per second
  speed-up          frames/s over the same mode and size without the Hourglass (NVIDIA: 1.25x at factor 2, 1.37x at 4
                    for Base pre-training in bf16 on an A100)
Batches: --max-tokens samples each (default: NVIDIA's 1.4M for pre-training, 3.2M for fine-tuning, with 8 of them
concatenated as NVIDIA's 1-GPU runs do; on the CPU 320,000 samples, no concatenation, since fine-tuning does not crop
and the corpus's longest utterance is 256,000 samples); pre-training crops utterances to at most 250,000 samples
(15.6 s), the preset's. One step is one such (concatenated) batch: gradient accumulation does not change frames/s.

The corpus (--data): 16 kHz utterances of 10 to 16 s (LibriSpeech's training utterances average 12.3 s) of a
speech-like signal (harmonics of a moving pitch under a syllable-rate envelope, with noise); what the model computes
does not depend on what the audio says. train.tsv/.ltr/.wrd, valid.*, dict.ltr.txt: fairseq's layout.

**Inference**: latency (measured p50/p90/p99 over --repeats after 3 warm-up runs) and real-time factor of speech to
text, `inference.py -m wav2vec2 --benchmark-repeats N` itself, at each batch size, with a Base-size CTC model of
random weights (the time does not depend on the weights; 32 outputs, LibriSpeech's letters) saved once as this
project's checkpoint. A batch of B holds B utterances of 2 to 10 s, their lengths evenly spread (batch 1: 6 s; NVIDIA's
test-other utterances average 6.5 s), padded to the longest as inference pads them. RTF is compute time over audio
time (below 1: faster than real time), as inference.py reports it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

ROOT = Path(__file__).resolve().parents[2]
SAMPLING_RATE = 16000
LETTERS_PER_SECOND = 15.0  # LibriSpeech's training transcripts: about 15 letters and word boundaries per second

# name -> (architecture flags over the preset, Hourglass shape for a shortening factor: the layers as Base's 2/8/2)
SIZES = {
    "tiny": (["--conv-feature-layers", "[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", "--encoder-layers", "3",
              "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
              "--final-dim", "16", "--latent-vars", "8", "--num-negatives", "5", "--conv-pos", "8",
              "--conv-pos-groups", "4"], "[1,(1,{factor}),1]"),
    "small": (["--conv-feature-layers", "[(256,10,5)]+[(256,3,2)]*4+[(256,2,2)]*2", "--encoder-layers", "6",
               "--encoder-embed-dim", "256", "--encoder-ffn-embed-dim", "1024", "--encoder-attention-heads", "4",
               "--final-dim", "128"], "[1,(4,{factor}),1]"),
    "base": ([], "[2,(8,{factor}),2]"),  # the preset's architecture: NVIDIA's Base
}
SIZE_DESCRIPTIONS = {"tiny": "3 x 32 (smoke test)", "small": "6 x 256, conv 256", "base": "Base: 12 x 768, conv 512"}
PRESETS = {"pretrain": "configs/wav2vec2_pretrain_base.json", "finetune": "configs/wav2vec2_finetune_960h.json"}
NVIDIA_MAX_TOKENS = {"pretrain": 1_400_000, "finetune": 3_200_000}
PRECISION_FLAGS = {"fp32": ["--no-tf32"], "tf32": ["--tf32"], "bf16": ["--bf16"], "amp": ["--amp"]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="benchmark wav2vec 2.0 training throughput", allow_abbrev=False,
                                     prog="python -m scripts.wav2vec2.benchmark_wav2vec2 training")
    parser.add_argument("--modes", nargs="+", default=["pretrain"], choices=sorted(PRESETS))
    parser.add_argument("--sizes", nargs="+", default=["small", "base"], choices=sorted(SIZES))
    parser.add_argument("--factors", nargs="+", type=int, default=[1, 2, 4],
                        help="Hourglass shortening factors (1: a plain transformer)")
    parser.add_argument("--precision", default="fp32", choices=sorted(PRECISION_FLAGS))
    parser.add_argument("--cpu", action="store_true", help="on the CPU even if a GPU is present")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="samples per batch (default: NVIDIA's on a GPU, 320000 on the CPU)")
    parser.add_argument("--num-concat-batches", type=int, default=None,
                        help="batches forwarded as one (default: 8 on a GPU, as NVIDIA's 1-GPU runs; 1 on the CPU)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--iterations", type=int, default=5, help="timed steps")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--data", default="data/wav2vec2_benchmark", help="the synthetic corpus (built if missing)")
    parser.add_argument("--utterances", type=int, default=128, help="training utterances of a corpus it builds")
    parser.add_argument("--output", default="output/benchmark/wav2vec2", help="scratch folder of the runs")
    parser.add_argument("--json", default=None, help="write every number here")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: tiny model, factors 1 and 2, 1-2 s utterances, 1 warm-up and 1 timed step")
    return parser


# ---- the corpus ------------------------------------------------------------------------------------------------


def speech_like(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Harmonics of a slowly moving pitch under a syllable-rate envelope, plus a little noise; peak 0.5."""
    samples = int(seconds * SAMPLING_RATE)
    time = np.arange(samples) / SAMPLING_RATE
    pitch = rng.uniform(90, 220) * (1 + 0.1 * np.sin(2 * np.pi * rng.uniform(0.2, 0.6) * time))
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLING_RATE
    voiced = sum(np.sin(harmonic * phase) / harmonic for harmonic in range(1, 9))
    envelope = np.clip(np.sin(2 * np.pi * rng.uniform(3, 5) * time + rng.uniform(0, np.pi)), 0, None) ** 2
    audio = voiced * envelope + 0.05 * rng.standard_normal(samples)
    return (0.5 * audio / np.abs(audio).max()).astype(np.float32)


def random_words(seconds: float, rng: np.random.Generator) -> str:
    """Words of random letters, about LETTERS_PER_SECOND letters and boundaries per second of audio."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ'"
    words, budget = [], int(seconds * LETTERS_PER_SECOND)
    while budget > 1:
        length = int(min(budget - 1, rng.integers(2, 9)))
        words.append("".join(rng.choice(list(letters[:-1]), size=length)))
        budget -= length + 1
    return " ".join(words) or "A"


def build_corpus(directory: Path, utterances: int, min_seconds: float, max_seconds: float, seed: int = 1234) -> None:
    """train (utterances) and valid (2) splits in fairseq's layout, with letters; deterministic for the seed."""
    from scripts.data.librispeech import LIBRISPEECH_LETTERS, write_labels, write_letter_dictionary, write_manifest
    from wav2vec2.dictionary import words_to_letters

    rng = np.random.default_rng(seed)
    wavs = directory / "wavs"
    wavs.mkdir(parents=True, exist_ok=True)
    letter_lines = []
    for split, count in (("train", utterances), ("valid", 2)):
        rows, word_lines = [], []
        for index in range(count):
            seconds = float(rng.uniform(min_seconds, max_seconds))
            audio = speech_like(seconds, rng)
            relative = f"wavs/{split}-{index:05d}.wav"
            soundfile.write(directory / relative, audio, SAMPLING_RATE, subtype="PCM_16")
            rows.append((relative, len(audio)))
            word_lines.append(random_words(seconds, rng))
        write_labels(write_manifest(directory / f"{split}.tsv", directory, rows), word_lines)
        letter_lines += [words_to_letters(words) for words in word_lines]
    write_letter_dictionary(directory / "dict.ltr.txt", letter_lines, always=LIBRISPEECH_LETTERS)


# ---- one cell, in a process of its own ---------------------------------------------------------------------------


def train_flags(mode: str, size: str, factor: int, options: argparse.Namespace, data: Path, output: Path,
                max_tokens: int, concat: int) -> list[str]:
    architecture, hourglass = SIZES[size]
    flags = ["-m", "wav2vec2", "--mode", mode, "--config-file", str(ROOT / PRESETS[mode]), "--data", str(data),
             "--train-subset", "train", "--valid-subset", "valid", "-o", str(output), "--max-tokens", str(max_tokens),
             "--num-concat-batches", str(concat), "--grad-accumulation", "1", "--min-sample-size", "0",
             "--num-workers", "1", "--quiet", *architecture,
             "--hourglass-transformer", hourglass.format(factor=factor) if factor > 1 else "",
             *PRECISION_FLAGS[options.precision]]
    return flags + (["--cpu"] if options.cpu else [])


def run_cell(argv: list[str]) -> None:
    """`cell --cell RESULT.json --warmup W --iterations N -- <train.py flags>`: scripts/benchmark_training.py's
    measurement, counting each step's masked frames and target letters besides (a sum over the batch, outside the
    model)."""
    split = argv.index("--")
    cell = argparse.ArgumentParser()
    cell.add_argument("--cell", required=True)
    cell.add_argument("--warmup", type=int, required=True)
    cell.add_argument("--iterations", type=int, required=True)
    cell.add_argument("--threads", type=int, default=None)
    options = cell.parse_args(argv[:split])
    if options.threads:
        import torch
        torch.set_num_threads(options.threads)

    from common.trainer import Trainer
    from scripts import benchmark_training

    counts: list[tuple[int, int]] = []
    measured_train_step = Trainer.train_step

    def counting_train_step(self, micro_batches):
        counts.append((sum(int(batch.mask_indices.sum()) for batch in micro_batches if batch.mask_indices is not None),
                       sum(int(batch.target_lengths.sum()) for batch in micro_batches
                           if batch.target_lengths is not None)))
        return measured_train_step(self, micro_batches)

    Trainer.train_step = counting_train_step
    with tempfile.TemporaryDirectory() as scratch:
        measured = Path(scratch) / "result.json"
        sys.argv = ["benchmark_training", "--warmup", str(options.warmup), "--iterations", str(options.iterations),
                    "--json", str(measured), "--", *argv[split + 1:]]
        benchmark_training.main()
        result = json.loads(measured.read_text())
    timed = counts[options.warmup:]
    seconds = result["iteration_time_mean"] * options.iterations
    result["masked_frames_per_sec"] = sum(masked for masked, _ in timed) / seconds
    result["label_tokens_per_sec"] = sum(labels for _, labels in timed) / seconds
    Path(options.cell).write_text(json.dumps(result, indent=2))


# ---- the grid ----------------------------------------------------------------------------------------------------


def training(argv: list[str]) -> list[dict]:
    options = build_parser().parse_args(argv)
    if options.quick:
        options.sizes, options.factors, options.warmup, options.iterations = ["tiny"], [1, 2], 1, 1
    import torch

    on_gpu = torch.cuda.is_available() and not options.cpu
    options.cpu = not on_gpu
    data = Path(options.data)
    if options.quick and options.data == build_parser().get_default("data"):
        data = Path(options.output) / "quick_corpus"
    if not (data / "train.tsv").is_file():
        print(f"building the synthetic corpus in {data}", file=sys.stderr)
        if options.quick:
            build_corpus(data, utterances=8, min_seconds=1.0, max_seconds=2.0)
        else:
            build_corpus(data, utterances=options.utterances, min_seconds=10.0, max_seconds=16.0)

    results = []
    for mode in options.modes:
        max_tokens = options.max_tokens or (NVIDIA_MAX_TOKENS[mode] if on_gpu else 320_000)
        if options.quick:
            max_tokens = options.max_tokens or 40_000
        concat = options.num_concat_batches or (8 if on_gpu and not options.quick else 1)
        for size in options.sizes:
            for factor in options.factors:
                output = Path(options.output) / f"{mode}_{size}_hourglass{factor}"
                flags = train_flags(mode, size, factor, options, data, output, max_tokens, concat)
                result_path = Path(options.output) / f"{mode}_{size}_hourglass{factor}.json"
                result_path.parent.mkdir(parents=True, exist_ok=True)
                command = [sys.executable, "-m", "scripts.wav2vec2.benchmark_wav2vec2", "cell",
                           "--cell", str(result_path),
                           "--warmup", str(options.warmup), "--iterations", str(options.iterations),
                           *(["--threads", str(options.threads)] if options.threads else []), "--", *flags]
                print(f"== {mode} {size} hourglass factor {factor}", file=sys.stderr, flush=True)
                completed = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, env=os.environ.copy())
                if completed.returncode != 0:
                    raise SystemExit(f"the {mode}/{size}/factor {factor} run failed (exit {completed.returncode}): "
                                     f"{' '.join(command)}")
                measured = json.loads(result_path.read_text())
                results.append({"mode": mode, "size": size, "hourglass_factor": factor,
                                "hourglass": SIZES[size][1].format(factor=factor) if factor > 1 else None,
                                "max_tokens": max_tokens, "num_concat_batches": concat, **measured})
    add_speed_ups(results)
    print_table(results)
    write_json(options.json, "wav2vec2_training", results)
    return results


def write_json(path: str | None, key: str, results: list[dict]) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps({key: results}, indent=2))


def add_speed_ups(results: list[dict]) -> None:
    """frames/s over the same mode and size without the Hourglass (None where that cell was not run)."""
    plain = {(r["mode"], r["size"]): r["frames_per_sec"] for r in results if r["hourglass_factor"] == 1}
    for result in results:
        baseline = plain.get((result["mode"], result["size"]))
        result["speed_up"] = result["frames_per_sec"] / baseline if baseline else None


def print_table(results: list[dict]) -> None:
    if not results:
        return
    first = results[0]
    print(f"wav2vec 2.0 training throughput: {first['device']}, {first['precision']}, "
          f"{first['torch_threads']} threads, {first['iterations']} timed steps per cell")
    print("| mode | size | Hourglass | samples/batch x concat | frames/s | masked frames/s | label tokens/s "
          "| step time | speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        masked = f"{r['masked_frames_per_sec']:,.0f}" if r["mode"] == "pretrain" else "-"
        labels = f"{r['label_tokens_per_sec']:,.0f}" if r["mode"] == "finetune" else "-"
        speed_up = f"{r['speed_up']:.2f}x" if r["speed_up"] is not None else "-"
        print(f"| {r['mode']} | {SIZE_DESCRIPTIONS[r['size']]} | {r['hourglass'] or 'none'} | "
              f"{r['max_tokens']:,} x {r['num_concat_batches']} | {r['frames_per_sec']:,.0f} | {masked} | {labels} | "
              f"{r['iteration_time_mean']:.2f} s (std {r['iteration_time_std']:.2f}) | {speed_up} |")



# ---- inference ---------------------------------------------------------------------------------------------------


def build_inference_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="benchmark wav2vec 2.0 speech-to-text latency", allow_abbrev=False,
                                     prog="python -m scripts.wav2vec2.benchmark_wav2vec2 inference")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 4, 8, 16])
    parser.add_argument("--min-seconds", type=float, default=2.0, help="the shortest utterance of a batch")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="the longest utterance of a batch")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs per batch size (after 3 warm-up runs)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "amp"])
    parser.add_argument("--cpu", action="store_true", help="on the CPU even if a GPU is present")
    parser.add_argument("--hourglass", default="[2,(8,4),2]",
                        help="the model's Hourglass (default: NVIDIA's Base recipe's); none: a plain transformer")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--checkpoint", default=None,
                        help="the model (default: <output>/wav2vec2_base_<hourglass>_ctc_random.pt, made if missing)")
    parser.add_argument("--output", default="output/benchmark/wav2vec2_inference")
    parser.add_argument("--json", default=None, help="write every number here")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: a tiny model, batch 1 and 2, 1-2 s utterances, 2 repeats")
    return parser


def save_random_ctc_checkpoint(path: Path, size: str, hourglass: str | None, seed: int = 1234) -> None:
    """A CTC model of `size` with random weights over LibriSpeech's letters, as this project's checkpoint."""
    import torch

    from common.audio import AudioParams
    from common.checkpoint import FORMAT_VERSION, save_checkpoint
    from scripts.data.librispeech import LIBRISPEECH_LETTERS
    from wav2vec2.dictionary import Dictionary
    from wav2vec2.model import model_config_from
    from wav2vec2.recipe import build_model

    architecture, _ = SIZES[size]
    overrides = {flag[2:].replace("-", "_"): value for flag, value in zip(architecture[::2], architecture[1::2])}
    overrides = {key: value if key == "conv_feature_layers" else int(value) for key, value in overrides.items()}
    dictionary = Dictionary(list(LIBRISPEECH_LETTERS))
    config = {**model_config_from({**overrides, "hourglass_transformer": hourglass}),
              "vocab_size": len(dictionary), "final_dropout": 0.0, "freeze_finetune_updates": 0}
    torch.manual_seed(seed)
    model = build_model(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint({"format_version": FORMAT_VERSION, "model_name": "wav2vec2", "model_config": config,
                     "audio_params": AudioParams(sampling_rate=SAMPLING_RATE).to_dict(), "text": dictionary.to_dict(),
                     "state_dict": model.state_dict()}, path)


def write_batch_inputs(folder: Path, batch_size: int, min_seconds: float, max_seconds: float) -> list[str]:
    """batch_size wavs whose lengths are evenly spread over [min_seconds, max_seconds] (one: the middle)."""
    folder.mkdir(parents=True, exist_ok=True)
    lengths = ([(min_seconds + max_seconds) / 2] if batch_size == 1
               else np.linspace(min_seconds, max_seconds, batch_size).tolist())
    rng = np.random.default_rng(batch_size)
    paths = []
    for index, seconds in enumerate(lengths):
        path = folder / f"utterance_{index:02d}.wav"
        soundfile.write(path, speech_like(seconds, rng), SAMPLING_RATE, subtype="PCM_16")
        paths.append(str(path))
    return paths


def inference(argv: list[str]) -> list[dict]:
    import torch

    import inference as inference_entry_point
    from common.logger import read_dllogger_file

    options = build_inference_parser().parse_args(argv)
    size = "base"
    if options.quick:
        size, options.batch_sizes, options.repeats = "tiny", [1, 2], 2
        options.min_seconds, options.max_seconds = 1.0, 2.0
        if options.hourglass == build_inference_parser().get_default("hourglass"):
            options.hourglass = "[1,(1,2),1]"
    if options.threads:
        torch.set_num_threads(options.threads)
    hourglass = None if options.hourglass.lower() in ("", "none") else options.hourglass
    output = Path(options.output)
    from wav2vec2.model import parse_hourglass

    shape = parse_hourglass(hourglass)
    name = f"wav2vec2_{size}_{'plain' if shape is None else 'hourglass%d' % shape[2]}_ctc_random.pt"
    checkpoint = Path(options.checkpoint or output / name)
    if not checkpoint.is_file():
        print(f"saving a {size} CTC model with random weights as {checkpoint}", file=sys.stderr)
        save_random_ctc_checkpoint(checkpoint, size, hourglass)
    device_flags = ["--cpu"] if options.cpu else []
    precision_flags = {"fp32": [], "bf16": ["--bf16"], "amp": ["--amp"]}[options.precision]

    results = []
    for batch_size in options.batch_sizes:
        inputs = write_batch_inputs(output / f"inputs_bs{batch_size}", batch_size, options.min_seconds,
                                    options.max_seconds)
        run = output / f"bs{batch_size}"
        log = run / "nvlog.json"
        if log.exists():
            log.unlink()  # the logger appends
        inference_entry_point.main(["-m", "wav2vec2", "--checkpoint", str(checkpoint), "-i", *inputs, "-o", str(run),
                                    "-bs", str(batch_size), "--benchmark-repeats", str(options.repeats), "--quiet",
                                    *device_flags, *precision_flags])
        records = read_dllogger_file(log)
        parameters = next(record["data"] for record in records if "device" in record.get("data", {}))
        summary = records[-1]["data"]
        audio_seconds = sum(soundfile.info(path).duration for path in inputs)
        results.append({"batch_size": batch_size, "device": parameters["device"],
                        "precision": parameters["precision"], "size": size, "hourglass": hourglass,
                        "audio_seconds": audio_seconds, "torch_threads": torch.get_num_threads(),
                        **{key.removeprefix("benchmark_"): value for key, value in summary.items()
                           if key.startswith("benchmark_")}})
    print_inference_table(results)
    write_json(options.json, "wav2vec2_inference", results)
    return results


def print_inference_table(results: list[dict]) -> None:
    if not results:
        return
    first = results[0]
    print(f"wav2vec 2.0 speech to text: {first['size']} CTC model, Hourglass {first['hourglass'] or 'none'}, "
          f"{first['device']}, {first['precision']}, {first['torch_threads']} threads")
    print("| batch | audio | repeats | latency p50 | p90 | p99 | mean (std) | RTF | x real time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['batch_size']} | {r['audio_seconds']:.1f} s | {r['repeats']} | {1000 * r['latency_p50']:.1f} ms | "
              f"{1000 * r['latency_p90']:.1f} ms | {1000 * r['latency_p99']:.1f} ms | "
              f"{1000 * r['latency_mean']:.1f} ms ({1000 * r['latency_std']:.1f}) | {r['rtf']:.4f} | "
              f"{1 / r['rtf']:.1f}x |")


COMMANDS = {"training": training, "inference": inference, "cell": run_cell}


def main(argv: list[str] | None = None) -> list[dict]:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "training"
    return COMMANDS[command](argv) or []


if __name__ == "__main__":
    main()
