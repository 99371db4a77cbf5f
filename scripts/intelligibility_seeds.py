"""Intelligibility of text to wav over several synthesis seeds: one seed's CER on a few lines moves by points with the
prenet dropout's draw, so compare models and vocoders by the CER pooled over seeds.

    python -m scripts.intelligibility_seeds --asr output/demo_asr/checkpoint_wav2vec2_last.pt \
        --tacotron2 output/demo/checkpoint_Tacotron2_last.pt \
        --vocoder output/demo/melinverter/checkpoint_MelInverter_last.pt --texts phrases/phrase.txt \
        --seeds 1234 1 2 3 4 5 6 7 -o output/demo/phrases_seeds [--lm ARPA --lm-weight 0.75 ...]
    python -m scripts.intelligibility_seeds --judge moonshine --espeak-ceiling --texts output/demo/everyday_plain.txt \
        --tacotron2 ... --vocoder ... --seeds 1234 1 2 -o output/demo/everyday_plain_seeds

For each seed S the texts are synthesized as `inference.py -i TEXTS --seed S --tacotron2 ... --<vocoder> ...` writes
them (tacotron2/api.py's Synthesizer, batches of 8), into OUT/seed_S/audio_<n>.wav, and heard by the recognizer as
scripts/intelligibility.py hears them (--asr greedily, and with --lm also through the language model; or --judge
moonshine). It prints each seed's rates and the rates over all seeds together (the edits summed, divided by the
letters and words of every seed's references), with --espeak-ceiling also the judge's rates on eSpeak NG saying the
same lines and the pooled CER's ratio to them, and writes them with every transcript to
OUT/intelligibility_seeds.json. --vocoder is a WaveGlow, HiFi-GAN, WaveNet or mel inverter checkpoint, or
griffin-lim (the default).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.arguments import positive_int
from common.audio import PHASE_INITS, save_wav
from common.errors import UserError, exit_on_user_error
from common.inference_args import inference_device
from scripts.intelligibility import (ESPEAK_RATE, ESPEAK_VOICE, add_judge_args, check_judge_args, judge_from_args,
                                     numbered_lines, pair_wavs_with_lines, render_with_espeak)
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
    parser.add_argument("--half-lstm-weights", action=argparse.BooleanOptionalAction, default=None,
                        help="Tacotron 2's 16-bit LSTM weights (inference.py's flag; default: as inference.py)")
    parser.add_argument("--griffin-lim-iters", type=positive_int, default=None, metavar="N",
                        help="Griffin-Lim's phase iterations, of griffin-lim or a mel inverter (inference.py's flag; "
                             "default: as inference.py)")
    parser.add_argument("--griffin-lim-phase-init", choices=PHASE_INITS, default=None,
                        help="where that phase starts (inference.py's flag; default: as inference.py)")
    parser.add_argument("--espeak-ceiling", action="store_true",
                        help=f"also judge eSpeak NG saying the same lines ({ESPEAK_VOICE}, {ESPEAK_RATE} words a "
                             "minute, as scripts/intelligibility.py's default), once")
    add_judge_args(parser)
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
    check_judge_args(args)
    texts = list(numbered_lines(Path(args.texts)).items())
    phase = {name: value for name, value in (("griffin_lim_iters", args.griffin_lim_iters),
                                             ("griffin_lim_phase_init", args.griffin_lim_phase_init))
             if value is not None}
    synthesizer = Synthesizer.from_checkpoints(args.tacotron2, args.vocoder, device=inference_device(args),
                                               half_lstm_weights=args.half_lstm_weights, **phase)
    judged = judge_from_args(args)  # as scripts/intelligibility.py's: they judge alike
    output = Path(args.output)
    result = {"judge": args.judge, "asr": args.asr, "tacotron2": args.tacotron2, "vocoder": args.vocoder,
              "griffin_lim_iters": args.griffin_lim_iters, "griffin_lim_phase_init": args.griffin_lim_phase_init,
              "texts": args.texts, "lm": args.lm, "judge_silence": args.judge_silence, "seeds": {}}
    for seed in args.seeds:
        folder = output / f"seed_{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        for (number, _), audio in zip(texts, synthesizer.synthesize([text for _, text in texts], seed=seed)):
            save_wav(folder / f"audio_{number}.wav", audio, synthesizer.sampling_rate)  # as inference.py
        report = judged(pair_wavs_with_lines(folder, Path(args.texts)))
        result["seeds"][seed] = report
        print(f"seed {seed}: {rates_line(report)}", flush=True)
    reports = list(result["seeds"].values())
    result["all_seeds"] = pooled(reports)
    if "with_lm" in reports[0]:
        result["all_seeds"]["with_lm"] = pooled([report["with_lm"] for report in reports])
    print(f"{len(args.seeds)} seeds, {len(texts)} lines each: {rates_line(result['all_seeds'])}")
    if args.espeak_ceiling:
        pairs = pair_wavs_with_lines(output / f"seed_{args.seeds[0]}", Path(args.texts))
        result["espeak"] = judged(render_with_espeak(pairs, output / "espeak", ESPEAK_VOICE, ESPEAK_RATE))
        result["cer_to_espeak"] = result["all_seeds"]["cer"] / max(result["espeak"]["cer"], 1e-9)
        print(f"eSpeak NG saying them: {rates_line(result['espeak'])}; the seeds' pooled CER is "
              f"{result['cer_to_espeak']:.2f} times eSpeak NG's")
    (output / "intelligibility_seeds.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    exit_on_user_error(main)
