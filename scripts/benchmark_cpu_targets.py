"""The CPU speed targets: every workload's fast paths beside today's eager fp32 path, with the ratio and the method.

    python -m scripts.benchmark_cpu_targets                           # every target at its real size: long on 2 cores
    python -m scripts.benchmark_cpu_targets --quick                   # tiny models: a smoke test, not a measurement
    python -m scripts.benchmark_cpu_targets --targets hifigan-infer wav2vec2-infer --profile wav2vec2-infer
    python -m scripts.benchmark_cpu_targets --threads 2 --json output/benchmark/cpu_targets.json

Targets (random weights: the time does not depend on them), each with the ratio wanted of its best fast path over
eager fp32 (median over median, the paths timed in turn on the same inputs, scripts/benchmark_speed.py's machinery):

  tacotron2-infer    >= 2x    Tacotron 2 alone, batch 1, 128 characters, 400 decoder steps (gate held shut): eager
                              (the reference decoder step), torchscript (the reference step through TorchScript:
                              --no-fast-decoder on the CPU), fast (--fast-decoder --no-half-lstm-weights),
                              fast-fp16 (the fast step with its LSTMs' weights in float16: the CPU's default),
                              compiled (--compile), int8 (--quantize int8 --no-fast-decoder: the reference step with
                              int8 LSTMs and linear layers), fast-int8 (--quantize int8: the fast step's merged
                              products in int8 too)
  hifigan-infer      >= 1.5x  the HiFi-GAN v1 generator, batch 1, 400 mel frames (4.6 s), weight norm folded as
                              inference runs it: eager (signals as (B, C, T)), fast (as one-row channels-last
                              images, what inference runs on the CPU: hifigan/vocoder.py), compiled (fast and
                              --compile)
  wav2vec2-infer     >= 1.5x  wav2vec 2.0 Base CTC (NVIDIA's Base recipe's Hourglass [2,(8,4),2]), batch 1, a 6 s
                              utterance, through wav2vec2/api.py's Recognizer: eager, compiled (compile=True), int8
                              (quantize="int8": int8 linear layers and feature-extractor convolutions),
                              compiled-int8 (both)
  hifigan-train      >= 1.3x  a training step of generator v1 + MPD + MSD through the shared Trainer (hifigan/recipe.py's
                              step), batch 4, segment 8192: eager (--fp32 --no-fused-optimizer
                              --no-real-features-without-grad: torch's AdamW looping over the tensors, in fp32, and
                              the generator's phase judging real and generated audio in one pass with autograd, as
                              the reference runs on a CPU), default (no flag: fused AdamW, the real audio judged
                              without autograd, in bf16 where the CPU computes it natively, else fp32), fp32 (--fp32: the
                              default in fp32; timed where the default is bf16), compiled (the default and train.py
                              --compile)
  wav2vec2-pretrain  >= 1.3x  a Base pre-training step (configs/wav2vec2_pretrain_base.json, Hourglass factor 4)
                              through the shared Trainer, 250,000 samples per batch: eager (--fp32
                              --no-fused-optimizer), default, fp32, compiled, as hifigan-train's
  waveglow-infer     GFLOP/s  WaveGlow-256 on 86 mel frames (scripts/benchmark_speed.py's target): eager, fast,
                              compiled

Where the CPU computes bf16 natively (AVX512-BF16 or AMX; the header says), a bf16 path (the default path under bf16
autocast: --bf16) is timed beside the others unless --bf16 off; where bf16 is emulated it is skipped unless --bf16 on.
(The training steps' default is bf16 there already: their bf16 path is timed only where bf16 is not native.)
Each target's verdict also says how its default path (DEFAULT_PATH: what a user gets without a flag) compares with
eager: a default below eager is marked.

Every row also gives the achieved GFLOP/s: the floating-point operations of one call, counted once by
torch.utils.flop_counter.FlopCounterMode on the eager path (convolutions and matrix products, backward included for
training steps; int8 paths, and paths that skip work, are credited with the same count; nn.LSTM's fused kernel,
Tacotron 2's encoder, is not counted, so its GFLOP/s is a lower bound), over the path's median time, and its share
of this CPU's fp32 peak, measured first in the same run by a matrix-product microbenchmark (the best of several 2048^3
products at the run's thread count). At 70 % of peak or more a workload is at the limit.

A compiled path's first call compiles: its compile time (first call minus a steady one) is in the notes, apart from
the steady-state time. --profile TARGET prints torch.profiler's top operations of one call per path of that target.
Thread count: --threads (default: torch's, one per core); docs/benchmarks.md says what the project chooses and why.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

import train
from common.cpu import native_bf16, vectorized_half_products, vectorized_int8_products
from common.registry import get_recipe
from common.trainer import Trainer
from hifigan.model import PRESETS, Generator
from scripts import benchmark_speed
from scripts.benchmark_speed import NVIDIA_SIZES, QUICK_SIZES, Target, Variant
from scripts.hifigan.benchmark_hifigan import random_log_mel
from scripts.wav2vec2 import benchmark_wav2vec2
from wav2vec2.api import Recognizer

# target -> the ratio of the best fast path over eager fp32 that the project aims for (None: a GFLOP/s target)
WANTED_RATIO = {"tacotron2-infer": 2.0, "hifigan-infer": 1.5, "wav2vec2-infer": 1.5, "hifigan-train": 1.3,
                "wav2vec2-pretrain": 1.3, "waveglow-infer": None}
TARGETS = tuple(WANTED_RATIO)
# target -> the path a user gets on the CPU without a flag (the recognizer: bf16 where the CPU has it natively, else
# int8 where its int8 products are vectorized)
DEFAULT_PATH = {"tacotron2-infer": "fast-fp16" if vectorized_half_products() else "fast", "hifigan-infer": "fast",
                "wav2vec2-infer": "bf16" if native_bf16() else "int8" if vectorized_int8_products() else "eager",
                "hifigan-train": "default", "wav2vec2-pretrain": "default", "waveglow-infer": "fast"}
AT_THE_LIMIT = 0.70  # share of the measured peak from which a compute-bound workload counts as at the limit

# --quick: a HiFi-GAN generator and discriminators small enough to train a step in a second
QUICK_HIFIGAN = {"resblock": "2", "upsample_rates": [8, 8, 4], "upsample_kernel_sizes": [16, 16, 8],
                 "upsample_initial_channel": 16, "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3]]}
QUICK_HIFIGAN_FLAGS = ["--upsample-rates", "8", "8", "4", "--upsample-kernel-sizes", "16", "16", "8",
                       "--upsample-initial-channel", "16", "--resblock", "2", "--resblock-kernel-sizes", "3",
                       "--resblock-dilation-sizes", "1,3", "--discriminator-width-divisor", "8"]


@dataclass(frozen=True)
class Sizes:
    speed: benchmark_speed.Sizes  # Tacotron 2's and WaveGlow's (scripts/benchmark_speed.py)
    hifigan_generator: dict
    hifigan_frames: int
    hifigan_train_flags: list
    hifigan_segment: int
    wav2vec2_size: str  # scripts/wav2vec2/benchmark_wav2vec2.py's SIZES
    wav2vec2_hourglass: str
    wav2vec2_seconds: float  # the utterance of wav2vec2-infer
    wav2vec2_corpus_seconds: tuple  # the pre-training corpus's utterances: (shortest, longest)
    wav2vec2_max_tokens: int


REAL_SIZES = Sizes(NVIDIA_SIZES, PRESETS["v1"], 400, ["--hifigan-preset", "v1"], 8192, "base", "[2,(8,4),2]", 6.0,
                   (10.0, 16.0), 250_000)
QUICK = Sizes(QUICK_SIZES, QUICK_HIFIGAN, 16, QUICK_HIFIGAN_FLAGS, 2048, "tiny", "[1,(1,4),1]", 1.0, (1.0, 2.0),
              40_000)


# ---------------------------------------------------------------------------------------------------------------
# The targets that scripts/benchmark_speed.py does not have


def autocast_for(path: str):
    return torch.autocast("cpu", dtype=torch.bfloat16) if path == "bf16" else nullcontext()


def hifigan_inference(sizes: Sizes, paths: list[str]) -> Target:
    torch.manual_seed(0)
    reference = Generator(**sizes.hifigan_generator)
    mel = random_log_mel(1, sizes.hifigan_frames, torch.device("cpu"))

    def infer_with(path: str) -> Callable[[], None]:
        generator = Generator(**sizes.hifigan_generator).eval()
        generator.load_state_dict(reference.state_dict())
        generator.remove_weight_norm()
        generator.image_rows = path != "eager"  # as hifigan/vocoder.py's load_vocoder does on the CPU
        if path == "compiled":
            generator.compile()  # as load_vocoder does with --compile

        def infer():
            with torch.inference_mode(), autocast_for(path):
                generator(mel)

        return infer

    seconds = sizes.hifigan_frames * reference.hop_length / 22050
    return Target("hifigan-infer", "fp32", f"batch 1, {sizes.hifigan_frames} mel frames = {seconds:.2f} s",
                  [Variant(path, infer_with(path)) for path in paths])


def wav2vec2_inference(sizes: Sizes, paths: list[str], folder: Path) -> Target:
    checkpoint = folder / "wav2vec2_ctc_random.pt"
    benchmark_wav2vec2.save_random_ctc_checkpoint(checkpoint, sizes.wav2vec2_size, sizes.wav2vec2_hourglass)
    wav = benchmark_wav2vec2.write_batch_inputs(folder / "utterance", 1, sizes.wav2vec2_seconds,
                                                sizes.wav2vec2_seconds)

    def recognize_with(path: str) -> Callable[[], None]:
        recognizer = Recognizer.from_checkpoint(checkpoint, "cpu", "bf16" if path == "bf16" else "fp32", 1,
                                                quantize="int8" if "int8" in path else "none",
                                                compile="compiled" in path)
        batch = recognizer.utterances(wav)
        return lambda: recognizer.logits(batch)

    return Target("wav2vec2-infer", "fp32", f"{sizes.wav2vec2_size}, Hourglass {sizes.wav2vec2_hourglass}, batch 1, "
                  f"{sizes.wav2vec2_seconds:g} s", [Variant(path, recognize_with(path)) for path in paths])


# train.py flags that turn the training steps' speed-ups off: fp32 and torch's Adam(W) looping over the tensors
EAGER_TRAINING_FLAGS = ("--fp32", "--no-fused-optimizer")


def training_steps(name: str, what: str, argv: list[str], output: Path, paths: list[str],
                   eager_flags: tuple[str, ...] = EAGER_TRAINING_FLAGS) -> Target:
    """A train.py run's step (Trainer.train_step, host-to-device copy included) on one batch of its own loader, the
    same batch every call; one Trainer per path, each from the same seed, so the same weights. The eager path adds
    eager_flags: the flags that turn the default's speed-ups off."""
    batch = None

    def step_with(path: str) -> Callable[[], None]:
        nonlocal batch
        args = train.parse_run_args(argv + ["-o", str(output / path), "--epochs", "1"] +
                                    {"eager": list(eager_flags), "fp32": ["--fp32"],
                                     "compiled": ["--compile"], "bf16": ["--bf16"]}.get(path, []))
        trainer = Trainer.from_args(get_recipe(args.model_name), args)
        trainer.model.train()
        trainer.train_sampler.set_epoch(0)
        if batch is None:
            batch = next(iter(trainer.train_loader))

        def step() -> None:
            trainer.train_step([batch])

        return step

    return Target(name, "fp32", what, [Variant(path, step_with(path)) for path in paths])


