"""Today's eager path against the fast paths, side by side, for Tacotron 2 and WaveGlow.

    python -m scripts.benchmark_speed                      # every target, NVIDIA's sizes: tens of minutes on 2 cores
    python -m scripts.benchmark_speed --quick              # tiny models: a smoke test of the script, not a measurement
    python -m scripts.benchmark_speed --targets tacotron2-train --profile tacotron2-train
    scripts/benchmark_speed.sh [same flags]

Targets (random weights at NVIDIA's sizes: timing does not depend on the weights, only on the sizes and the
number of frames, so Tacotron 2's stop gate is held shut and every utterance decodes exactly the asked steps):

  tacotron2-train   a training step (forward, loss, backward, gradient clipping, Adam): batch 4, 80 symbols, 400 frames
  tacotron2-infer   Tacotron 2 inference alone: batch 1, 128 characters, 400 decoder steps
  waveglow-infer    WaveGlow-256 inference alone (weight norm folded): 1 s of mel (86 frames), sigma 0.6
  text-to-wav       Tacotron 2 + WaveGlow-256 + denoiser through inference.py's Synthesizer: 128 characters, batch 1,
                    --decoder-steps frames (600, as scripts/benchmark_pipeline.py)

Paths, each timed on the same inputs, interleaved repeat by repeat:

  eager      today's: Tacotron 2's reference decoder step; WaveGlow reading its conditioning through the strided
             view it read before it was made contiguous (reproduced here by a patch, see strided_conditioning)
  fast       --fast-decoder (tacotron2/model.py: Decoder.forward_fast, fast_inference_step), WaveGlow as it is now
  compiled   --compile: torch.compile of the fast decoder's step and of WaveGlow's coupling networks; the compile
             time (first call minus a steady call) is reported apart from the steady-state time. It is shorter when
             inductor's on-disk caches hold an earlier run's graphs: TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 measures
             a first compile

Precisions: fp32 for every target, bf16 (autocast) beside it for the training step and text to wav. bf16 is timed
only where the CPU computes it natively (AVX512-BF16 or AMX) unless --bf16 on: elsewhere it is emulated and far
slower. bf16 rows also report how far their mel (or loss) is from fp32's for the same weights and seed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

import inference
from common.cpu import native_bf16
from common.layers import remove_weight_norm
from common.text import TextProcessor
from scripts.benchmark_pipeline import decoding_to_max_steps, hold_gate_shut, random_checkpoint
from tacotron2.api import quantize_tacotron2
from tacotron2.inference import Synthesizer
from tacotron2.loss_function import Tacotron2Loss
from tacotron2.model import Tacotron2, max_steps_warnings_silenced
from waveglow.model import WaveGlow

TARGETS = ("tacotron2-train", "tacotron2-infer", "waveglow-infer", "text-to-wav")
PHRASE = Path(__file__).resolve().parents[1] / "phrases" / "phrase_128.txt"


@dataclass(frozen=True)
class Sizes:
    tacotron2: dict  # Tacotron2 keyword arguments ({} = NVIDIA's defaults)
    waveglow: dict
    train_batch: int
    train_symbols: int
    train_frames: int
    decoder_steps: int  # Tacotron 2 inference alone
    waveglow_frames: int  # WaveGlow inference alone


NVIDIA_SIZES = Sizes(tacotron2={}, waveglow={"wn_channels": 256}, train_batch=4, train_symbols=80, train_frames=400,
                     decoder_steps=400, waveglow_frames=86)
QUICK_SIZES = Sizes(  # tiny models, so that the whole script runs in seconds
    tacotron2=dict(symbols_embedding_dim=32, encoder_embedding_dim=32, encoder_n_convolutions=1, attention_rnn_dim=48,
                   decoder_rnn_dim=48, prenet_dim=32, attention_dim=16, attention_location_n_filters=4,
                   attention_location_kernel_size=7, postnet_embedding_dim=32, postnet_n_convolutions=2),
    waveglow=dict(flows=4, early_every=2, early_size=2, wn_channels=16, wn_layers=2),
    train_batch=2, train_symbols=20, train_frames=30, decoder_steps=10, waveglow_frames=8)


@dataclass
class Variant:
    """One path of a target: run() does one timed call, and may return {stage: seconds} (text to wav does)."""
    name: str
    run: Callable[[], dict | None]
    times: list[float] = field(default_factory=list)
    stages: list[dict] = field(default_factory=list)
    first_call: float = 0.0


@dataclass
class Target:
    name: str
    precision: str
    what: str
    variants: list[Variant]
    quality: Callable[[], str] | None = None  # bf16 rows: how far from fp32, measured once after the timing


# ---------------------------------------------------------------------------------------------------------------
# The targets


def autocast_for(precision: str):
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


def phrase() -> str:
    return PHRASE.read_text().splitlines()[0]


def text_ids() -> tuple[torch.Tensor, torch.Tensor]:
    ids = TextProcessor().encode(phrase())
    return torch.tensor([ids]), torch.tensor([len(ids)])


def tacotron2_for(path: str, sizes: Sizes, state_dict: dict | None = None) -> Tacotron2:
    model = Tacotron2(**sizes.tacotron2)
    if state_dict is not None:
        model.load_state_dict(state_dict)
    if path in ("fast", "bf16", "fast-fp16"):  # bf16: the fast decoder under bf16 autocast (--bf16)
        model.decoder.fast = True
        model.decoder.half_lstm_weights = path == "fast-fp16"  # the CPU's default (--half-lstm-weights)
    elif path == "compiled":
        model.decoder.compile_step()
    elif path in ("int8", "fast-int8"):  # --quantize int8 (with --fast-decoder): int8 LSTMs and linear layers
        quantize_tacotron2(model, fast_decoder=path == "fast-int8")
    return model


def tacotron2_training(sizes: Sizes, precision: str, paths: list[str]) -> Target:
    torch.manual_seed(0)
    state_dict = Tacotron2(**sizes.tacotron2).state_dict()
    batch_size, frames = sizes.train_batch, sizes.train_frames
    text = torch.randint(1, 148, (batch_size, sizes.train_symbols))
    gate = torch.zeros(batch_size, frames)
    gate[:, -1] = 1.0
    batch = {"text": text, "text_lengths": torch.full((batch_size,), sizes.train_symbols), "gate": gate,
             "mel": torch.randn(batch_size, 80, frames), "mel_lengths": torch.full((batch_size,), frames)}
    loss_function = Tacotron2Loss()

    def step_of(model: Tacotron2) -> Callable[[], dict]:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step():
            with autocast_for(precision):
                output = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
                loss = loss_function(output, batch)["loss"]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return None

        return step

    def loss_difference() -> str:
        losses = {}
        for name in ("fp32", "bf16"):
            model = tacotron2_for("fast", sizes, state_dict)
            torch.manual_seed(1)
            with autocast_for(name):
                losses[name] = float(loss_function(model(batch["text"], batch["text_lengths"], batch["mel"],
                                                         batch["mel_lengths"]), batch)["loss"])
        return f"loss {losses['bf16']:.4f} vs fp32 {losses['fp32']:.4f}"

    return Target("tacotron2-train", precision,
                  f"batch {batch_size}, {sizes.train_symbols} symbols, {frames} frames, Adam",
                  [Variant(path, step_of(tacotron2_for(path, sizes, state_dict))) for path in paths],
                  loss_difference if precision == "bf16" else None)


def tacotron2_inference(sizes: Sizes, precision: str, paths: list[str]) -> Target:
    torch.manual_seed(0)
    reference = Tacotron2(**sizes.tacotron2)
    hold_gate_shut(reference)  # in the weights every path loads (before the int8 path packs them)
    state_dict = reference.state_dict()
    text, lengths = text_ids()

    def infer_with(model: Tacotron2, infer_precision: str = precision, script: bool = False
                   ) -> Callable[[], torch.Tensor]:
        model.eval()
        decode = torch.jit.script(model).infer if script else model.infer  # script: --no-fast-decoder's CPU path

        def infer():
            with autocast_for(infer_precision), max_steps_warnings_silenced():
                return decode(text, lengths, max_decoder_steps=sizes.decoder_steps, max_frames_after_text_end=0,
                              generator=torch.Generator().manual_seed(0)).mel

        return infer

    def mel_difference() -> str:
        model = tacotron2_for("fast", sizes, state_dict)
        return describe_difference(infer_with(model)().float(), infer_with(model, "fp32")())

    def variant(path: str) -> Variant:
        return Variant(path, infer_with(tacotron2_for(path, sizes, state_dict), "bf16" if path == "bf16" else precision,
                                        script=path == "torchscript"))

    return Target("tacotron2-infer", precision, f"batch 1, {text.size(1)} characters, {sizes.decoder_steps} steps",
                  [variant(path) for path in paths], mel_difference if precision == "bf16" else None)


@contextmanager
def strided_conditioning(enabled: bool):
    """WaveGlow's conditioning laid out as before it was made contiguous (a strided view every coupling layer's
    1x1 convolution copied): today's eager path, for the side-by-side comparison. Values are unchanged."""
    if not enabled:
        yield
        return
    contiguous = WaveGlow._conditioning

    def strided(self, mel, n_samples):
        return contiguous(self, mel, n_samples).transpose(1, 2).contiguous().transpose(1, 2)

    WaveGlow._conditioning = strided
    try:
        yield
    finally:
        WaveGlow._conditioning = contiguous


