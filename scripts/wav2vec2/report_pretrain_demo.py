"""Summarise a pre-training demo run (scripts/wav2vec2/demo_pretrain.sh): does wav2vec 2.0 pre-training pay?

    python -m scripts.wav2vec2.report_pretrain_demo --output-dir output/demo_pretrain --data data/asr \
        --labelled-split train_10pct [--target-reduction 30] [--seconds 2400]

Reads what the demo's stages wrote into --output-dir: pretrain/nvlog.json (the contrastive pre-training: accuracy,
code and prob perplexity, Gumbel temperature per update and per validation) and pretrain/checkpoint_wav2vec2_last.pt
(the codebook's size), and for each recognizer (finetune_pretrained/, finetune_random/) its training log and one
inference folder per test split (<split>/nvlog.json), and one more where the split was also decoded with the language
model (<split>_lm/nvlog.json). Writes report.json (every figure below) and report.txt (what it prints) into
--output-dir.

The target: the pre-trained start's CER at least --target-reduction % below the random start's on every
test split, judged greedily and, where every split was decoded with it, with the language model. The codebook counts as
collapsed when the last validation's code perplexity (the summed exp(entropy) of each group's code choices over a batch)
is below COLLAPSE_SHARE of its entries.
"""
from __future__ import annotations

from pathlib import Path

import torch

from common.errors import ArgumentParser, UserFileNotFoundError, exit_on_user_error
from common.logger import read_dllogger_file
from scripts.wav2vec2.report_asr_demo import (DESCRIPTIONS, add_language_model_rates, corpus_summary, save_report,
                                             split_summary, training_summary)
from wav2vec2.data_function import read_manifest

RECOGNIZERS = {"pretrained": "finetune_pretrained", "random": "finetune_random"}  # name: its folder in --output-dir
CURVE_POINTS = 10  # windows the per-update pre-training values are averaged over
CURVE_KEYS = ("loss", "accuracy", "code_perplexity", "prob_perplexity", "temperature")
COLLAPSE_SHARE = 0.1
SAMPLING_RATE = 16000  # the ASR corpus's (scripts/data/asr_corpus.py)


def find_test_splits(data: Path) -> list[str]:
    """The corpus's test splits (<data>/test*.tsv with words beside them), as demo_pretrain.sh finds them."""
    return sorted(path.stem for path in data.glob("test*.tsv") if path.with_suffix(".wrd").is_file())


def relative_reduction(baseline: float, other: float) -> float | None:
    """How much lower other is than baseline, in % of baseline (negative: higher); None when baseline is 0."""
    return 100.0 * (baseline - other) / baseline if baseline > 0 else None


def pretraining_records(log: Path) -> tuple[list[dict], list[dict]]:
    """The per-update training values and the validations, each with its update number ("update": updates done,
    counted in log order)."""
    updates, validations = [], []
    for record in read_dllogger_file(log):
        data = record["data"]
        if record["type"] != "LOG" or len(record["step"]) != 2:
            continue  # parameters, epoch summaries, the run's end
        if "train_accuracy" in data:
            updates.append({"update": len(updates) + 1,
                            **{key: data[f"train_{key}"] for key in CURVE_KEYS if f"train_{key}" in data}})
        elif "val_accuracy" in data:
            validations.append({"update": len(updates),
                                **{key: data[f"val_{key}"] for key in CURVE_KEYS if f"val_{key}" in data}})
    return updates, validations


