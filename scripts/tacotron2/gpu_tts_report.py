"""The report of scripts/tacotron2/gpu_tts_run.sh's stage 4: each training's curves and the text-to-wav CER and WER
of every vocoder, beside the eSpeak NG ceiling.

    python -m scripts.tacotron2.gpu_tts_report OUTPUT_DIR "tacotron2 hifigan hifigan_ft" griffin_lim hifigan ...

The second argument names the trainings that ran (their DLLogger files are OUTPUT_DIR/<name>_nvlog.json; empty for
none); then the vocoders, whose scores are OUTPUT_DIR/intelligibility_<texts>_<vocoder>/intelligibility.json for the
test sentences and the phrases (griffin_lim's also holds the eSpeak NG ceiling). Writes OUTPUT_DIR/report.json and
prints a summary.
"""
from __future__ import annotations

import json
from pathlib import Path

from common.errors import ArgumentParser, UserFileNotFoundError, exit_on_user_error
from common.logger import is_update_record, read_dllogger_file

TEXTS = ("test_sentences", "phrases")


def existing(path: Path, what: str) -> Path:
    if not path.is_file():
        raise UserFileNotFoundError(f"{path} not found: {what} (did its stage of gpu_tts_run.sh run?)")
    return path


def curve(nvlog: Path, points: int = 12) -> dict:
    """About `points` of the training loss curve, [update, loss], and every validation: the update it followed, its
    loss, and for Tacotron 2 whether attention reads the text (alignment_score) and the gate stops."""
    records = read_dllogger_file(existing(nvlog, "the training's DLLogger file"))
    losses = [record["data"]["train_loss"] for record in records if is_update_record(record)]
    every = max(1, len(losses) // points)
    result = {"updates": len(losses), "train_loss": [[i + 1, round(loss, 4)] for i, loss in enumerate(losses)
                                                     if i % every == 0 or i == len(losses) - 1]}
    result["validation"], updates = [], 0
    for record in records:
        updates += is_update_record(record)
        if "val_loss" in record["data"]:
            result["validation"].append({"update": updates, **{
                key: round(record["data"][key], 3) for key in ("val_loss", "alignment_score", "val_stopped_by_gate")
                if key in record["data"]}})
    return result


def build_report(output: Path, trainings: list[str], vocoders: list[str]) -> dict:
    report = {name: curve(output / f"{name}_nvlog.json") for name in trainings}
    for texts in TEXTS:
        scores = {vocoder: json.loads(existing(output / f"intelligibility_{texts}_{vocoder}" / "intelligibility.json",
                                               f"the {vocoder} scores of the {texts}").read_text())
                  for vocoder in vocoders}
        report[texts] = {measure: {vocoder: round(result["synthesized"][measure], 2)
                                   for vocoder, result in scores.items()} for measure in ("cer", "wer")}
        for measure in ("cer", "wer"):
            report[texts][measure]["espeak_ceiling"] = round(scores["griffin_lim"]["espeak"][measure], 2)
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("output", type=Path, help="gpu_tts_run.sh's OUTPUT_DIR")
    parser.add_argument("trainings", help="the trainings that ran, space-separated (empty for none)")
    parser.add_argument("vocoders", nargs="+", help="the vocoders scored (griffin_lim among them)")
    args = parser.parse_args(argv)
    trainings = args.trainings.split()
    report = build_report(args.output, trainings, args.vocoders)
    (args.output / "report.json").write_text(json.dumps(report, indent=1))
    for name in trainings:
        validations = report[name]["validation"]
        print(f"{name}: {report[name]['updates']} updates, loss {report[name]['train_loss'][0][1]} -> "
              f"{report[name]['train_loss'][-1][1]}" + (f"; last validation {validations[-1]}" if validations else ""))
    for texts in TEXTS:
        print(f"{texts}: CER % {report[texts]['cer']}; WER % {report[texts]['wer']}")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
