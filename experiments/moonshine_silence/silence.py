"""How much silence Moonshine base should hear around a clip: the same wavs judged with each amount of silence before
and after them (scripts/moonshine_judge.py's silence_seconds), per folder the CER and WER, the seeds' rates pooled
and their ratio to eSpeak NG's, and three failures counted clip by clip:

    python -m scripts.intelligibility_seeds --judge moonshine --espeak-ceiling --tacotron2 T2 --vocoder V \
        --texts FILE --seeds 1234 1 2 -o DIR       # or make demo's output/demo/moonshine_everyday_plain_seeds
    python -m experiments.moonshine_silence.silence --seeds-dir DIR --texts FILE --silence 0 0.25 0.5 0.75 [--json F]

DIR holds espeak/ and seed_<n>/ folders of audio_<line>.wav, as scripts/intelligibility_seeds.py writes them. The
failures: the first word not heard as the reference's first word, the last word not heard as its last, and a repeat
(Moonshine wrote more words than the reference, and its last two words already came earlier in what it wrote).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.arguments import non_negative_float
from common.errors import UserError, exit_on_user_error
from scripts.intelligibility import evaluate_with_moonshine, pair_wavs_with_lines
from scripts.intelligibility_seeds import pooled


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--seeds-dir", required=True, help="scripts/intelligibility_seeds.py's -o folder")
    parser.add_argument("--texts", required=True, help="the text file its wavs were synthesized from")
    parser.add_argument("--silence", type=non_negative_float, nargs="+", default=[0.0, 0.25, 0.5, 0.75],
                        metavar="SECONDS", help="the silences to judge with (default: %(default)s)")
    parser.add_argument("--json", default=None, help="write every row, transcripts included, here")
    return parser


def repeats(reference: str, hypothesis: str) -> bool:
    """Whether Moonshine wrote more words than the reference and ended on two words it had already written."""
    heard = hypothesis.split()
    if len(heard) <= len(reference.split()) or len(heard) < 4:
        return False
    tail = heard[-2:]
    return any(heard[i:i + 2] == tail for i in range(len(heard) - 3))


def failures(files: list[dict]) -> dict:
    """Counts of clips whose first word or last word was misheard, and of repeats."""
    first = last = repeated = 0
    for file in files:
        reference, heard = file["reference"].split(), file["hypothesis"].split()
        first += heard[:1] != reference[:1]
        last += heard[-1:] != reference[-1:]
        repeated += repeats(file["reference"], file["hypothesis"])
    return {"first_word_misheard": first, "last_word_misheard": last, "repeats": repeated}


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from scripts.moonshine_judge import MoonshineJudge  # an optional dependency

    root = Path(args.seeds_dir)
    seeds = sorted(root.glob("seed_*"), key=lambda path: path.name)
    if not (root / "espeak").is_dir() or not seeds:
        raise UserError(f"--seeds-dir {root}: expected espeak/ and seed_<n>/ folders (scripts/intelligibility_seeds.py "
                        "--espeak-ceiling -o)")
    folders = {"espeak": pair_wavs_with_lines(root / "espeak", Path(args.texts))}
    folders.update({seed.name: pair_wavs_with_lines(seed, Path(args.texts)) for seed in seeds})
    report = {"seeds_dir": str(root), "texts": args.texts, "rows": []}
    print(f"{len(folders['espeak'])} lines of {args.texts}, {len(seeds)} seeds of {root}, heard by Moonshine base")
    print("| silence, s | eSpeak NG CER % | seeds' CER % (pooled) | ratio | eSpeak NG first / last word misheard, "
          "repeats | seeds' (all clips) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for silence in args.silence:
        judge = MoonshineJudge(silence_seconds=silence)
        judged = {name: evaluate_with_moonshine(judge, pairs) for name, pairs in folders.items()}
        espeak = judged.pop("espeak")
        seeds_pooled = pooled(list(judged.values()))
        espeak_failures = failures(espeak["files"])
        seed_failures = failures([file for result in judged.values() for file in result["files"]])
        ratio = seeds_pooled["cer"] / max(espeak["cer"], 1e-9)
        report["rows"].append({"silence_seconds": silence, "espeak": espeak, "seeds": judged,
                               "seeds_pooled": seeds_pooled, "cer_to_espeak": ratio,
                               "espeak_failures": espeak_failures, "seed_failures": seed_failures})
        counts = " / ".join(str(count) for count in espeak_failures.values())
        seed_counts = " / ".join(str(count) for count in seed_failures.values())
        print(f"| {silence:g} | {espeak['cer']:.2f} | {seeds_pooled['cer']:.2f} | {ratio:.2f} | {counts} | "
              f"{seed_counts} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