def curve(updates: list[dict], points: int = CURVE_POINTS) -> list[dict]:
    """The per-update values averaged over `points` consecutive windows of (nearly) equal size, each labelled with
    its last update: a readable curve of noisy per-batch values."""
    points = min(points, len(updates))
    windows = [updates[len(updates) * i // points:len(updates) * (i + 1) // points] for i in range(points)]
    return [{"update": window[-1]["update"],
             **{key: sum(record[key] for record in window) / len(window) for key in CURVE_KEYS if key in window[0]}}
            for window in windows]


def codebook_check(code_perplexity: float, entries: int) -> dict:
    """The share of the codebook's entries in use (perplexity / entries) and whether that is a collapse."""
    share = code_perplexity / entries
    return {"code_perplexity": code_perplexity, "entries": entries, "share_used": share,
            "collapsed": share < COLLAPSE_SHARE}


def codebook_entries(checkpoint: Path) -> int:
    if not checkpoint.is_file():
        raise UserFileNotFoundError(f"{checkpoint} does not exist (run the demo's pre-training stage)")
    config = torch.load(checkpoint, map_location="cpu", weights_only=True)["model_config"]
    return config["latent_groups"] * config["latent_vars"]


def pretraining_summary(folder: Path) -> dict:
    updates, validations = pretraining_records(folder / "nvlog.json")
    if not updates:
        raise SystemExit(f"{folder / 'nvlog.json'}: no pre-training updates logged")
    last = validations[-1] if validations else updates[-1]
    return {"updates": len(updates), "curve": curve(updates), "validations": validations,
            "codebook": codebook_check(last["code_perplexity"], codebook_entries(folder / "checkpoint_wav2vec2_last.pt"))}


def recognizer_summary(folder: Path, splits: list[str]) -> dict:
    summary = {**training_summary(folder / "nvlog.json"),
               "splits": {split: split_summary(folder / split / "nvlog.json") for split in splits}}
    for split in splits:
        add_language_model_rates(summary["splits"][split], folder, split)
    return summary


def cer_reductions(recognizers: dict, splits: list[str], decoding=lambda split_result: split_result) -> dict:
    """{split: the pre-trained start's CER reduction on the random start's}, of the CERs `decoding` picks."""
    return {split: relative_reduction(*(decoding(recognizers[name]["splits"][split])["cer"]
                                        for name in ("random", "pretrained"))) for split in splits}


def target_met(reductions: dict, target: float) -> bool:
    return all(reduction is not None and reduction >= target for reduction in reductions.values())


def labelled_summary(data: Path, split: str) -> dict:
    manifest = read_manifest(data / f"{split}.tsv", check_audio=False)
    samples = sum(num_samples for _, num_samples in manifest.entries)
    return {"split": split, "utterances": len(manifest), "minutes": samples / SAMPLING_RATE / 60}


def format_reduction(reduction: float | None) -> str:
    return "n/a (random start's CER is 0)" if reduction is None else f"{reduction:.1f} %"


def format_report(report: dict) -> str:
    lines = ["== wav2vec 2.0 pre-training demo summary =="]
    if report.get("total_seconds") is not None:
        lines.append(f"wall time: {report['total_seconds'] // 60} min {report['total_seconds'] % 60} s")
    train, labelled = report["corpus"].get("train"), report["labelled"]
    if train:
        lines.append(f"pre-training audio: {train['utterances']} utterances ({train['minutes']:.1f} min), no labels")
    lines.append(f"labelled subset {labelled['split']}: {labelled['utterances']} utterances "
                 f"({labelled['minutes']:.1f} min)")
    pretraining = report["pretraining"]
    lines.append(f"pre-training: {pretraining['updates']} updates; training values averaged per window:")
    lines.append("    update   loss  accuracy  code ppl  prob ppl  temperature")
    for point in pretraining["curve"]:
        lines.append(f"    {point['update']:6d} {point['loss']:6.3f}  {point['accuracy']:8.3f}  "
                     f"{point['code_perplexity']:8.1f}  {point['prob_perplexity']:8.1f}  {point['temperature']:11.3f}")
    for validation in pretraining["validations"]:
        lines.append(f"    validation at {validation['update']}: accuracy {validation['accuracy']:.3f}, code perplexity "
                     f"{validation['code_perplexity']:.1f}, prob perplexity {validation['prob_perplexity']:.1f}")
    codebook = pretraining["codebook"]
    lines.append(f"codebook: perplexity {codebook['code_perplexity']:.1f} of {codebook['entries']} entries "
                 f"({100 * codebook['share_used']:.0f} % in use): "
                 + ("COLLAPSED" if codebook["collapsed"] else "not collapsed")
                 + f" (collapse: below {100 * COLLAPSE_SHARE:.0f} %)")
    for name, recognizer in report["recognizers"].items():
        lines.append(f"fine-tuned from the {name} start: {recognizer['updates']} updates")
    for split, reduction in report["cer_reduction"].items():
        pretrained, random = (report["recognizers"][name]["splits"][split] for name in ("pretrained", "random"))
        description = f" ({DESCRIPTIONS[split]})" if split in DESCRIPTIONS else ""
        lines.append(f"{split}{description}:")
        lines.append(f"    pre-trained start: CER {pretrained['cer']:.2f} %, WER {pretrained['wer']:.2f} %")
        lines.append(f"    random start:      CER {random['cer']:.2f} %, WER {random['wer']:.2f} %")
        lines.append("    CER reduction: " + format_reduction(reduction))
        if "cer_reduction_with_lm" in report:
            lines.append(f"    with the language model: pre-trained start CER {pretrained['lm']['cer']:.2f} %, random "
                         f"start {random['lm']['cer']:.2f} %, reduction "
                         + format_reduction(report["cer_reduction_with_lm"][split]))
    verdict = "met" if report["target_met"] else "NOT met"
    lines.append(f"target: CER at least {report['target_reduction']:g} % lower on every test split: {verdict}"
                 + (f" greedy, {'met' if report['target_met_with_lm'] else 'NOT met'} with the language model"
                    if "target_met_with_lm" in report else ""))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", required=True, help="the demo's output folder (pretrain/, finetune_*/)")
    parser.add_argument("--data", required=True, help="the corpus folder (its manifests give the sizes and splits)")
    parser.add_argument("--labelled-split", required=True, help="the labelled subset the recognizers trained on")
    parser.add_argument("--seconds", type=int, default=None, help="wall time of the whole demo")
    parser.add_argument("--target-reduction", type=float, default=30.0,
                        help="the relative CER reduction to reach on every test split, in %%")
    args = parser.parse_args(argv)

    output, data = Path(args.output_dir), Path(args.data)
    splits = find_test_splits(data)
    recognizers = {name: recognizer_summary(output / folder, splits) for name, folder in RECOGNIZERS.items()}
    reductions = cer_reductions(recognizers, splits)
    report = {"total_seconds": args.seconds, "corpus": corpus_summary(data),
              "labelled": labelled_summary(data, args.labelled_split),
              "pretraining": pretraining_summary(output / "pretrain"), "recognizers": recognizers,
              "cer_reduction": reductions, "target_reduction": args.target_reduction,
              "target_met": target_met(reductions, args.target_reduction)}
    if all("lm" in recognizer["splits"][split] for recognizer in recognizers.values() for split in splits):
        report["cer_reduction_with_lm"] = cer_reductions(recognizers, splits, lambda split_result: split_result["lm"])
        report["target_met_with_lm"] = target_met(report["cer_reduction_with_lm"], args.target_reduction)
    save_report(output, report, format_report(report))
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
