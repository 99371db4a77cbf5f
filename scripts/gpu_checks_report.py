"""Summary of a scripts/gpu_checks.sh run as Markdown tables: python -m scripts.gpu_checks_report LOG_DIR

Reads what the stages left in LOG_DIR (stages.tsv, env.json, test.log, sanitize_<tool>.log,
nvwavenet_benchmark.json, training_<model>_<precision>.json, nan_waveglow_nvlog.json, pipeline.jsonl); a stage
that did not run or left nothing is left out, so it also summarises a run cut short.
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from common.logger import is_update_record, read_dllogger_file


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def stages(folder: Path) -> str:
    path = folder / "stages.tsv"
    if not path.exists():
        return ""
    rows = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    return "## Stages\n\n" + table(["stage", "result", "seconds"], rows)


def environment(folder: Path) -> str:
    path = folder / "env.json"
    if not path.exists():
        return ""
    info = json.loads(path.read_text())
    keys = ("gpu", "driver", "compute_capability", "gpu_memory_gib", "multiprocessors", "torch", "torch_cuda",
            "cudnn", "nvcc", "compute_sanitizer", "clocks", "python", "cpu_count")
    return "## Machine\n\n" + table(["", ""], [[key, info[key]] for key in keys if key in info])


def tests(folder: Path) -> str:
    path = folder / "test.log"
    if not path.exists():
        return ""
    results = [line for line in path.read_text().splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    failures = [line for line in path.read_text().splitlines() if line.startswith(("FAILED", "ERROR"))]
    return "## GPU tests\n\n" + "\n".join(["    " + line for line in results[-1:] + failures])


def sanitizers(folder: Path) -> str:
    rows = []
    for path in sorted(folder.glob("sanitize_*.log")):
        text = path.read_text(errors="replace")
        tool = path.stem.split("_", 1)[1]
        summary = re.findall(r"(?:ERROR|RACECHECK) SUMMARY: ([^\n]*)", text)
        checked = len(re.findall(r"matches float64", text))
        mismatches = re.findall(r"(\S+ +\S+): MISMATCH", text)
        rows.append([tool, summary[-1] if summary else "no summary (did not finish?)", checked,
                     ", ".join(mismatches) or "none"])
    if not rows:
        return ""
    return "## compute-sanitizer (every variant x fp32/fp16)\n\n" + table(
        ["tool", "sanitizer summary", "runs matching float64", "mismatches"], rows)


def nvwavenet(folder: Path) -> str:
    path = folder / "nvwavenet_benchmark.json"
    if not path.exists():
        return ""
    results = json.loads(path.read_text())
    rows, autos = [], []
    for row in results["rows"]:
        if row["implementation"] == "auto":
            if "error" in row:
                autos.append([row["model"], row["precision"], row["batch"], "error: " + row["error"], "", ""])
                continue
            rates = ", ".join(f"{v} {r:,.0f}" for v, r in row["rates"].items())
            autos.append([row["model"], row["precision"], row["batch"], row["auto_choice"], row["fastest"],
                          f"{row['auto_rate_vs_fastest']:.0%}; {rates}"])
        elif "error" in row:
            rows.append([row["model"], row["implementation"], row["precision"], "not run: " + row["error"], "", "",
                         ""])
        else:
            rate = row["samples_per_second"]
            rows.append([row["model"], row["implementation"], row["precision"], f"{rate:,.0f}",
                         f"{rate / 16000:.2f} / {rate / 24000:.2f}", row.get("max_real_time_batch_16khz", "-"),
                         row.get("max_real_time_batch_24khz", "-")])
    text = f"## nvwavenet ({results.get('gpu', {}).get('name', 'no GPU')}, {results.get('gpu_samples', '?')} samples " \
           "per timed run)\n\n" + table(["model", "path", "precision", "samples/s (batch 1)",
                                          "x real time 16 / 24 kHz", "largest real-time batch 16 kHz",
                                          "24 kHz"], rows)
    if autos:
        text += "\n\n" + table(["model", "precision", "batch", "auto picks", "fastest measured",
                                "auto's rate / fastest; samples/s per variant"], autos)
    return text


def training(folder: Path) -> str:
    rows = []
    for path in sorted(folder.glob("training_*.json")):
        _, model, precision = path.stem.split("_", 2)
        result = json.loads(path.read_text())
        rate_key = next(key for key in result if key.endswith("_per_sec"))
        rows.append([model, precision, result["batch_size"], f"{result[rate_key]:,.0f} {rate_key[:-8]}/s",
                     f"{result['iteration_time_mean'] * 1000:.0f} ms (std {result['iteration_time_std'] * 1000:.0f})",
                     result["iterations"]])
    if not rows:
        return ""
    return "## Training throughput (1 GPU)\n\n" + table(
        ["model", "precision", "batch", "throughput", "iteration", "iterations timed"], rows)


def nan_check(folder: Path) -> str:
    path = folder / "nan_waveglow_nvlog.json"
    if not path.exists():
        return ""
    records = read_dllogger_file(path)
    steps = [r["data"] for r in records if is_update_record(r)]
    losses = [step["train_loss"] for step in steps]
    skipped = [r["data"]["skipped_steps"] for r in records if "skipped_steps" in r.get("data", {})]
    epochs = [r["data"] for r in records if len(r.get("step", [])) == 1 and "train_loss" in r.get("data", {})]
    nonfinite = [i + 1 for i, loss in enumerate(losses) if not math.isfinite(loss)]
    head, tail = losses[:20], losses[-20:]
    rows = [["iterations logged", len(losses)],
            ["non-finite train losses", f"{len(nonfinite)}" + (f" (iterations {nonfinite[:10]})" if nonfinite else "")],
            ["skipped steps (loss-scale overflows and non-finite losses)", skipped[-1] if skipped else "?"],
            ["mean loss, first 20 iterations", f"{sum(head) / max(len(head), 1):.3f}"],
            ["mean loss, last 20 iterations", f"{sum(tail) / max(len(tail), 1):.3f}"],
            ["epoch mean losses", ", ".join(f"{e['train_loss']:.3f}" for e in epochs)],
            ["validation losses", ", ".join(f"{r['data']['val_loss']:.3f}" for r in records
                                            if "val_loss" in r.get("data", {}) and len(r.get("step", [])) == 1)]]
    return "## WaveGlow fp16 (--amp) training: non-finite check\n\n" + table(["", ""], rows)


def pipeline(folder: Path) -> str:
    path = folder / "pipeline.jsonl"
    if not path.exists():
        return ""
    rows = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        rows.append([r["batch_size"], r["precision"], r["wn_channels"], r["repeats"],
                     f"{r['latency_mean']:.3f} ({r['latency_std']:.3f})",
                     f"{r['latency_p50']:.3f} / {r['latency_p90']:.3f} / {r['latency_p99']:.3f}",
                     f"{r['tacotron2_latency']:.3f} / {r['vocoder_latency']:.3f}", f"{r['samples_per_sec']:,.0f}",
                     f"{r['real_time_factor']:.2f}", int(r["mel_frames"])])
    return "## Tacotron 2 + WaveGlow + denoiser, 128 characters\n\n" + table(
        ["batch", "precision", "WaveGlow channels", "repeats", "latency mean (std) s", "p50 / p90 / p99 s",
         "Tacotron 2 / WaveGlow+denoiser s", "samples/s", "RTF", "mel frames"], rows)


def main(argv: list[str]) -> None:
    folder = Path(argv[0] if argv else "output/gpu_checks")
    parts = [stages(folder), environment(folder), tests(folder), sanitizers(folder), nvwavenet(folder),
             training(folder), nan_check(folder), pipeline(folder)]
    print("\n\n".join(part for part in parts if part))


if __name__ == "__main__":
    main(sys.argv[1:])
