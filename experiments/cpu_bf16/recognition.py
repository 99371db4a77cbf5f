"""Speech recognition in bf16 autocast against fp32 on the CPU, with the same trained weights: how much faster, how
far the log-probabilities move, and whether the transcripts keep their error rates.

    python -m experiments.cpu_bf16.recognition --checkpoint output/demo_asr/checkpoint_wav2vec2_last.pt \
        --manifests data/asr/test_sentences.tsv data/asr/test_voice.tsv data/asr/test_everyday.tsv \
                    data/asr/test_everyday_voices.tsv

Each manifest's utterances are read by the same Recognizer in each precision (batches of --batch-size by length, the
precisions taking turns batch by batch, so a change in the machine's load falls on both), decoded greedily, and
scored against the manifest's .wrd (or .ltr) references. Printed (and written with --json): per manifest and
precision the model's seconds, CER and WER; per manifest the share of frames whose most likely label differs from
fp32's and the largest difference of a log-probability.
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

PRECISIONS = ("fp32", "bf16")


def read_manifest_in_turn(recognizers: dict[str, Recognizer], manifest: Path) -> dict:
    utterances = read_inputs([str(manifest)], Recognizer.sampling_rate,
                             normalize=recognizers["fp32"].model.config["normalize"])
    references = [utterance.reference for utterance in utterances]
    seconds = {precision: 0.0 for precision in recognizers}
    hypotheses = {precision: {} for precision in recognizers}  # {utterance number: words}: batches go by length
    frames = differing = 0
    largest = 0.0
    for batch in recognizers["fp32"].window_batches(utterances):
        log_probs = {}
        for precision, recognizer in recognizers.items():
            start = time.perf_counter()
            logits, padding_mask = recognizer.logits(batch)
            seconds[precision] += time.perf_counter() - start
            log_probs[precision] = logits.float().log_softmax(-1)
            words = transcripts(logits.float(), padding_mask, recognizer.dictionary, None)
            hypotheses[precision].update({window.utterance.number: text for window, text in zip(batch, words)})
        valid = torch.ones(log_probs["fp32"].shape[:2], dtype=torch.bool) if padding_mask is None else ~padding_mask
        frames += int(valid.sum())
        differing += int((log_probs["bf16"].argmax(-1) != log_probs["fp32"].argmax(-1))[valid].sum())
        largest = max(largest, float((log_probs["bf16"] - log_probs["fp32"]).abs()[valid].max()))
    report = {"manifest": str(manifest), "utterances": len(utterances), "frames": frames,
              "frames_whose_best_label_differs": differing / frames, "log_prob_max_abs_difference": largest}
    in_order = {precision: [hypotheses[precision][utterance.number] for utterance in utterances]
                for precision in recognizers}
    for precision in recognizers:
        rates = error_rates(error_counts(references, in_order[precision]))
        report[precision] = {"seconds": seconds[precision], "cer": rates["cer"], "wer": rates["wer"]}
    report["transcripts_that_differ"] = sum(a != b for a, b in zip(in_order["fp32"], in_order["bf16"]))
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--manifests", required=True, nargs="+", type=Path)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    recognizers = {precision: Recognizer.from_checkpoint(args.checkpoint, "cpu", precision, args.batch_size)
                   for precision in PRECISIONS}
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
