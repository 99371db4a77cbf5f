"""How far two runs of `inference.py -m Tacotron2 --save-mels` are apart, file by file (e.g. fp32 against
--quantize int8).

    python -m experiments.tacotron2_int8.compare_mels output/int8_tts/fp32 output/int8_tts/int8

Each folder holds mel_<n>.pt files (n_mel_channels, frames) of log mels. For each file present in both it compares
the frames both have, and reports the mean and largest absolute difference there, the difference in length (a changed
stop step), and the mean absolute log mel of the first folder's file for scale. A summary line gives the means over
all files.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from common.errors import UserError, exit_on_user_error


def mel_files(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder (give the -o folders of two inference.py --save-mels runs)")
    files = {path.name: path for path in sorted(folder.glob("mel_*.pt"))}
    if not files:
        raise UserError(f"{folder}: no mel_*.pt files in it (run inference.py with --save-mels)")
    return files


def compare(first: torch.Tensor, second: torch.Tensor) -> dict:
    frames = min(first.size(-1), second.size(-1))
    difference = (first[..., :frames] - second[..., :frames]).abs()
    return {"mean_abs_difference": float(difference.mean()), "max_abs_difference": float(difference.max()),
            "length_difference": second.size(-1) - first.size(-1), "mean_abs_log_mel": float(first.abs().mean())}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("first", type=Path, help="folder of the reference run's mel_*.pt")
    parser.add_argument("second", type=Path, help="folder of the run compared with it")
    args = parser.parse_args(argv)
    first, second = mel_files(args.first), mel_files(args.second)
    common = sorted(set(first) & set(second), key=lambda name: int(name[4:-3]) if name[4:-3].isdigit() else name)
    if not common:
        raise UserError(f"{args.first} and {args.second} have no mel_*.pt file name in common")
    rows = []
    for name in common:
        row = {"file": name, **compare(torch.load(first[name], weights_only=True),
                                       torch.load(second[name], weights_only=True))}
        rows.append(row)
        print(f"{name}: mean |diff| {row['mean_abs_difference']:.4f}, max {row['max_abs_difference']:.3f}, "
              f"length {row['length_difference']:+d} frames (mean |log mel| {row['mean_abs_log_mel']:.2f})")
    mean = lambda key: sum(row[key] for row in rows) / len(rows)  # noqa: E731
    changed = sum(row["length_difference"] != 0 for row in rows)
    print(f"{len(rows)} files: mean |diff| {mean('mean_abs_difference'):.4f} (mean |log mel| "
          f"{mean('mean_abs_log_mel'):.2f}), {changed} with another length", file=sys.stdout)
    return rows


if __name__ == "__main__":
    exit_on_user_error(main)
