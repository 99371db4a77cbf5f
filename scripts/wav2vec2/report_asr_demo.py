"""Summarise an ASR demo run (scripts/wav2vec2/demo_asr.sh): CER and WER on each test split, against its target.

    python -m scripts.wav2vec2.report_asr_demo --output-dir output/demo_asr --data data/asr [--seconds 1234]
        [--train-seconds 1100] [--target-cer 15]

Reads what the demo's steps wrote into --output-dir: the training log (nvlog.json: updates, epochs, the last
validation) and one inference folder per test split that was run (<split>/nvlog.json, from `inference.py -m
wav2vec2`: corpus WER and CER, per-utterance predictions). test_sentences and test_voice are the template splits
(every corpus has them); test_everyday and test_everyday_voices the open corpus's (scripts/data/asr_corpus.py --text
open). A split decoded a second time with the language model (<split>_lm/nvlog.json: `--decoder beam --lm`) gets its
CER and WER beside the greedy ones, and the targets are judged on both. Where the corpus's utterances.csv names each
utterance's voice, a split with several voices also gets a CER and WER per voice; where
tts_ceiling/intelligibility.json is there (scripts/wav2vec2/tts_judge_ceiling.py), the CER on eSpeak NG's rendering
of the TTS demo's test sentences (greedy, and with the language model where that was decoded with one too). Writes
report.json (every figure below, a few example transcripts per split) and report.txt (what it prints) into
--output-dir.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from common.logger import read_dllogger_file
from wav2vec2.data_function import read_manifest
from wav2vec2.decoding import error_counts, error_rates

SPLITS = ("test_sentences", "test_voice", "test_everyday", "test_everyday_voices")
DESCRIPTIONS = {"test_sentences": "held-out template sentences, training voices",
                "test_voice": "the held-out template sentences spoken by a voice never heard in training",
                "test_everyday": "hand-written everyday sentences, training accents and variants",
                "test_everyday_voices": "the everyday sentences spoken by accents and variants never heard in training"}
# The highest CER (%) each split may have (the demo's targets); test_sentences' is --target-cer.
TARGET_CERS = {"test_everyday": 10.0, "test_everyday_voices": 15.0}
# ... and on eSpeak NG's rendering of the TTS demo's test sentences (tts_ceiling/:
# scripts/wav2vec2/tts_judge_ceiling.py), the ceiling of the score this recognizer gives `make demo`: 1.72 % with the
# recognizer of the former template corpus.
TTS_CEILING_TARGET_CER = 1.8
EXAMPLES = 3  # transcripts shown per split
SAMPLING_RATE = 16000  # the ASR corpus's (scripts/data/asr_corpus.py)


def log_records(path: Path) -> list[dict]:
    return [record["data"] for record in read_dllogger_file(path) if record["type"] == "LOG"]


def training_summary(log: Path) -> dict:
    """Updates and epochs of the run (the last run_time record: a resumed run logs one per invocation), the last
    validation, and the training wall time summed over invocations."""
    records = log_records(log)
    ends = [record for record in records if "run_time" in record]
    validations = [record for record in records if "val_cer" in record]
    summary = {"updates": ends[-1]["iterations"] if ends else None, "epochs": ends[-1]["epochs"] if ends else None,
               "train_run_seconds": sum(record["run_time"] for record in ends)}
    if validations:
        summary["valid"] = {"wer": validations[-1]["val_wer"], "cer": validations[-1]["val_cer"]}
    return summary


def last_run(log: Path) -> list[dict]:
    """The records of the log's last run (a log is appended to: each run starts with its PARAMETER record)."""
    records = [record for record in read_dllogger_file(log) if record["type"] == "LOG"]
    starts = [index for index, record in enumerate(records) if record["step"] == "PARAMETER"]
    return [record["data"] for record in records[starts[-1] if starts else 0:]]