def waveglow_inference(sizes: Sizes, precision: str, paths: list[str]) -> Target:
    torch.manual_seed(0)
    reference = WaveGlow(**sizes.waveglow)
    mel = torch.randn(1, 80, sizes.waveglow_frames)

    def infer_with(path: str) -> Callable[[], None]:
        model = WaveGlow(**sizes.waveglow).eval()
        model.load_state_dict(reference.state_dict())
        remove_weight_norm(model)
        if path == "compiled":
            model.compile_coupling()

        def infer():  # bf16: the fast path under bf16 autocast
            with torch.no_grad(), autocast_for("bf16" if path == "bf16" else precision), \
                    strided_conditioning(path == "eager"):
                model.infer(mel, sigma=0.6, generator=torch.Generator().manual_seed(0))

        return infer

    seconds = sizes.waveglow_frames * 256 / 22050
    return Target("waveglow-infer", precision, f"{sizes.waveglow_frames} mel frames = {seconds:.2f} s of audio",
                  [Variant(path, infer_with(path)) for path in paths])


def text_to_wav(sizes: Sizes, precision: str, paths: list[str], decoder_steps: int, folder: Path) -> Target:
    tacotron2 = random_checkpoint("Tacotron2", decoding_to_max_steps(sizes.tacotron2), folder, hold_gate_shut)
    waveglow = random_checkpoint("WaveGlow", sizes.waveglow, folder)
    text = phrase()

    def synthesizer_for(path: str, synthesis_precision: str = precision) -> Synthesizer:
        argv = ["-i", str(PHRASE), "-o", str(folder), "--tacotron2", str(tacotron2), "--waveglow", str(waveglow),
                "-s", "0.6", "-d", "0.01", "--max-decoder-steps", str(decoder_steps), "--no-torchscript", "--cpu"]
        argv += {"eager": ["--no-fast-decoder"], "fast": ["--fast-decoder"], "compiled": ["--compile"]}[path]
        argv += ["--bf16"] if synthesis_precision == "bf16" else []
        return Synthesizer.from_args(inference.build_parser().parse_args(argv))

    def run_with(path: str) -> Callable[[], dict]:
        synthesizer = synthesizer_for(path)

        def run():
            with strided_conditioning(path == "eager"):
                timings = synthesizer.synthesize_batch([text], ["text"], seed=0, warn_max_steps=False)["timings"]
            return {"tacotron2": timings["tacotron2"], "vocoder": timings["vocoder"]}

        return run

    def mel_difference() -> str:
        mels = {name: synthesizer_for("fast", name).synthesize_batch([text], ["text"], seed=0,
                                                                    warn_max_steps=False)["mel"]
                for name in ("fp32", "bf16")}
        return describe_difference(mels["bf16"], mels["fp32"])

    return Target("text-to-wav", precision, f"batch 1, {len(text)} characters, {decoder_steps} frames, WaveGlow-256 "
                  "+ denoiser", [Variant(path, run_with(path)) for path in paths],
                  mel_difference if precision == "bf16" else None)


