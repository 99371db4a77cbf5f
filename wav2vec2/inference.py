"""Speech to text with a fine-tuned wav2vec 2.0: `python inference.py -m wav2vec2 ...`.

    python inference.py -m wav2vec2 --checkpoint CKPT -i data/asr/test.tsv -o out/ [-bs 8] [--save-predictions]
        [--save-logits] [--cpu] [--bf16|--amp] [--benchmark-repeats 20]
    python inference.py -m wav2vec2 --checkpoint CKPT -i a.wav b.flac -o out/

--checkpoint takes a fine-tuned checkpoint of ours, NVIDIA's or fairseq's (read without unpickling code,
wav2vec2/checkpoints.py). -i takes one fairseq manifest (.tsv) or audio files of any rate (resampled to 16 kHz, the
rate of every published wav2vec 2.0). Utterances are batched by
length (less padding) and the model is padding-aware, so a batch gives each utterance what it gets alone; results
come back in input order. Greedy CTC decoding. With references beside the manifest (<stem>.wrd, else <stem>.ltr),
WER and CER are logged per utterance and for the corpus (DLLogger --log-file). --save-predictions writes
predictions.txt (one line per input), --save-logits logits/<n>.pt per utterance (frames x labels).
--benchmark-repeats N times N passes over the first batch after warm-up: latency percentiles and real-time factor.
The model, its loading and its batches are wav2vec2/api.py's Recognizer (the Python API); this is its command line.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from common.audio import load_wav
from common.errors import UserError
from common.inference_args import (Stopwatch, benchmark, check_inference_args, inference_device, inference_dtype,
                                   open_run_logger)
from common.inference_part import InferencePart
from wav2vec2.api import SAMPLING_RATE, Recognizer, Utterance, batches_by_length, valid_frames
from wav2vec2.data_function import read_manifest
from wav2vec2.decoding import error_counts, error_rates, transcripts
from wav2vec2.recipe import RECIPE


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("wav2vec 2.0 (speech to text)")
    group.add_argument("--checkpoint", required=True, help="a fine-tuned wav2vec 2.0 checkpoint (CTC)")
    group.add_argument("-i", "--input", nargs="+", required=True,
                       help="a manifest (.tsv: root line, then path<TAB>samples) or audio files")
    group.add_argument("-bs", "--batch-size", type=int, default=8, help="utterances per forward pass")
    group.add_argument("--labels-path", default=None,
                       help="the dictionary (dict.ltr.txt) if the checkpoint does not carry one")
    group.add_argument("--save-predictions", action="store_true", help="write predictions.txt, one line per input")
    group.add_argument("--save-logits", action="store_true", help="write logits/<n>.pt per utterance")


def read_inputs(inputs: list[str], sampling_rate: int, normalize: bool = False) -> list[Utterance]:
    """The utterances of a manifest (with its references, if any) or of audio files, in input order; `normalize`:
    zero mean and unit variance per utterance, for models trained so (Large)."""
    if len(inputs) == 1 and inputs[0].endswith(".tsv"):
        manifest = read_manifest(inputs[0], sampling_rate, resample=True)
        references = reference_lines(Path(inputs[0]), len(manifest.entries))
        return [Utterance(number, relative, load_wav(manifest.root / relative, sampling_rate,
                                                     source=manifest.source(number - 1), mix_to_mono=True,
                                                     resample=True, normalize=normalize),
                          references[number - 1] if references else None)
                for number, (relative, _) in enumerate(manifest.entries, 1)]
    utterances = []
    for number, name in enumerate(inputs, 1):
        if name.endswith(".tsv"):
            raise UserError(f"-i {name}: give one manifest alone, or audio files")
        utterances.append(Utterance(number, name, load_wav(Path(name), sampling_rate, source="-i",
                                                           mix_to_mono=True, resample=True, normalize=normalize)))
    return utterances


def reference_lines(manifest: Path, count: int) -> list[str] | None:
    """Word references beside the manifest: <stem>.wrd, else <stem>.ltr turned into words; None if neither."""
    for suffix in (".wrd", ".ltr"):
        path = manifest.with_suffix(suffix)
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) != count:
            raise UserError(f"{path} has {len(lines)} lines but {manifest} has {count} utterances")
        if suffix == ".ltr":
            lines = [" ".join(line.replace(" ", "").replace("|", " ").split()) for line in lines]
        return lines
    return None


def run(args: argparse.Namespace) -> None:
    check_inference_args(args)
    if args.batch_size < 1:
        raise UserError(f"-bs/--batch-size must be at least 1, got {args.batch_size}")
    device, dtype = inference_device(args), inference_dtype(args)
    torch.manual_seed(args.seed)
    recognizer = Recognizer.from_checkpoint(args.checkpoint, device, dtype, args.batch_size, args.labels_path,
                                            flag="--checkpoint")
    sampling_rate = SAMPLING_RATE
    utterances = read_inputs(args.input, sampling_rate, normalize=recognizer.model.config["normalize"])
    logger = open_run_logger(args)
    output = Path(args.output)
    logger.parameters({"model_name": RECIPE.name, "checkpoint": args.checkpoint, "batch_size": args.batch_size,
                       "device": str(device), "precision": str(dtype).replace("torch.", ""),
                       "utterances": len(utterances)})

    predictions: dict[int, str] = {}
    audio_seconds = compute_seconds = 0.0
    for batch in batches_by_length(utterances, args.batch_size):
        with Stopwatch(device) as stopwatch:
            logits, frame_padding_mask = recognizer.logits(batch)
        compute_seconds += stopwatch.seconds
        audio_seconds += sum(utterance.audio.numel() for utterance in batch) / sampling_rate
        for row, (utterance, text) in enumerate(zip(batch, transcripts(logits, frame_padding_mask,
                                                                        recognizer.dictionary))):
            predictions[utterance.number] = text
            if args.save_logits:
                frames = valid_frames(logits, frame_padding_mask, row)
                (output / "logits").mkdir(parents=True, exist_ok=True)
                torch.save(logits[row, :frames].cpu().clone(), output / "logits" / f"{utterance.number}.pt")

    corpus_sums = None
    for utterance in utterances:
        record = {"name": utterance.name, "prediction": predictions[utterance.number]}
        if utterance.reference is not None:
            sums = error_counts([utterance.reference], [predictions[utterance.number]])
            corpus_sums = {key: (corpus_sums or {}).get(key, 0.0) + value for key, value in sums.items()}
            record.update(reference=utterance.reference, **error_rates(sums))
        logger.log([utterance.number], record, echo=False)
        if not args.quiet:
            print(f"{utterance.number}\t{predictions[utterance.number]}")
    if args.save_predictions:
        output.mkdir(parents=True, exist_ok=True)
        (output / "predictions.txt").write_text(
            "".join(predictions[utterance.number] + "\n" for utterance in utterances), encoding="utf-8")

    summary = {"utterances": len(utterances), "audio_seconds": audio_seconds, "compute_seconds": compute_seconds,
               "rtf": compute_seconds / max(audio_seconds, 1e-9)}
    if corpus_sums is not None:
        summary.update(error_rates(corpus_sums))
        print(f"WER {summary['wer']:.2f} %, CER {summary['cer']:.2f} % over {len(utterances)} utterances")
    if args.benchmark_repeats:
        first = batches_by_length(utterances, args.batch_size)[0]
        first_seconds = sum(utterance.audio.numel() for utterance in first) / sampling_rate

        def measure(seed: int) -> dict:
            with Stopwatch(device) as stopwatch:
                recognizer.logits(first)
            return {"latency": stopwatch.seconds, "rtf": stopwatch.seconds / first_seconds}

        stats = benchmark(measure, args, averaged=("rtf",))
        summary.update({f"benchmark_{key}": value for key, value in stats.items()})
        print(f"batch of {len(first)} ({first_seconds:.2f} s of audio): latency p50 "
              f"{stats['latency_p50'] * 1000:.1f} ms, p90 {stats['latency_p90'] * 1000:.1f} ms, "
              f"p99 {stats['latency_p99'] * 1000:.1f} ms, RTF {stats['rtf']:.4f}")
    logger.log([], summary)
    logger.close()


INFERENCE = InferencePart(name=RECIPE.name, add_args=add_args, run=run)
