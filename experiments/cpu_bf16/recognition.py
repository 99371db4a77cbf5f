"""Speech recognition in bf16 autocast (and int8) against fp32 on the CPU, with the same trained weights: how much
faster, how far the log-probabilities move, and whether the transcripts keep their error rates.

    python -m experiments.cpu_bf16.recognition --checkpoint output/demo_asr/checkpoint_wav2vec2_last.pt \
        --manifests data/asr/test_sentences.tsv data/asr/test_voice.tsv data/asr/test_everyday.tsv \
                    data/asr/test_everyday_voices.tsv [--variants bf16 int8]

Each manifest's utterances are read by the same Recognizer in fp32 and in each variant (bf16: autocast; int8:
--quantize int8), in batches of --batch-size by length, the variants taking turns batch by batch, so a change in the
machine's load falls on all of them, decoded greedily, and scored against the manifest's .wrd (or .ltr) references.
Printed (and written with --json): per manifest and variant the model's seconds, CER and WER, and for each variant
but fp32 the share of frames whose most likely label differs from fp32's, the largest difference of a
log-probability and the transcripts that differ.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from common.cpu import cpu_description, native_bf16
from experiments.cpu_bf16 import write_report
from wav2vec2.api import Recognizer
from wav2vec2.decoding import error_counts, error_rates, transcripts
from wav2vec2.inference import read_inputs

VARIANTS = {"fp32": {"precision": "fp32"}, "bf16": {"precision": "bf16"},
            "int8": {"precision": "fp32", "quantize": "int8"}}  # int8: --quantize int8 (its products around fp32)


def read_manifest_in_turn(recognizers: dict[str, Recognizer], manifest: Path) -> dict:
    utterances = read_inputs([str(manifest)], Recognizer.sampling_rate,
                             normalize=recognizers["fp32"].model.config["normalize"])
    references = [utterance.reference for utterance in utterances]
    seconds = {name: 0.0 for name in recognizers}
    hypotheses = {name: {} for name in recognizers}  # {utterance number: words}: batches go by length
    others = [name for name in recognizers if name != "fp32"]
    frames, differing, largest = 0, dict.fromkeys(others, 0), dict.fromkeys(others, 0.0)
    for batch in recognizers["fp32"].window_batches(utterances):
        log_probs = {}
        for name, recognizer in recognizers.items():
            start = time.perf_counter()
            logits, padding_mask = recognizer.logits(batch)
            seconds[name] += time.perf_counter() - start
            log_probs[name] = logits.float().log_softmax(-1)
            words = transcripts(logits.float(), padding_mask, recognizer.dictionary, None)
            hypotheses[name].update({window.utterance.number: text for window, text in zip(batch, words)})
        valid = torch.ones(log_probs["fp32"].shape[:2], dtype=torch.bool) if padding_mask is None else ~padding_mask
        frames += int(valid.sum())
        for name in others:
            differing[name] += int((log_probs[name].argmax(-1) != log_probs["fp32"].argmax(-1))[valid].sum())
            largest[name] = max(largest[name], float((log_probs[name] - log_probs["fp32"]).abs()[valid].max()))
    report = {"manifest": str(manifest), "utterances": len(utterances), "frames": frames}
    in_order = {name: [hypotheses[name][utterance.number] for utterance in utterances]
                for name in recognizers}
    for name in recognizers:
        rates = error_rates(error_counts(references, in_order[name]))
        report[name] = {"seconds": seconds[name], "cer": rates["cer"], "wer": rates["wer"]}
        if name != "fp32":  # against fp32
            report[name].update({"frames_whose_best_label_differs": differing[name] / frames,
                                 "log_prob_max_abs_difference": largest[name],
                                 "transcripts_that_differ": sum(a != b for a, b in zip(in_order["fp32"],
                                                                                      in_order[name]))})
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--manifests", required=True, nargs="+", type=Path)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--variants", nargs="+", default=["fp32", "bf16"], choices=list(VARIANTS),
                        help="besides fp32 (always read): bf16 autocast, int8 (--quantize int8)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    names = ["fp32"] + [name for name in args.variants if name != "fp32"]
    recognizers = {name: Recognizer.from_checkpoint(args.checkpoint, "cpu", batch_size=args.batch_size,
                                                    **VARIANTS[name]) for name in names}
    report = {"cpu": cpu_description(), "native_bf16": native_bf16(), "threads": torch.get_num_threads(),
              "manifests": []}
    for manifest in args.manifests:
        result = read_manifest_in_turn(recognizers, manifest)
        report["manifests"].append(result)
        print(json.dumps(result), flush=True)
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
