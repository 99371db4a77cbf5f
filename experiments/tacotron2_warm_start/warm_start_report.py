"""The table of experiments/tacotron2_warm_start/warm_start_experiment.sh: for each training run, the first epoch
whose validation alignment health reached the threshold, and the CER and WER of its speech through the recognizer.

    python -m experiments.tacotron2_warm_start.warm_start_report \
        --run warm_start=output/warm_start_en-us+f3/warm_start --run scratch=output/warm_start_en-us+f3/scratch \
        -o output/warm_start_en-us+f3/warm_start_report.json

Each run folder holds train.py's nvlog.json (a validation record per epoch, with `alignment_score`), train_seconds
(written by the experiment script), and where the recognizer was run intelligibility_test/ and
intelligibility_phrases/ (scripts/intelligibility.py's intelligibility.json). The table is printed in Markdown and
the numbers written to -o as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.errors import UserError, UserFileNotFoundError, exit_on_user_error
from common.logger import read_dllogger_file

ALIGNED = 0.7  # the alignment-health score above which attention walks along the text (tacotron2/alignment.py)


def validations(log: Path) -> list[tuple[int, dict]]:
    """(epoch, record) of each end-of-epoch validation in a training log, in epoch order."""
    if not log.is_file():
        raise UserFileNotFoundError(f"{log}: training log not found (train.py writes nvlog.json in its -o folder)")
    found = {}
    for record in read_dllogger_file(log):
        step = record.get("step")
        if record.get("type") == "LOG" and "val_loss" in record["data"] and isinstance(step, list) and len(step) == 1:
            found[int(step[0])] = record["data"]  # a resumed run validating an epoch again: the later record
    return sorted(found.items())


def first_epoch_reaching(epochs: list[tuple[int, dict]], threshold: float) -> int | None:
    return next((epoch for epoch, data in epochs if data.get("alignment_score", float("-inf")) >= threshold), None)


def intelligibility(folder: Path) -> dict | None:
    """The overall CER and WER (percent) of the synthesized speech, and of eSpeak NG's where measured; None where
    the recognizer was not run."""
    path = folder / "intelligibility.json"
    if not path.is_file():
        return None
    result = json.loads(path.read_text(encoding="utf-8"))
    summary = {"cer": result["synthesized"]["cer"], "wer": result["synthesized"]["wer"],
               "files": len(result["synthesized"]["files"])}
    if "espeak" in result:
        summary["espeak_cer"] = result["espeak"]["cer"]
    return summary


def summarize_run(name: str, folder: Path, threshold: float) -> dict:
    epochs = validations(folder / "nvlog.json")
    if not epochs:
        raise UserError(f"{folder / 'nvlog.json'} has no end-of-epoch validation: did the run train an epoch?")
    last = epochs[-1][1]
    seconds = folder / "train_seconds"
    return {"run": name, "folder": str(folder), "epochs": epochs[-1][0],
            "first_epoch_aligned": first_epoch_reaching(epochs, threshold),
            "final_alignment_score": last.get("alignment_score"), "final_val_loss": last["val_loss"],
            "alignment_scores": [data.get("alignment_score") for _, data in epochs],
            "train_seconds": int(seconds.read_text()) if seconds.is_file() else None,
            "test_sentences": intelligibility(folder / "intelligibility_test"),
            "phrases": intelligibility(folder / "intelligibility_phrases")}


def _number(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(runs: list[dict], threshold: float) -> str:
    rows = [f"| run | epochs | first epoch with alignment health >= {threshold} | final alignment health | final "
            "validation loss | training s | CER / WER test sentences % | CER / WER phrases % |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        test, phrases = run["test_sentences"] or {}, run["phrases"] or {}
        aligned = run["first_epoch_aligned"] if run["first_epoch_aligned"] is not None else "not reached"
        rows.append(f"| {run['run']} | {run['epochs']} | {aligned} | {_number(run['final_alignment_score'], 3)} | "
                    f"{_number(run['final_val_loss'], 3)} | {_number(run['train_seconds'], 0)} | "
                    f"{_number(test.get('cer'))} / {_number(test.get('wer'))} | "
                    f"{_number(phrases.get('cer'))} / {_number(phrases.get('wer'))} |")
    return "\n".join(rows)


def parse_run(text: str) -> tuple[str, Path]:
    name, separator, folder = text.partition("=")
    if not separator or not name or not folder:
        raise argparse.ArgumentTypeError(f"--run takes NAME=FOLDER, got {text!r}")
    return name, Path(folder)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--run", type=parse_run, action="append", required=True, metavar="NAME=FOLDER",
                        help="a training run's name and output folder (repeat per run)")
    parser.add_argument("--threshold", type=float, default=ALIGNED, help="the alignment health counted as aligned")
    parser.add_argument("-o", "--output", default=None, help="write the report as JSON here")
    parser.add_argument("--voice", default=None, help="the corpus's eSpeak NG voice, recorded in the report")
    parser.add_argument("--num-utterances", type=int, default=None, help="the corpus's size, recorded in the report")
    parser.add_argument("--epochs", type=int, default=None, help="the epochs each run was given, recorded")
    parser.add_argument("--base", default=None, help="the checkpoint the warm start began from, recorded")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    runs = [summarize_run(name, folder, args.threshold) for name, folder in args.run]
    report = {"voice": args.voice, "num_utterances": args.num_utterances, "epochs_budget": args.epochs,
              "base_checkpoint": args.base, "threshold": args.threshold, "runs": runs}
    ceiling = next((run["test_sentences"]["espeak_cer"] for run in runs
                    if run["test_sentences"] and "espeak_cer" in run["test_sentences"]), None)
    report["espeak_ceiling_cer_test_sentences"] = ceiling
    print(f"\n== Warm start against training from scratch ({args.voice or 'new voice'}, "
          f"{args.num_utterances or '?'} utterances, {args.epochs or '?'} epochs each) ==")
    print(table(runs, args.threshold))
    if ceiling is not None:
        print(f"eSpeak NG itself ({args.voice}) on the test sentences: CER {ceiling:.1f} % (the recognizer's ceiling)")
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"written: {args.output}")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
