"""Does a Tacotron 2 stop on plain text? Each line of a text file is synthesized without final punctuation and with a
full stop, each under two stop rules, and the utterances that run to --max-decoder-steps (that fail to stop) are
counted, with every utterance's length.

    python -m experiments.tacotron2_stopping.measure_stopping --tacotron2 output/demo/checkpoint_Tacotron2_last.pt \
        [--texts experiments/tacotron2_stopping/plain_sentences.txt] [--max-decoder-steps N] \
        [--max-frames-after-text-end FRAMES] [--seed 1234] [--batch-size 8] [--device cpu] [-o report.json]

The two inputs of a line, as symbol ids of the checkpoint's text front-end:
- "bare": the line with the marks that end it left out, and without the full stop the front-end now ends such a line
  with: what the model read of text typed without one before the front-end added it.
- "full stop": the same ids and a full stop: what the front-end gives a line typed without final punctuation now.
The two stop rules (tacotron2/model.py: Decoder.infer):
- "gate alone": NVIDIA's rule, the stop gate (max_frames_after_text_end=0).
- "text end": the gate, or max_frames_after_text_end frames after the attention first peaked on the text's last
  symbol, whichever comes first (the checkpoint's setting unless --max-frames-after-text-end gives another).

Every condition draws the same prenet dropout masks (batch i: seed + i, as inference.py --seed), so they differ by
their input and stop rule alone. "changed by the text-end rule" counts the utterances that the gate alone stops but
whose length the text-end rule changes: a rule that cuts into speech the gate would have kept shows there. The mel
lengths are reported in seconds of audio (hop length / sampling rate of the checkpoint's audio parameters); no audio is
made. It prints a table per condition and the lines that fail, and -o writes every line's lengths as JSON.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from common.audio import AudioParams
from common.trained_model import load_trained_model
from common.errors import ArgumentParser, UserError, exit_on_user_error
from common.text import FULL_STOP, TextProcessor
from tacotron2.api import pad_token_ids, text_processor_of
from tacotron2.model import max_steps_warnings_silenced
from tacotron2.recipe import RECIPE

HERE = Path(__file__).resolve().parent
DEFAULT_TEXTS = HERE / "plain_sentences.txt"
INPUTS = ("bare", "full stop")
RULES = ("gate alone", "text end")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--tacotron2", required=True, help="the Tacotron 2 checkpoint to measure")
    parser.add_argument("--texts", default=str(DEFAULT_TEXTS), help="one line per utterance (default: this folder's "
                                                                     "plain_sentences.txt)")
    parser.add_argument("--max-decoder-steps", type=int, default=None, help="default: the checkpoint's")
    parser.add_argument("--max-frames-after-text-end", type=int, default=None, metavar="FRAMES",
                        help="the text-end rule's limit (default: the checkpoint's, tacotron2/model.py)")
    parser.add_argument("--seed", type=int, default=1234, help="the prenet dropout's seed (batch i: seed + i)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("-o", "--output", default=None, help="write the report here as JSON")
    return parser


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise UserError(f"--texts {path}: file not found")
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise UserError(f"--texts {path} has no text")
    return lines


def inputs_of(text: TextProcessor, line: str, source: str) -> dict[str, list[int]]:
    """The ids of each input of INPUTS for one line."""
    try:
        bare = text.without_final_mark(text.encode(line, source=source))
    except ValueError as error:
        raise UserError(str(error)) from error
    return {"bare": bare, "full stop": [*bare, text.symbols.index(FULL_STOP)]}


def synthesize_lengths(model, ids: list[list[int]], device: torch.device, batch_size: int, seed: int,
                       max_decoder_steps: int, max_frames_after_text_end: int) -> tuple[list[int], list[bool]]:
    """Each utterance's mel frames and whether it reached max_decoder_steps."""
    frames, hit_max = [], []
    for index, start in enumerate(range(0, len(ids), batch_size)):
        text, lengths = pad_token_ids(ids[start:start + batch_size], device)
        with torch.no_grad(), max_steps_warnings_silenced():  # counted and reported below
            result = model.infer(text, lengths, max_decoder_steps=max_decoder_steps,
                                 generator=torch.Generator(device).manual_seed(seed + index),
                                 max_frames_after_text_end=max_frames_after_text_end)
        frames += result.mel_lengths.tolist()
        hit_max += result.hit_max_decoder_steps.tolist()
    return frames, hit_max