def describe_difference(mel: torch.Tensor, reference: torch.Tensor) -> str:
    difference = (mel.float() - reference.float()).abs()
    spread = (reference.max() - reference.min()).item()
    return (f"mel vs fp32: max |diff| {difference.max().item():.3g}, mean {difference.mean().item():.3g} "
            f"(fp32 mel spans {spread:.3g})")


# ---------------------------------------------------------------------------------------------------------------
# Timing and reporting


def measure(target: Target, warmup: int, repeats: int) -> None:
    """The first call of every path (a compiled path compiles there), then warm-up and timed calls, the paths
    taking turns so that a change in the machine's load falls on all of them alike."""
    for variant in target.variants:
        start = time.perf_counter()
        variant.run()
        variant.first_call = time.perf_counter() - start
    for _ in range(max(warmup - 1, 0)):
        for variant in target.variants:
            variant.run()
    for _ in range(repeats):
        for variant in target.variants:
            start = time.perf_counter()
            result = variant.run()
            variant.times.append(time.perf_counter() - start)
            if isinstance(result, dict):
                variant.stages.append(result)


def report(target: Target) -> list[dict]:
    rows = []
    eager = statistics.median(target.variants[0].times)
    for variant in target.variants:
        median = statistics.median(variant.times)
        row = {"target": target.name, "what": target.what, "precision": target.precision, "path": variant.name,
               "seconds_median": median, "seconds_min": min(variant.times), "seconds_max": max(variant.times),
               "repeats": len(variant.times), "speedup": eager / median, "first_call_seconds": variant.first_call}
        if variant.name == "compiled":
            row["compile_seconds"] = max(variant.first_call - median, 0.0)
        for stage in (variant.stages[0] if variant.stages else {}):
            row[f"{stage}_seconds_median"] = statistics.median(stages[stage] for stages in variant.stages)
        rows.append(row)
    return rows


