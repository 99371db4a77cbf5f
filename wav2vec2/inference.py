"""Speech to text with a fine-tuned wav2vec 2.0: `python inference.py -m wav2vec2 ...`.

    python inference.py -m wav2vec2 --checkpoint CKPT -i data/asr/test.tsv -o out/ [-bs 8] [--save-predictions]
        [--save-logits] [--cpu] [--bf16|--amp] [--benchmark-repeats 20]
        [--decoder beam [--beam-size 100] [--lm LM.arpa [--lm-weight 0.5] [--word-score 1.5]]]
    python inference.py -m wav2vec2 --checkpoint CKPT -i a.wav b.flac -o out/

--checkpoint takes a fine-tuned checkpoint of ours, NVIDIA's or fairseq's (read without unpickling code,
wav2vec2/checkpoints.py). -i takes one fairseq manifest (.tsv) or audio files of any rate (resampled to 16 kHz, the
rate of every published wav2vec 2.0). Utterances are batched by
length (less padding) and the model is padding-aware, so a batch gives each utterance what it gets alone; results
come back in input order. Greedy CTC decoding by default; `--decoder beam` is a CTC beam search (pyctcdecode), with a
word n-gram language model in ARPA format if --lm is given (kenlm reads it; scripts/wav2vec2/build_lm.py builds one
from transcripts), weighted by --lm-weight, with --word-score added per word. With references beside the manifest
(<stem>.wrd, else <stem>.ltr), WER and CER are logged per utterance and for the corpus (DLLogger --log-file).
--save-predictions writes predictions.txt (one line per input), --save-logits logits/<n>.pt per utterance (frames x
labels).
--benchmark-repeats N times N passes over the first batch after warm-up: latency percentiles and real-time factor.
The model, its loading and its batches are wav2vec2/api.py's Recognizer (the Python API); this is its command line.

NVIDIA's scripts/inference.sh command line runs as it is (translate_argv): `--w2v_path` is --checkpoint, `--data DIR
--valid_subset NAME` is -i DIR/NAME.tsv, `--output_dir` is -o, `--fp16` is --amp, `--steps N --warmup_steps W` a
benchmark of N runs after W warm-up ones (NVIDIA's cycles through the batches; the first, longest batch is measured
here, after the full pass that gives the WER), `--log_file` a path from the current folder. Its training-only flags
(masking, dropout, LayerDrop) are accepted for compatibility; `--torchscript`, `--torchscript_export` and
`--max_duration` are refused with why.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from common.arguments import (add_compatibility_flags, add_reference_names, non_negative_float,
                              path_from_current_folder, read_reference_spellings)
from common.audio import load_wav
from common.errors import UserError, UserFileNotFoundError
from common.filelist import read_text_file
from common.inference_args import (RefusedFlag, Stopwatch, benchmark, check_inference_args, inference_device,
                                   inference_dtype, open_run_logger)
from common.inference_part import InferencePart
from common.quantization import add_quantize_arg
from wav2vec2 import export
from wav2vec2.arg_parser import no_ema
from wav2vec2.api import (CHUNK_SECONDS, CONTEXT_SECONDS, SAMPLING_RATE, Recognizer, Utterance, bf16_by_default,
                          default_quantize, samples_for)
from wav2vec2.data_function import read_manifest
from wav2vec2.decoding import (BeamSearchDecoder, add_beam_search_args, beam_search_from_flags, error_counts,
                               error_rates, transcripts)
from wav2vec2.model import parse_conv_feature_layers
from wav2vec2.recipe import RECIPE


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("wav2vec 2.0 (speech to text)")
    group.add_argument("--checkpoint", required=True, help="a fine-tuned wav2vec 2.0 checkpoint (CTC)")
    group.add_argument("-i", "--input", nargs="+", required=True,
                       help="a manifest (.tsv: root line, then path<TAB>samples) or audio files")
    group.add_argument("-bs", "--batch-size", type=int, default=8, help="utterances per forward pass")
    group.add_argument("--chunk-seconds", type=non_negative_float, default=CHUNK_SECONDS,
                       help="read a recording longer than this in chunks of this length, decoded together "
                            "(0: every recording whole; default: %(default)s)")
    group.add_argument("--chunk-context-seconds", type=non_negative_float, default=CONTEXT_SECONDS,
                       help="audio read on either side of a chunk for context, its frames dropped (default: "
                            "%(default)s)")
    add_quantize_arg(group, "the linear layers and the feature extractor's convolutions (all but the first)",
                     auto="int8 on a CPU without native bf16 whose int8 products are vectorized (AVX2, AVX-512), "
                          "unless --fp32, --bf16 or --amp is given; none elsewhere")
    group.add_argument("--labels-path", default=None,
                       help="the dictionary (dict.ltr.txt) if the checkpoint does not carry one")
    group.add_argument("--save-predictions", action="store_true", help="write predictions.txt, one line per input")
    group.add_argument("--save-logits", action="store_true", help="write logits/<n>.pt per utterance")
    group.add_argument("--decoder", choices=("greedy", "beam"), default="greedy",
                       help="greedy: the best letter per frame (default); beam: CTC beam search (pyctcdecode)")
    add_beam_search_args(group, "--decoder beam",
                         "--decoder beam: a word n-gram language model (ARPA; scripts/wav2vec2/build_lm.py)")
    add_reference_args(parser)


def check_decoder_args(args: argparse.Namespace) -> None:
    """The beam search's flags need --decoder beam, and the language model's need --lm: one given without the
    other would silently do nothing."""
    if args.decoder != "beam":
        for flag in ("--beam-size", "--lm", "--lm-weight", "--word-score", "--min-letter-log-prob"):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                raise UserError(f"{flag} is for the beam search decoder: add --decoder beam")
    elif args.lm is None:
        for flag in ("--lm-weight", "--word-score"):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                raise UserError(f"{flag} weighs the language model's scores: give the model with --lm ARPA")
    if args.lm is not None and not Path(args.lm).is_file():
        raise UserFileNotFoundError(f"--lm: language model not found: {args.lm}")


def decoder_from_args(args: argparse.Namespace, recognizer: Recognizer) -> BeamSearchDecoder | None:
    """None for greedy decoding (transcripts' default)."""
    if args.decoder == "greedy":
        return None
    return beam_search_from_flags(recognizer.dictionary, args)


# NVIDIA's inference.py names for this part's flags (each also read in its dashed spelling); --data and
# --valid_subset become -i (manifest_from_data_and_subset).
REFERENCE_FLAG_NAMES = {"--w2v_path": "--checkpoint", "--output_dir": "--output", "--fp16": "--amp",
                        "--steps": "--benchmark-repeats"}
MANIFEST_FLAGS = ("--data", "--valid-subset")
REFERENCE_VALID_SUBSET = "valid"  # NVIDIA's default --valid_subset

TRAINING_ONLY = "inference runs the model in eval mode, as NVIDIA's does, so this changes nothing"
COMPATIBILITY_FLAGS = {
    "--ema": dict(type=no_ema, metavar="DECAY", help="0 only: checkpoints here carry no EMA weights (NVIDIA's "
                                                     "inference.py does not read the flag)"),
    "--skip_invalid_size_inputs_valid_test": dict(help="every utterance is transcribed, whatever its length, as in "
                                                       "NVIDIA's inference (the flag filters max-tokens batches)"),
    "--apply_mask": dict(help=f"fine-tuning's time and channel masking; {TRAINING_ONLY}"),
    "--mask_prob": dict(type=float, metavar="P", help=f"fine-tuning's time masking; {TRAINING_ONLY}"),
    "--mask_channel_prob": dict(type=float, metavar="P", help=f"fine-tuning's channel masking; {TRAINING_ONLY}"),
    "--mask_channel_length": dict(type=int, metavar="N", help=f"fine-tuning's channel masking; {TRAINING_ONLY}"),
    "--encoder_layerdrop": dict(type=float, metavar="P", help=f"LayerDrop; {TRAINING_ONLY}"),
    "--activation_dropout": dict(type=float, metavar="P", help=f"dropout; {TRAINING_ONLY}"),
    "--feature_grad_mult": dict(type=float, metavar="X", help=f"scales the feature extractor's gradient; "
                                                              f"{TRAINING_ONLY}"),
}


def add_reference_args(parser: argparse.ArgumentParser) -> None:
    """The flags of NVIDIA's scripts/inference.sh that are not this part's under another spelling."""
    group = parser.add_argument_group("NVIDIA's wav2vec 2.0 inference command line")
    group.add_argument("--log_file", dest="log_file", type=path_from_current_folder, default=argparse.SUPPRESS,
                       help="NVIDIA's spelling of --log-file, a path from the current folder (--log-file's is "
                            "relative to --output)")
    group.add_argument("--torchscript", action=RefusedFlag,
                       why="the wav2vec 2.0 model here does not compile with TorchScript; drop the flag (the "
                           "transcripts are the same without it)",
                       help="refused: the model here does not compile with TorchScript")
    group.add_argument("--torchscript_export", "--torchscript-export", action=RefusedFlag,
                       why="exporting a TorchScript model is not supported (NVIDIA's inference.py has no such flag "
                           "either); drop the flag",
                       help="refused: no TorchScript export")
    group.add_argument("--max_duration", "--max-duration", action=RefusedFlag, nargs=1, metavar="SECONDS",
                       why="NVIDIA's inference.py has no such flag either (its scripts/inference.sh passes it when "
                           "MAX_DURATION is set, and its parser refuses it); drop the flag: every utterance is "
                           "transcribed whole",
                       help="refused: NVIDIA's parser has no such flag")
    add_compatibility_flags(parser, COMPATIBILITY_FLAGS)
    add_reference_names(parser, {**REFERENCE_FLAG_NAMES, "--data DIR --valid_subset NAME": "-i DIR/NAME.tsv"})


def translate_argv(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """NVIDIA's command line -> this part's: REFERENCE_FLAG_NAMES, `--flag_name` to `--flag-name`, and --data with
    --valid_subset to -i."""
    return manifest_from_data_and_subset(read_reference_spellings(argv, parser, REFERENCE_FLAG_NAMES))


def manifest_from_data_and_subset(argv: list[str]) -> list[str]:
    """NVIDIA's `--data DIR [--valid_subset NAME]` (its default NAME: valid) -> `-i DIR/NAME.tsv`, the manifest its
    inference reads (with the NAME.wrd / NAME.ltr references beside it)."""
    given, rest = {}, []
    tokens = iter(argv)
    for token in tokens:
        name, equals, value = token.partition("=")
        flag = name.replace("_", "-")
        if flag not in MANIFEST_FLAGS:
            rest.append(token)
            continue
        value = value if equals else next(tokens, None)
        if value is None:
            raise UserError(f"{name} needs a value")
        given[flag] = value
    if not given:
        return argv
    if "--data" not in given:
        raise UserError("--valid_subset names a manifest in NVIDIA's --data folder: give --data DIR too (or -i FILE)")
    if any(token in ("-i", "--input") or token.startswith("--input=") for token in rest):
        raise UserError("give -i or NVIDIA's --data (with --valid_subset), not both")
    subset = given.get("--valid-subset", REFERENCE_VALID_SUBSET)
    return rest + ["-i", str(Path(given["--data"]) / f"{subset}.tsv")]


def read_inputs(inputs: list[str], sampling_rate: int, normalize: bool = False,
                min_samples: int = 1) -> list[Utterance]:
    """The utterances of a manifest (with its references, if any) or of audio files, in input order; `normalize`:
    zero mean and unit variance per utterance, for models trained so (Large). An utterance shorter than
    min_samples (the model's receptive field) is a UserError naming it."""
    shortest = dict(min_samples=min_samples, min_samples_reason=(
        f"the model's feature extractor reads {min_samples} samples ({min_samples / sampling_rate * 1000:g} ms) for "
        "one frame" if min_samples > 1 else None))
    if len(inputs) == 1 and inputs[0].endswith(".tsv"):
        manifest = read_manifest(inputs[0], sampling_rate, resample=True)
        references = reference_lines(Path(inputs[0]), len(manifest.entries))
        return [Utterance(number, relative, load_wav(manifest.root / relative, sampling_rate,
                                                     source=manifest.source(number - 1), mix_to_mono=True,
                                                     resample=True, normalize=normalize, **shortest),
                          references[number - 1] if references else None)
                for number, (relative, _) in enumerate(manifest.entries, 1)]
    utterances = []
    for number, name in enumerate(inputs, 1):
        if name.endswith(".tsv"):
            raise UserError(f"-i {name}: give one manifest alone, or audio files")
        utterances.append(Utterance(number, name, load_wav(Path(name), sampling_rate, source="-i",
                                                           mix_to_mono=True, resample=True, normalize=normalize,
                                                           **shortest)))
    return utterances


def reference_lines(manifest: Path, count: int) -> list[str] | None:
    """Word references beside the manifest: <stem>.wrd, else <stem>.ltr turned into words; None if neither."""
    for suffix in (".wrd", ".ltr"):
        path = manifest.with_suffix(suffix)
        if not path.is_file():
            continue
        lines = read_text_file(path).splitlines()
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
    check_decoder_args(args)
    device = inference_device(args)
    quantize = (default_quantize(device, precision_asked=args.amp or args.bf16 or args.fp32)
                if args.quantize == "auto" else args.quantize)
    dtype = inference_dtype(args, bf16_by_default(quantize))
    torch.manual_seed(args.seed)
    recognizer = Recognizer.from_checkpoint(args.checkpoint, device, dtype, args.batch_size, args.labels_path,
                                            flag="--checkpoint", quantize=quantize, compile=args.compile,
                                            chunk_seconds=args.chunk_seconds,
                                            context_seconds=args.chunk_context_seconds)
    decoder = decoder_from_args(args, recognizer)
    sampling_rate = SAMPLING_RATE
    utterances = read_inputs(args.input, sampling_rate, normalize=recognizer.model.config["normalize"],
                             min_samples=samples_for(1, parse_conv_feature_layers(
                                 recognizer.model.config["conv_feature_layers"])))
    logger = open_run_logger(args)
    output = Path(args.output)
    logger.parameters({"model_name": RECIPE.name, "checkpoint": args.checkpoint, "batch_size": args.batch_size,
                       "device": str(device), "precision": str(dtype).replace("torch.", ""),
                       "quantize": quantize, "utterances": len(utterances), "decoder": args.decoder,
                       **({} if decoder is None else {"beam_size": decoder.beam_size,
                                                      "min_letter_log_prob": decoder.min_letter_log_prob}),
                       **({} if args.lm is None else {"lm": args.lm})})

    predictions: dict[int, str] = {}
    audio_seconds = compute_seconds = decode_seconds = 0.0

    def timed_logits(batch):
        nonlocal compute_seconds
        with Stopwatch(device) as stopwatch:
            result = recognizer.logits(batch)
        compute_seconds += stopwatch.seconds
        return result

    for utterance, logits in recognizer.utterance_logits(utterances, on_batch=timed_logits):
        audio_seconds += utterance.audio.numel() / sampling_rate
        decode_start = time.perf_counter()
        predictions[utterance.number] = transcripts(logits.unsqueeze(0), None, recognizer.dictionary, decoder)[0]
        decode_seconds += time.perf_counter() - decode_start
        if args.save_logits:
            (output / "logits").mkdir(parents=True, exist_ok=True)
            torch.save(logits.clone(), output / "logits" / f"{utterance.number}.pt")

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
               "rtf": compute_seconds / max(audio_seconds, 1e-9),
               "decode_seconds": decode_seconds}
    if corpus_sums is not None:
        summary.update(error_rates(corpus_sums))
        print(f"WER {summary['wer']:.2f} %, CER {summary['cer']:.2f} % over {len(utterances)} utterances")
    if args.benchmark_repeats:
        first = recognizer.window_batches(utterances)[0]
        first_seconds = sum(window.audio.numel() for window in first) / sampling_rate

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


INFERENCE = InferencePart(name=RECIPE.name, add_args=add_args, run=run, translate_argv=translate_argv,
                          export_onnx=export.export_checkpoint, add_export_args=export.add_export_args)