def summary(seconds: list[float], hit_max: list[bool]) -> dict:
    return {"failed_to_stop": sum(hit_max), "utterances": len(hit_max),
            "mean_seconds": round(sum(seconds) / len(seconds), 3), "max_seconds": round(max(seconds), 3),
            "mean_seconds_of_those_that_stopped": round(
                sum(s for s, hit in zip(seconds, hit_max) if not hit) / max(1, len(hit_max) - sum(hit_max)), 3)}


def measure(args) -> dict:
    device = torch.device(args.device)
    model, checkpoint = load_trained_model(RECIPE, args.tacotron2, device, published_config={}, flag="--tacotron2")
    text = text_processor_of(checkpoint)
    if FULL_STOP not in text.symbols:
        raise UserError(f"--tacotron2 {args.tacotron2}: its symbol table has no full stop, so the front-end adds none "
                        "and there is no 'full stop' input to compare")
    audio = AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params") else AudioParams()
    seconds_per_frame = audio.hop_length / audio.sampling_rate
    max_steps = args.max_decoder_steps or model.max_decoder_steps
    text_end_frames = (model.max_frames_after_text_end if args.max_frames_after_text_end is None
                       else args.max_frames_after_text_end)
    if text_end_frames <= 0:
        raise UserError("the text-end rule is off (the checkpoint's max_frames_after_text_end is 0): give "
                        "--max-frames-after-text-end FRAMES to measure it")
    lines = read_lines(Path(args.texts))
    per_line = [inputs_of(text, line, f"{args.texts}:{number}") for number, line in enumerate(lines, 1)]
    rows = [{"line": line, "symbols": len(inputs["bare"])} for line, inputs in zip(lines, per_line)]
    conditions = {}
    for input_name in INPUTS:
        ids = [inputs[input_name] for inputs in per_line]
        for rule, frames_after_end in (("gate alone", 0), ("text end", text_end_frames)):
            frames, hit_max = synthesize_lengths(model, ids, device, args.batch_size, args.seed, max_steps,
                                                 frames_after_end)
            seconds = [n * seconds_per_frame for n in frames]
            name = f"{input_name}, {rule}"
            conditions[name] = summary(seconds, hit_max)
            for row, n, hit in zip(rows, seconds, hit_max):
                row[name] = {"seconds": round(n, 3), "failed_to_stop": hit}
        gate, text_end = f"{input_name}, gate alone", f"{input_name}, text end"
        conditions[text_end]["stopped_by_text_end_rule"] = sum(
            row[gate]["failed_to_stop"] or row[gate]["seconds"] != row[text_end]["seconds"] for row in rows)
        conditions[text_end]["changed_by_text_end_rule_where_the_gate_stopped"] = sum(
            not row[gate]["failed_to_stop"] and row[gate]["seconds"] != row[text_end]["seconds"] for row in rows)
    return {"tacotron2": str(args.tacotron2), "texts": str(args.texts), "max_decoder_steps": max_steps,
            "max_decoder_seconds": round(max_steps * model.n_frames_per_step * seconds_per_frame, 3),
            "max_frames_after_text_end": text_end_frames, "seed": args.seed, "conditions": conditions,
            "lines": rows}


def print_report(report: dict) -> None:
    print(f"{len(report['lines'])} lines of {report['texts']}; --max-decoder-steps {report['max_decoder_steps']} "
          f"({report['max_decoder_seconds']} s); text-end rule: {report['max_frames_after_text_end']} frames")
    print(f"{'input, stop rule':28} {'failed to stop':>15} {'mean s':>8} {'max s':>7} {'mean s (stopped)':>17} "
          f"{'by text end':>12} {'changed':>8}")
    for name, values in report["conditions"].items():
        print(f"{name:28} {values['failed_to_stop']:>8} of {values['utterances']:<4} {values['mean_seconds']:>8.2f} "
              f"{values['max_seconds']:>7.2f} {values['mean_seconds_of_those_that_stopped']:>17.2f} "
              f"{values.get('stopped_by_text_end_rule', ''):>12} "
              f"{values.get('changed_by_text_end_rule_where_the_gate_stopped', ''):>8}")
    for name in report["conditions"]:
        failed = [row["line"] for row in report["lines"] if row[name]["failed_to_stop"]]
        if failed:
            print(f"failed to stop ({name}): " + "; ".join(failed))


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    report = measure(args)
    print_report(report)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.output}")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
