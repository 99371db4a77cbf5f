"""The fast decoder with its two LSTMs' weights in float16 and in bf16 (Decoder.half_lstm_weights) against float32,
over the LSTMs' size and the batch: where each pays, and from which batch float16 stops paying.

    python -m experiments.tacotron2_half_lstm.sweep [--rnn-dims 256 512 768 1024] [--batches 1 2 4 8 16] [--json F]
    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 python -m experiments.tacotron2_half_lstm.sweep   # AVX2 kernels

Random weights (the time does not depend on them), NVIDIA's architecture with both LSTMs at each --rnn-dims (256 with
the demo preset's other sizes: the demo's model), batch of copies of scripts/benchmark_speed.py's phrase, the gate
held shut so that every run decodes --steps steps. Each row: the median of --repeats calls of each way, the ways
taking turns; the largest absolute mel difference of each from float32. bf16 is timed where the CPU computes it
natively (common/cpu.py), or with --bf16 on. The sweep holds the weights in each dtype at every batch, whatever
Decoder.lstm_weight_dtype would choose there.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import tacotron2.model as tacotron2_model
from common.cpu import cpu_description, native_bf16
from scripts.benchmark_speed import hold_gate_shut, text_ids
from tacotron2.model import Tacotron2, max_steps_warnings_silenced

DEMO_SIZES = dict(symbols_embedding_dim=128, encoder_embedding_dim=128, encoder_n_convolutions=2, prenet_dim=128,
                  attention_dim=64, attention_location_n_filters=16, postnet_embedding_dim=128,
                  postnet_n_convolutions=3, n_frames_per_step=3)  # configs/tacotron2_demo.json's model


def model_with(rnn_dim: int) -> Tacotron2:
    torch.manual_seed(0)
    sizes = DEMO_SIZES if rnn_dim == 256 else {}
    model = Tacotron2(**sizes, attention_rnn_dim=rnn_dim, decoder_rnn_dim=rnn_dim)
    hold_gate_shut(model)
    model.eval().decoder.fast = True
    return model


def decode(model: Tacotron2, batch: int, steps: int, dtype: torch.dtype) -> torch.Tensor:
    text, lengths = text_ids()
    # float16: the limit lifted to every batch; bf16: no float16 batch, bf16 beyond; float32: neither
    tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH = batch if dtype == torch.float16 else 0
    model.decoder.half_lstm_weights = dtype != torch.float32
    model.decoder.native_bf16 = dtype == torch.bfloat16
    assert model.decoder.lstm_weight_dtype(batch) == dtype
    with torch.inference_mode(), max_steps_warnings_silenced():
        return model.infer(text.repeat(batch, 1), lengths.repeat(batch), max_decoder_steps=steps,
                           max_frames_after_text_end=0, generator=torch.Generator().manual_seed(0)).mel


def row(rnn_dim: int, batch: int, steps: int, repeats: int, dtypes: list[torch.dtype]) -> dict:
    model = model_with(rnn_dim)
    ways = [torch.float32, *dtypes]
    seconds = {dtype: [] for dtype in ways}
    mels = {dtype: decode(model, batch, steps, dtype) for dtype in ways}  # also the warm-up
    for _ in range(repeats):
        for dtype in ways:
            start = time.perf_counter()
            decode(model, batch, steps, dtype)
            seconds[dtype].append(time.perf_counter() - start)
    lstm_bytes = sum(cell.weight_ih.numel() + cell.weight_hh.numel()
                     for cell in (model.decoder.attention_rnn, model.decoder.decoder_rnn)) * 4
    result = {"rnn_dim": rnn_dim, "batch": batch, "lstm_weights_mib_float32": lstm_bytes / 2**20,
              "float32_seconds": statistics.median(seconds[torch.float32])}
    for dtype in dtypes:
        name = str(dtype).removeprefix("torch.")
        result[f"{name}_seconds"] = statistics.median(seconds[dtype])
        result[f"{name}_speedup"] = result["float32_seconds"] / result[f"{name}_seconds"]
        result[f"{name}_mel_max_abs_difference"] = float((mels[dtype] - mels[torch.float32]).abs().max())
    return result


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rnn-dims", nargs="+", type=int, default=[256, 512, 768, 1024])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 2, 4, 8, 16])
    parser.add_argument("--steps", type=int, default=200, help="decoder steps per call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                        help="time bf16 weights: auto, where bf16 is native")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with_bf16 = args.bf16 == "on" or (args.bf16 == "auto" and native_bf16())
    dtypes = [torch.float16] + ([torch.bfloat16] if with_bf16 else [])
    print(f"{cpu_description()}; torch {torch.__version__}, {torch.get_num_threads()} threads, ATen "
          f"{torch.backends.cpu.get_cpu_capability()}", flush=True)
    rows, limit = [], tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH
    try:
        for rnn_dim in args.rnn_dims:
            for batch in args.batches:
                rows.append(row(rnn_dim, batch, args.steps, args.repeats, dtypes))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH = limit
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"cpu": cpu_description(), "rows": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