def hifigan_training(sizes: Sizes, paths: list[str], folder: Path) -> Target:
    from scripts.data.synthetic_corpus import build_corpus

    corpus = build_corpus(folder / "corpus", folder / "corpus" / "filelists", num_utterances=12)
    argv = ["-m", "HiFiGAN", "-d", str(folder / "corpus"),
            "--training-files", str(corpus.filelists["audio_train"]),
            "--validation-files", str(corpus.filelists["audio_val"]), "-bs", "4", "--segment-size",
            str(sizes.hifigan_segment), "-lr", "3e-4", "--num-workers", "0", "--quiet", "--cpu",
            *sizes.hifigan_train_flags]
    return training_steps("hifigan-train", f"G + MPD + MSD, batch 4, segment {sizes.hifigan_segment}", argv,
                          folder / "hifigan_runs", paths,
                          eager_flags=(*EAGER_TRAINING_FLAGS, "--no-real-features-without-grad"))


def wav2vec2_pretraining(sizes: Sizes, paths: list[str], folder: Path) -> Target:
    data = folder / "asr_corpus"
    benchmark_wav2vec2.build_corpus(data, utterances=4, min_seconds=sizes.wav2vec2_corpus_seconds[0],
                                    max_seconds=sizes.wav2vec2_corpus_seconds[1])
    options = argparse.Namespace(precision="fp32", cpu=True)
    argv = benchmark_wav2vec2.train_flags("pretrain", sizes.wav2vec2_size, 4, options, data,
                                          folder / "wav2vec2_run", sizes.wav2vec2_max_tokens, 1)
    argv += ["--num-workers", "0"]
    return training_steps("wav2vec2-pretrain", f"{sizes.wav2vec2_size}, Hourglass factor 4, "
                          f"{sizes.wav2vec2_max_tokens:,} samples per batch", argv, folder / "wav2vec2_runs", paths)