HEADER = f"{'target':16} {'precision':9} {'path':9} {'median':>9} {'min-max':>17} {'speed-up':>8}  notes"


def print_rows(rows: list[dict]) -> None:
    for row in rows:
        notes = []
        if "compile_seconds" in row:
            notes.append(f"compile {row['compile_seconds']:.1f} s")
        stages = [key[:-len("_seconds_median")] for key in row if key.endswith("_seconds_median")]
        if stages:
            notes.append(", ".join(f"{stage} {row[f'{stage}_seconds_median']:.3f} s" for stage in stages))
        print(f"{row['target']:16} {row['precision']:9} {row['path']:9} {row['seconds_median']:8.3f}s "
              f"{row['seconds_min']:7.3f}-{row['seconds_max']:7.3f}s {row['speedup']:7.2f}x  {'; '.join(notes)}",
              flush=True)


def print_top_operations(run: Callable[[], object], heading: str, rows: int = 15) -> None:
    """Profile one call of `run` (torch.profiler, CPU) and print the heading, then its top operations by self time."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as profiler:
        run()
    print(heading)
    print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def profile(target: Target, rows: int = 15) -> None:
    for variant in target.variants:
        print_top_operations(variant.run, f"\n== profile: {target.name} {target.precision} {variant.name} (one call; "
                             "self CPU time)", rows)


def best_seconds(run: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` timed calls, after one untimed call (first-call allocations and kernel choice)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def add_benchmark_args(parser: argparse.ArgumentParser, targets: tuple[str, ...]) -> None:
    """The flags this benchmark shares with scripts/benchmark_cpu_targets.py."""
    parser.add_argument("--targets", nargs="+", choices=targets, default=list(targets))
    parser.add_argument("--quick", action="store_true", help="tiny models, 1 repeat: a smoke test, not a measurement")
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls per path, the first included "
                        "(default 2; 1 with --quick)")
    parser.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                        help="bf16 rows: auto = only where the CPU has native bf16")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--profile", choices=targets, default=None,
                        help="also print torch.profiler's top operations of one call per path of this target (fp32)")
    parser.add_argument("--json", default=None, help="write the rows here")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    add_benchmark_args(parser, TARGETS)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per path (default 5; 3 for text "
                        "to wav; 1 with --quick)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help="also time the compiled path (default: on, off with --quick)")
    parser.add_argument("--decoder-steps", type=int, default=None, help="text to wav's frames (default 600)")
    options = parser.parse_args(argv)

    if options.threads:
        torch.set_num_threads(options.threads)
    sizes = QUICK_SIZES if options.quick else NVIDIA_SIZES
    compile_too = options.compile if options.compile is not None else not options.quick
    paths = ["eager", "fast"] + (["compiled"] if compile_too else [])
    warmup = options.warmup if options.warmup is not None else 1 if options.quick else 2
    decoder_steps = options.decoder_steps or (sizes.decoder_steps if options.quick else 600)
    with_bf16 = options.bf16 == "on" or (options.bf16 == "auto" and native_bf16())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}, native bf16: {native_bf16()}"
          + ("" if with_bf16 else " (bf16 rows skipped: --bf16 on to time them anyway)"), flush=True)

    folder = tempfile.TemporaryDirectory(prefix="benchmark_speed_")  # text to wav's random checkpoints
    builders = {"tacotron2-train": lambda precision: tacotron2_training(sizes, precision, paths),
                "tacotron2-infer": lambda precision: tacotron2_inference(sizes, precision, paths),
                "waveglow-infer": lambda precision: waveglow_inference(sizes, precision, paths),
                "text-to-wav": lambda precision: text_to_wav(sizes, precision, paths, decoder_steps,
                                                             Path(folder.name))}
    with_bf16_row = {"tacotron2-train", "text-to-wav"}
    all_rows = []
    print(HEADER)
    with folder:
        for name in options.targets:
            for precision in ["fp32"] + (["bf16"] if with_bf16 and name in with_bf16_row else []):
                torch._dynamo.reset()  # each target compiles afresh: its own compile time, no recompile limit
                target = builders[name](precision)
                repeats = options.repeats or (1 if options.quick else 3 if name == "text-to-wav" else 5)
                measure(target, warmup, repeats)
                rows = report(target)
                print_rows(rows)
                if target.quality is not None:
                    quality = target.quality()
                    print(f"{'':16} bf16 against fp32 (same weights and seed): {quality}", flush=True)
                    for row in rows:
                        row["bf16_against_fp32"] = quality
                all_rows += rows
                if options.profile == name and precision == "fp32":
                    profile(target)
    if options.json:
        Path(options.json).write_text(json.dumps({"torch_threads": torch.get_num_threads(), "rows": all_rows},
                                                 indent=2))
    return all_rows


if __name__ == "__main__":
    main()