def utterance_voices(data: Path) -> dict[str, str]:
    """{utterance ID: eSpeak voice} from the corpus's utterances.csv (empty without one)."""
    path = data / "utterances.csv"
    if not path.is_file():
        return {}
    rows = [line.split("|") for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {row[0]: row[2] for row in rows}


def split_summary(inference_log: Path, voices: dict[str, str] | None = None) -> dict:
    """Corpus WER/CER of one test split (its log's last run), with a few transcripts next to their references, and
    WER/CER per voice where `voices` ({utterance ID: voice}) gives the split several."""
    records = last_run(inference_log)
    corpus = [record for record in records if "utterances" in record and "wer" in record and "name" not in record]
    if not corpus:
        raise SystemExit(f"{inference_log}: no corpus WER/CER (was the manifest's .wrd beside it?)")
    utterances = [record for record in records if "prediction" in record]
    summary = {"utterances": corpus[-1]["utterances"], "audio_seconds": corpus[-1]["audio_seconds"],
               "wer": corpus[-1]["wer"], "cer": corpus[-1]["cer"],
               "examples": [{"reference": record["reference"], "prediction": record["prediction"]}
                            for record in utterances[:EXAMPLES]]}
    by_voice: dict[str, list[dict]] = {}
    for record in utterances:
        voice = (voices or {}).get(Path(record["name"]).stem)
        if voice is not None:
            by_voice.setdefault(voice, []).append(record)
    if len(by_voice) > 1:
        summary["voices"] = {
            voice: {"utterances": len(chosen),
                    **error_rates(error_counts([r["reference"] for r in chosen], [r["prediction"] for r in chosen]))}
            for voice, chosen in sorted(by_voice.items())}
    return summary


def add_language_model_rates(split_result: dict, folder: Path, split: str) -> None:
    """Where the split was decoded a second time with the language model (folder/<split>_lm/nvlog.json), its WER and
    CER under split_result["lm"]."""
    log = folder / f"{split}_lm" / "nvlog.json"
    if log.is_file():
        with_lm = split_summary(log)
        split_result["lm"] = {"wer": with_lm["wer"], "cer": with_lm["cer"]}


def corpus_summary(data: Path) -> dict:
    sizes = {}
    for split in ("train", "valid", *SPLITS):
        if (data / f"{split}.tsv").is_file():
            manifest = read_manifest(data / f"{split}.tsv", check_audio=False)
            samples = sum(num_samples for _, num_samples in manifest.entries)
            sizes[split] = {"utterances": len(manifest), "minutes": samples / SAMPLING_RATE / 60}
    return sizes


def format_report(report: dict) -> str:
    lines = ["== ASR demo summary =="]
    if report.get("total_seconds") is not None:
        lines.append(f"wall time: {report['total_seconds'] // 60} min {report['total_seconds'] % 60} s"
                     + (f" (training {report['train_seconds']} s)" if report.get("train_seconds") is not None
                        else ""))
    train = report["corpus"].get("train")
    if train:
        lines.append(f"corpus: {train['utterances']} training utterances ({train['minutes']:.1f} min of audio)")
    lines.append(f"trained {report['updates']} updates ({report['epochs']} epochs)")
    if "valid" in report:
        lines.append(f"last validation: WER {report['valid']['wer']:.2f} %, CER {report['valid']['cer']:.2f} %")
    for split, result in report["splits"].items():
        lines.append(f"{split} ({DESCRIPTIONS[split]}; {result['utterances']} utterances): "
                     f"WER {result['wer']:.2f} %, CER {result['cer']:.2f} %"
                     + (f"; with the language model WER {result['lm']['wer']:.2f} %, CER {result['lm']['cer']:.2f} %"
                        if "lm" in result else ""))
        if len(result.get("voices", {})) <= 8:  # a handful of held-out voices, not the training voices' dozens
            for voice, rates in result.get("voices", {}).items():
                lines.append(f"    {voice} ({rates['utterances']} utterances): WER {rates['wer']:.2f} %, "
                             f"CER {rates['cer']:.2f} %")
        for example in result["examples"]:
            lines.append(f"    ref: {example['reference']}")
            lines.append(f"    hyp: {example['prediction']}")
    verdict = "met" if report["target_met"] else "NOT met"
    lines.append(f"target CER below {report['target_cer']:g} % on test_sentences: {verdict}")
    if "tts_ceiling" in report:
        ceiling = report["tts_ceiling"]
        lines.append(f"eSpeak NG saying the TTS demo's {ceiling['utterances']} test sentences (the ceiling of its "
                     f"intelligibility score): WER {ceiling['wer']:.2f} %, CER {ceiling['cer']:.2f} %"
                     + (f"; with the language model WER {ceiling['lm']['wer']:.2f} %, CER {ceiling['lm']['cer']:.2f} %"
                        if "lm" in ceiling else ""))
    for split, target in report["targets"].items():
        lines.append(f"target CER at most {target['cer']:g} % on {split}: {'met' if target['met'] else 'NOT met'}"
                     + (f" greedy, {'met' if target['met_with_lm'] else 'NOT met'} with the language model"
                        if "met_with_lm" in target else ""))
    return "\n".join(lines) + "\n"


def save_report(output: Path, report: dict, text: str) -> None:
    """Print the report's text, and keep it beside its numbers: report.txt and report.json in `output`."""
    print("\n" + text, end="")
    (output / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (output / "report.txt").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", required=True, help="the demo's output folder (training log, test folders)")
    parser.add_argument("--data", required=True, help="the corpus folder (its manifests give the corpus size)")
    parser.add_argument("--checkpoint", default=None, help="the checkpoint that was tested (recorded only)")
    parser.add_argument("--seconds", type=int, default=None, help="wall time of the whole demo")
    parser.add_argument("--train-seconds", type=int, default=None, help="wall time of the training step")
    parser.add_argument("--target-cer", type=float, default=15.0, help="the CER on test_sentences to beat, in %%")
    args = parser.parse_args(argv)

    output = Path(args.output_dir)
    # The template splits are always there; the open corpus's only where the demo tested them.
    tested = [split for split in SPLITS
              if split in ("test_sentences", "test_voice") or (output / split / "nvlog.json").is_file()]
    voices = utterance_voices(Path(args.data))
    report = {"checkpoint": args.checkpoint, "total_seconds": args.seconds, "train_seconds": args.train_seconds,
              "corpus": corpus_summary(Path(args.data)), **training_summary(output / "nvlog.json"),
              "splits": {split: split_summary(output / split / "nvlog.json", voices) for split in tested},
              "target_cer": args.target_cer}
    report["target_met"] = report["splits"]["test_sentences"]["cer"] < args.target_cer
    for split in tested:
        add_language_model_rates(report["splits"][split], output, split)
    report["targets"] = {}
    for split, cer in TARGET_CERS.items():
        if split in report["splits"]:
            result = report["splits"][split]
            report["targets"][split] = {"cer": cer, "met": result["cer"] <= cer}
            if "lm" in result:
                report["targets"][split]["met_with_lm"] = result["lm"]["cer"] <= cer
    ceiling_file = output / "tts_ceiling" / "intelligibility.json"
    if ceiling_file.is_file():
        espeak = json.loads(ceiling_file.read_text(encoding="utf-8"))["espeak"]
        report["tts_ceiling"] = {"utterances": len(espeak["files"]), "wer": espeak["wer"], "cer": espeak["cer"]}
        if "with_lm" in espeak:
            report["tts_ceiling"]["lm"] = {"wer": espeak["with_lm"]["wer"], "cer": espeak["with_lm"]["cer"]}
        report["targets"]["tts_ceiling"] = {"cer": TTS_CEILING_TARGET_CER,
                                            "met": espeak["cer"] <= TTS_CEILING_TARGET_CER}
    save_report(output, report, format_report(report))
    return report


if __name__ == "__main__":
    main()