# ---------------------------------------------------------------------------------------------------------------
# Peak, FLOPs, verdicts


def fp32_peak_gflops(size: int, repeats: int = 5, dtype: torch.dtype = torch.float32) -> float:
    """This CPU's matrix-product rate at the run's thread count, in fp32 (or dtype: torch.bfloat16 says whether bf16
    is native, `python -c "import torch; from scripts.benchmark_cpu_targets import fp32_peak_gflops as rate;
    print(rate(1024), rate(1024, dtype=torch.bfloat16))"`): the best of `repeats` size^3 products."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    return 2 * size ** 3 / benchmark_speed.best_seconds(lambda: torch.mm(a, b), repeats) / 1e9


def count_flops(run: Callable[[], object]) -> int:
    """Floating-point operations of one call (convolutions and matrix products), as FlopCounterMode counts them."""
    counter = FlopCounterMode(display=False)
    with counter:
        run()
    return counter.get_total_flops()


def default_against_eager(target: Target, rows: list[dict]) -> str:
    default = next((row for row in rows if row["path"] == DEFAULT_PATH[target.name]), None)
    if default is None:
        return ""
    state = "at or above eager" if default["speedup"] >= 1.0 else "BELOW EAGER"
    return f"; default path {default['path']} {default['speedup']:.2f}x eager: {state}"


def verdict(target: Target, rows: list[dict], peak: float) -> str:
    wanted = WANTED_RATIO[target.name]
    fast = [row for row in rows if row["path"] != "eager"]
    if wanted is None:
        best = max(rows, key=lambda row: row["gflops_per_second"])
        share = best["gflops_per_second"] / peak
        state = "at the limit" if share >= AT_THE_LIMIT else f"below the {AT_THE_LIMIT:.0%} limit"
        return (f"{target.name}: best {best['path']} {best['gflops_per_second']:.1f} GFLOP/s = {share:.0%} of the "
                f"{peak:.1f} GFLOP/s peak: {state}" + default_against_eager(target, rows))
    if not fast:
        return f"{target.name}: no fast path timed"
    best = max(fast, key=lambda row: row["speedup"])
    state = "met" if best["speedup"] >= wanted else "MISSED (--profile " + target.name + ")"
    return (f"{target.name}: best fast path {best['path']} {best['speedup']:.2f}x, wanted >= {wanted:g}x: {state}"
            + default_against_eager(target, rows))


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    benchmark_speed.add_benchmark_args(parser, TARGETS)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per path (default 5; 1 with --quick)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                        help="time the compiled paths (default on; --no-compile skips them)")
    options = parser.parse_args(argv)

    if options.threads:
        torch.set_num_threads(options.threads)
    sizes = QUICK if options.quick else REAL_SIZES
    warmup = options.warmup if options.warmup is not None else 1 if options.quick else 2
    repeats = options.repeats or (1 if options.quick else 5)
    with_bf16 = options.bf16 == "on" or (options.bf16 == "auto" and native_bf16())
    compiled = ["compiled"] if options.compile else []
    bf16 = ["bf16"] if with_bf16 else []
    # The training steps' default (train.py with no precision flag) is bf16 where bf16 is native: there their fp32
    # path is the default in fp32, and their bf16 path the default itself.
    training = ["eager", "default", *compiled, *(["fp32"] if native_bf16() else bf16)]
    peak = fp32_peak_gflops(256 if options.quick else 2048)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}, native bf16: {native_bf16()}, bf16 paths: "
          f"{'timed' if with_bf16 else 'skipped'}; fp32 matrix-product peak {peak:.1f} GFLOP/s", flush=True)

    scratch = tempfile.TemporaryDirectory(prefix="benchmark_cpu_targets_")
    folder = Path(scratch.name)
    builders = {
        "tacotron2-infer": lambda: benchmark_speed.tacotron2_inference(
            sizes.speed, "fp32", ["eager", "torchscript", "fast", "fast-fp16", *compiled, "int8", "fast-int8", *bf16]),
        "hifigan-infer": lambda: hifigan_inference(sizes, ["eager", "fast", *compiled, *bf16]),
        "wav2vec2-infer": lambda: wav2vec2_inference(sizes, ["eager", *compiled, "int8",
                                                             *(["compiled-int8"] if options.compile else []), *bf16],
                                                     folder),
        "hifigan-train": lambda: hifigan_training(sizes, training, folder),
        "wav2vec2-pretrain": lambda: wav2vec2_pretraining(sizes, training, folder),
        "waveglow-infer": lambda: benchmark_speed.waveglow_inference(sizes.speed, "fp32", ["eager", "fast",
                                                                                          *compiled, *bf16]),
    }
    all_rows, verdicts = [], []
    print(benchmark_speed.HEADER)
    with scratch:
        for name in options.targets:
            torch._dynamo.reset()  # each target compiles afresh: its own compile time, no recompile limit
            target = builders[name]()
            benchmark_speed.measure(target, warmup, repeats)
            flops = count_flops(target.variants[0].run)  # after the timing, so the first calls are first calls
            rows = benchmark_speed.report(target)
            benchmark_speed.print_rows(rows)
            for row in rows:
                row.update(flops=flops, gflops_per_second=flops / row["seconds_median"] / 1e9,
                           peak_gflops_per_second=peak)
                row["share_of_peak"] = row["gflops_per_second"] / peak
            print(f"{'':16} GFLOP/s (of {flops / 1e9:.2f} GFLOP a call): " + ", ".join(
                f"{row['path']} {row['gflops_per_second']:.1f} ({row['share_of_peak']:.0%} of peak)" for row in rows),
                flush=True)
            verdicts.append(verdict(target, rows, peak))
            all_rows += rows
            if options.profile == name:
                benchmark_speed.profile(target)
    print("\n" + "\n".join(verdicts))
    if options.json:
        Path(options.json).parent.mkdir(parents=True, exist_ok=True)
        Path(options.json).write_text(json.dumps({"torch_threads": torch.get_num_threads(), "peak_gflops": peak,
                                                  "native_bf16": native_bf16(), "rows": all_rows,
                                                  "verdicts": verdicts}, indent=2))
    return all_rows


if __name__ == "__main__":
    main()
