"""Summarise a demo run: python -m scripts.report_demo --log output/demo/nvlog.json --wavs output/demo/wavs"""
from __future__ import annotations

import argparse
from pathlib import Path

from common.logger import read_dllogger_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", required=True, help="the training DLLogger file")
    parser.add_argument("--inference-log", required=True, help="the inference DLLogger file")
    parser.add_argument("--wavs", required=True)
    parser.add_argument("--seconds", type=int, default=None, help="wall time of the whole demo")
    args = parser.parse_args()

    validations = [r["data"] for r in read_dllogger_file(args.log) if r["type"] == "LOG" and "val_loss" in r["data"]
                   and isinstance(r["step"], list) and len(r["step"]) == 1]
    synthesized = [r["data"] for r in read_dllogger_file(args.inference_log)
                   if r["type"] == "LOG" and "alignment_score" in r["data"]]
    print("\n== Demo summary ==")
    if args.seconds is not None:
        print(f"wall time: {args.seconds // 60} min {args.seconds % 60} s")
    if validations:
        last = validations[-1]
        print(f"epochs: {len(validations)}; final validation loss {last['val_loss']:.4f}; validation "
              f"alignment-health score {last.get('alignment_score', float('nan')):.3f} (aligned above ~0.7)")
    if synthesized:
        scores = [record["alignment_score"] for record in synthesized]
        print(f"alignment-health score of the synthesized phrases: {sum(scores) / len(scores):.3f}")
    wavs = sorted(Path(args.wavs).glob("*.wav"))
    print(f"{len(wavs)} wav files and alignment plots in {args.wavs}/:")
    for wav in wavs:
        print(f"  {wav}")


if __name__ == "__main__":
    main()
