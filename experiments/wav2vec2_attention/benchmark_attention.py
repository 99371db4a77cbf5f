"""wav2vec 2.0's self-attention on this CPU, bf16 against float32: why wav2vec2/model.py's `attention` attends a bf16
q, k, v in float32 on the CPU.

    python -m experiments.wav2vec2_attention.benchmark_attention          # the shapes of `make demo-asr`'s batches
    python -m experiments.wav2vec2_attention.benchmark_attention --quick  # 1 repeat: a smoke test of the script
    python -m experiments.wav2vec2_attention.benchmark_attention --training-steps 60 [--data data/asr_accent]  # updates

Each row is one call of PyTorch's scaled dot-product attention, forward alone and forward with backward, at a
(batch, heads, frames, head size) that `make demo-asr`'s batches of 320,000 samples give (4 heads of 64, a padding
mask): bf16 q, k, v attended in bf16 (the kernel autocast picks) and in float32 (the model's way), and each one's
largest difference from a float64 attention of the same bf16 inputs. It prints the best of --repeats calls.

--training-steps N then times whole training updates of `make demo-asr`'s preset (configs/wav2vec2_asr_demo.json) on
its corpus (`make demo-asr` builds it): N batches, each trained on twice by one model, once with the attention in bf16
and once in float32, the two in turn and each first on alternate batches, so that a machine whose speed drifts
slows both alike. It prints the mean and median seconds an update of each.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

import torch
from torch.nn import functional as F

import wav2vec2.model
from scripts.benchmark_speed import best_seconds
from wav2vec2.model import attention

# (batch, frames): utterances of 77 to 323 frames, as many as fit 320,000 samples (1000 frames of 20 ms)
DEMO_BATCHES = [(12, 77), (8, 120), (5, 185), (3, 323)]
HEADS, HEAD_SIZE = 4, 64


def inputs(batch: int, frames: int, generator: torch.Generator):
    q, k, v = (torch.randn(batch, HEADS, frames, HEAD_SIZE, generator=generator).bfloat16().requires_grad_()
               for _ in range(3))
    lengths = torch.randint(frames // 2, frames + 1, (batch,), generator=generator)
    lengths[0] = frames  # the longest utterance sets the batch's frames
    attend = (torch.arange(frames)[None, :] < lengths[:, None])[:, None, None, :]
    return q, k, v, attend


def bf16_attention(q, k, v, attend, dropout):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attend, dropout_p=dropout)


WAYS = {"bf16": bf16_attention, "float32": attention}


def time_training_updates(steps: int, data: str) -> None:
    import train
    from common.registry import get_recipe
    from common.trainer import Trainer
    from scripts.benchmark_training import cycling_batches, timed_step

    output_dir = tempfile.mkdtemp(prefix="benchmark_attention_")  # the trainer's log; nothing is saved
    args = train.parse_run_args(["-m", "wav2vec2", "finetune", "--config-file", "configs/wav2vec2_asr_demo.json",
                                 "--data", data, "-o", output_dir, "--num-workers", "0"])
    trainer = Trainer.from_args(get_recipe(args.model_name), args)
    batches = cycling_batches(trainer)
    seconds = {way: [] for way in WAYS}
    warmup = 2
    try:
        for step in range(warmup + steps):
            batch = next(batches)
            for way in (list(WAYS) if step % 2 == 0 else list(WAYS)[::-1]):
                wav2vec2.model.attention = WAYS[way]  # what SelfAttention calls
                step_seconds, _ = timed_step(trainer, batch)
                if step >= warmup:
                    seconds[way].append(step_seconds)
    finally:
        wav2vec2.model.attention = attention
        shutil.rmtree(output_dir, ignore_errors=True)
    print(f"training updates of configs/wav2vec2_asr_demo.json on {data}, {steps} batches, seconds an update:")
    for way, times in seconds.items():
        print(f"  attention in {way}: mean {statistics.mean(times):.4f}, median {statistics.median(times):.4f}")
    print(f"  bf16 / float32 (means): {statistics.mean(seconds['bf16']) / statistics.mean(seconds['float32']):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="1 repeat: a smoke test, not a measurement")
    parser.add_argument("--training-steps", type=int, default=0, metavar="N",
                        help="then time N training updates of make demo-asr's preset each way (0: none)")
    parser.add_argument("--data", default="data/asr_accent", help="the corpus of --training-steps")
    options = parser.parse_args()
    if options.training_steps < 0:
        parser.error(f"--training-steps must be 0 or more, got {options.training_steps}")
    if options.training_steps and not (Path(options.data) / "train.tsv").is_file():
        parser.error(f"--data {options.data} has no train.tsv: `make demo-asr` builds data/asr_accent, or give the "
                     "folder of another corpus")
    repeats = 1 if options.quick else options.repeats
    generator = torch.Generator().manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, best of {repeats} calls, ms")
    print("batch x frames | pass | bf16 | float32 | bf16 / float32 | largest difference from float64: bf16, float32")
    totals = {(way, backward): 0.0 for way in WAYS for backward in (False, True)}
    for batch, frames in DEMO_BATCHES:
        q, k, v, attend = inputs(batch, frames, generator)
        gradient = torch.randn(q.shape, generator=generator).bfloat16()
        exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=attend)
        errors = {way: (run(q, k, v, attend, 0.0).double() - exact).abs().max().item() for way, run in WAYS.items()}
        for backward in (False, True):
            seconds = {}
            for way, run in WAYS.items():
                if backward:
                    seconds[way] = best_seconds(lambda: run(q, k, v, attend, 0.0).backward(gradient), repeats)
                else:
                    with torch.no_grad():
                        seconds[way] = best_seconds(lambda: run(q, k, v, attend, 0.0), repeats)
                totals[way, backward] += seconds[way]
            print(f"{batch} x {frames} | {'forward + backward' if backward else 'forward'} | "
                  f"{seconds['bf16'] * 1e3:.2f} | {seconds['float32'] * 1e3:.2f} | "
                  f"{seconds['bf16'] / seconds['float32']:.2f}x | {errors['bf16']:.1e}, {errors['float32']:.1e}")
    for backward in (False, True):
        bf16, float32 = totals["bf16", backward], totals["float32", backward]
        print(f"all | {'forward + backward' if backward else 'forward'} | {bf16 * 1e3:.2f} | {float32 * 1e3:.2f} | "
              f"{bf16 / float32:.2f}x |")
    if options.training_steps:
        time_training_updates(options.training_steps, options.data)


if __name__ == "__main__":
    main()
