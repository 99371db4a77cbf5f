"""Intelligibility of text to wav over several synthesis seeds: one seed's CER on a few lines moves by points with the
prenet dropout's draw, so compare models and vocoders by the CER pooled over seeds.

    python -m scripts.intelligibility_seeds --asr output/demo_asr/checkpoint_wav2vec2_last.pt \
        --tacotron2 output/demo/checkpoint_Tacotron2_last.pt \
        --vocoder output/demo/melinverter/checkpoint_MelInverter_last.pt --texts phrases/phrase.txt \
        --seeds 1234 1 2 3 4 5 6 7 -o output/demo/phrases_seeds [--lm ARPA --lm-weight 0.75 ...]

For each seed S the texts are synthesized as `inference.py -i TEXTS --seed S --tacotron2 ... --<vocoder> ...` writes
them (tacotron2/api.py's Synthesizer, batches of 8), into OUT/seed_S/audio_<n>.wav, and heard by the recognizer as
scripts/intelligibility.py hears them (greedily, and with --lm also through the language model). It prints each
seed's rates and the rates over all seeds together (the edits summed, divided by the letters and words of every
seed's references), and writes them with every transcript to OUT/intelligibility_seeds.json. --vocoder is a
WaveGlow, HiFi-GAN, WaveNet or mel inverter checkpoint, or griffin-lim (the default).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from common.audio import save_wav
from common.errors import UserError, exit_on_user_error
from common.inference_args import inference_device
from scripts.intelligibility import (add_recognizer_args, evaluate, language_model_decoder, load_recognizer,
                                     numbered_lines, pair_wavs_with_lines)
from tacotron2.api import Synthesizer
from wav2vec2.decoding import error_rates


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--tacotron2", required=True, help="the Tacotron 2 checkpoint that speaks the texts")
    parser.add_argument("--vocoder", default="griffin-lim",
                        help="its vocoder: a checkpoint of any vocoder family, or griffin-lim (the default)")
    parser.add_argument("--texts", required=True, help="the text file to synthesize, one line per wav")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="the synthesis seeds (inference.py's)")
    parser.add_argument("-o", "--output", required=True, help="the wavs of each seed and intelligibility_seeds.json")
    add_recognizer_args(parser)
    return parser


def pooled(reports: list[dict]) -> dict:
    """Rates over the files of every report together, from the summed edits."""
    totals = {key: sum(report[key] for report in reports) for key in ("char_errors", "chars", "word_errors", "words")}
    return {**error_rates(totals), **totals}


def rates_line(report: dict) -> str:
    line = f"CER {report['cer']:.2f} %, WER {report['wer']:.2f} %"
    if "with_lm" in report:
        line += f"; with the language model CER {report['with_lm']['cer']:.2f} %, WER {report['with_lm']['wer']:.2f} %"
    return line


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if len(set(args.seeds)) != len(args.seeds):
        raise UserError(f"--seeds {' '.join(map(str, args.seeds))} repeats a seed: give each once")
    texts = list(numbered_lines(Path(args.texts)).items())
    synthesizer = Synthesizer.from_checkpoints(args.tacotron2, args.vocoder, device=inference_device(args))
    torch.manual_seed(1234)  # as scripts/intelligibility.py seeds it before loading the recognizer: they judge alike
    recognizer = load_recognizer(args)
    language_model = language_model_decoder(args, recognizer)
    output = Path(args.output)
    result = {"asr": args.asr, "tacotron2": args.tacotron2, "vocoder": args.vocoder, "texts": args.texts,
              "lm": args.lm, "seeds": {}}
    for seed in args.seeds:
        folder = output / f"seed_{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        for (number, _), audio in zip(texts, synthesizer.synthesize([text for _, text in texts], seed=seed)):
            save_wav(folder / f"audio_{number}.wav", audio, synthesizer.sampling_rate)  # as inference.py
        report = evaluate(recognizer, pair_wavs_with_lines(folder, Path(args.texts)), language_model)
        result["seeds"][seed] = report
        print(f"seed {seed}: {rates_line(report)}", flush=True)
    reports = list(result["seeds"].values())
    result["all_seeds"] = pooled(reports)
    if language_model is not None:
        result["all_seeds"]["with_lm"] = pooled([report["with_lm"] for report in reports])
    print(f"{len(args.seeds)} seeds, {len(texts)} lines each: {rates_line(result['all_seeds'])}")
    (output / "intelligibility_seeds.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    exit_on_user_error(main)
