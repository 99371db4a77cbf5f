"""Intelligibility of synthesized speech: what a recognizer hears in it, scored against the text the speech was made
from. The judge is a wav2vec 2.0 recognizer (--asr, e.g. make demo-asr's), or Moonshine base (--judge moonshine:
scripts/moonshine_judge.py), which nobody here trained.

    python -m scripts.intelligibility --asr CKPT --wavs DIR --texts FILE [-o DIR] [--suffix S] [-bs 8] [--cpu]
        [--bf16|--amp] [--espeak-ceiling [--voice en-us] [--rate 175]]
        [--lm ARPA [--lm-weight 0.5] [--word-score 1.5] [--beam-size 100]]
    python -m scripts.intelligibility --asr output/asr/checkpoint_wav2vec2_best.pt --wavs output/demo/wavs \
        --texts phrases/phrase.txt --espeak-ceiling -o output/intelligibility      # after make demo
    python -m scripts.intelligibility --judge moonshine --wavs output/demo/wavs --texts phrases/phrase.txt \
        --espeak-ceiling [--judge-silence 0.25]

--asr is a fine-tuned (CTC) wav2vec 2.0 checkpoint. Moonshine writes text as people write it (digits, punctuation):
its words go through the same spoken-word normalisation as the reference, and each file's row shows what it wrote,
so a sentence it repeats (the failure of a sequence-to-sequence recognizer) shows there. --judge-silence SECONDS has
it hear each clip with silence before and after (scripts/moonshine_judge.py says why).

The wavs are text-to-wav's outputs: audio_<n><--suffix>.wav for each non-empty line n of --texts (line numbers from 1,
as `inference.py -m Tacotron2` names them), at any sampling rate (resampled to the recognizer's). The reference of line
n is its text as the ASR corpus writes its .wrd labels: numbers, abbreviations and symbols spelled out by
english_cleaners (the text front-end the TTS models read: "Dr." -> DOCTOR, "10" -> TEN), then upper case letters and
apostrophes only (scripts.data.librispeech.librispeech_words). The recognizer's words are scored against it with jiwer:
CER and WER per file, and over all files together (edits summed over the files, divided by the references' total length:
not a mean of per-file rates).

With --lm, each set of wavs is also transcribed by a CTC beam search over that word n-gram language model (make
demo-asr writes its own beside its checkpoint: lm_2gram.arpa), and both are reported: greedy decoding is what the
acoustic model hears alone; the language model spells what it heard as the words a listener knows ("SPEACH" is
SPEECH), and cannot repair what was not heard.

--espeak-ceiling also has eSpeak NG speak each line (its english_cleaners form, what the TTS model reads) and
scores those renderings the same way: what the recognizer makes of the voice it was trained on is the ceiling a TTS
model trained on that voice can reach. A mistake (a missing folder or file, a wav without its line or a line without
its wav) ends in one `error: ...` line naming it. With -o, intelligibility.json holds every number and transcript.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Callable

import torch

from common.errors import UserError, UserFileNotFoundError, exit_on_user_error
from common.arguments import add_device_args, non_negative_float
from common.inference_args import inference_device, inference_dtype
from common.text.cleaners import english_cleaners
from scripts.data.librispeech import librispeech_words
from wav2vec2.api import Recognizer, bf16_by_default
from wav2vec2.decoding import (BeamSearchDecoder, add_beam_search_args, beam_search_from_flags, error_counts,
                               error_rates)

JUDGES = ("wav2vec2", "moonshine")
ESPEAK_VOICE, ESPEAK_RATE = "en-us", 175  # --espeak-ceiling's voice and words per minute unless --voice/--rate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="CER and WER of synthesized speech, heard by a wav2vec 2.0 "
                                                 "recognizer, against the text it was made from", allow_abbrev=False)
    parser.add_argument("--wavs", required=True, help="folder of audio_<line number><suffix>.wav files")
    parser.add_argument("--texts", required=True, help="the text file the wavs were synthesized from, one per line")
    parser.add_argument("--suffix", default="", help="the --suffix text-to-wav was given (audio_<n><suffix>.wav)")
    parser.add_argument("-o", "--output", default=None, help="write intelligibility.json (and eSpeak's wavs) here")
    parser.add_argument("--espeak-ceiling", action="store_true",
                        help="also score eSpeak NG's renderings of the same lines (the recognizer's ceiling)")
    parser.add_argument("--voice", default=ESPEAK_VOICE, help="eSpeak NG voice of --espeak-ceiling")
    parser.add_argument("--rate", type=int, default=ESPEAK_RATE, help="eSpeak NG words per minute of --espeak-ceiling")
    parser.add_argument("--quiet", action="store_true", help="print only the overall rates")
    add_judge_args(parser)
    return parser


def add_judge_args(parser: argparse.ArgumentParser) -> None:
    """--judge and the recognizer's flags (add_recognizer_args), for judge_from_args."""
    parser.add_argument("--judge", choices=JUDGES, default="wav2vec2",
                        help="wav2vec2: the --asr recognizer (default); moonshine: Moonshine base, English "
                             "(requirements-judge.txt)")
    parser.add_argument("--judge-silence", type=non_negative_float, default=0.0, metavar="SECONDS",
                        help="Moonshine hears each clip with this much silence before and after it (default: "
                             "%(default)s; experiments/moonshine_silence)")
    add_recognizer_args(parser, asr_required=False)


def check_judge_args(args: argparse.Namespace) -> None:
    """add_judge_args' flags: a flag the judge does not take, or a judge without its recognizer, is an error."""
    if args.batch_size < 1:
        raise UserError(f"-bs/--batch-size must be at least 1, got {args.batch_size}")
    if args.judge == "moonshine":
        for flag, given in (("--asr", args.asr), ("--lm", args.lm)):
            if given is not None:
                raise UserError(f"--judge moonshine is its own recognizer: drop {flag}")
    elif args.asr is None:
        raise UserError("--asr CKPT (a fine-tuned wav2vec 2.0) is the judge, or give --judge moonshine")
    elif args.judge_silence:
        raise UserError("--judge-silence is for --judge moonshine: the wav2vec 2.0 judge hears the clips as they are")


def judge_from_args(args: argparse.Namespace) -> Callable[[list[tuple[int, str, Path]]], dict]:
    """The judge add_judge_args' flags name (checked first by check_judge_args), as a function of (line, text, wav)
    triples -> evaluate's report (or evaluate_with_moonshine's)."""
    torch.manual_seed(1234)
    if args.judge == "moonshine":
        from scripts.moonshine_judge import MoonshineJudge  # imported late: an optional dependency

        moonshine = MoonshineJudge(silence_seconds=args.judge_silence)
        return lambda pairs: evaluate_with_moonshine(moonshine, pairs)
    recognizer = load_recognizer(args)
    language_model = language_model_decoder(args, recognizer)
    return lambda pairs: evaluate(recognizer, pairs, language_model)


def add_recognizer_args(parser: argparse.ArgumentParser, asr_required: bool = True) -> None:
    """The judge's flags, which every script that judges speech shares: the recognizer (load_recognizer), its
    decoding with a language model (language_model_decoder), the device and precision."""
    group = parser.add_argument_group("the recognizer")
    group.add_argument("--asr", required=asr_required, help="a fine-tuned (CTC) wav2vec 2.0 checkpoint")
    group.add_argument("-bs", "--batch-size", type=int, default=8, help="utterances per forward pass")
    group.add_argument("--labels-path", default=None,
                       help="the dictionary (dict.ltr.txt) if the checkpoint does not carry one")
    group = parser.add_argument_group("decoding with a language model, beside greedy decoding")
    add_beam_search_args(group, "--lm", "also decode with a CTC beam search over this word n-gram model (ARPA; "
                                        "scripts/wav2vec2/build_lm.py)")
    add_device_args(parser)


def language_model_decoder(args: argparse.Namespace, recognizer: Recognizer) -> BeamSearchDecoder | None:
    """The --lm beam search, or None without --lm (whose weights alone would silently do nothing: an error)."""
    if args.lm is None:
        for flag in ("--lm-weight", "--word-score", "--beam-size", "--min-letter-log-prob"):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                raise UserError(f"{flag} is for decoding with a language model: give the model with --lm ARPA")
        return None
    return beam_search_from_flags(recognizer.dictionary, args)


def reference_words(text: str) -> str:
    """A line of input text as the ASR corpus's .wrd labels write it: english_cleaners' spoken form (numbers and
    abbreviations spelled out), then upper case letters and apostrophes, one space between words."""
    return librispeech_words(english_cleaners(text))


def numbered_lines(texts: Path) -> dict[int, str]:
    """{line number (from 1): text} of the non-empty lines, as text-to-wav numbers its outputs."""
    if not texts.is_file():
        raise UserFileNotFoundError(f"--texts {texts}: file not found")
    try:
        lines = texts.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise UserError(f"--texts {texts} is not UTF-8 text: {error}") from error
    numbered = {number: line.strip() for number, line in enumerate(lines, 1) if line.strip()}
    if not numbered:
        raise UserError(f"--texts {texts} has no text (every line is empty)")
    return numbered


def pair_wavs_with_lines(wavs: Path, texts: Path, suffix: str = "") -> list[tuple[int, str, Path]]:
    """(line number, text, wav) for every non-empty line of `texts`, its wav audio_<n><suffix>.wav in `wavs`. Every
    line needs its wav and every such wav its line; what is missing on either side is named."""
    if not wavs.is_dir():
        raise UserFileNotFoundError(f"--wavs {wavs}: folder not found")
    lines = numbered_lines(texts)
    pattern = re.compile(r"audio_(\d+)" + re.escape(suffix) + r"\.wav")
    found = {int(match.group(1)): path for path in wavs.iterdir()
             if (match := pattern.fullmatch(path.name)) is not None}
    if not found:
        raise UserError(f"--wavs {wavs} holds no audio_<n>{suffix}.wav files (text-to-wav's outputs; set --suffix "
                        "if they were written with one)")
    missing = [f"audio_{number}{suffix}.wav for line {number}" for number in sorted(lines) if number not in found]
    unmatched = [f"{found[number].name} (no text on line {number})" for number in sorted(found) if number not in lines]
    if missing or unmatched:
        problems = (["missing " + ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")] if missing else []) + (
            ["without a line " + ", ".join(unmatched[:5]) + (" ..." if len(unmatched) > 5 else "")] if unmatched
            else [])
        raise UserError(f"--wavs {wavs} has {len(found)} audio_<n>{suffix}.wav files but --texts {texts} has "
                        f"{len(lines)} non-empty lines: {'; '.join(problems)}")
    return [(number, lines[number], found[number]) for number in sorted(lines)]


def score(references: list[str], hypotheses: list[str]) -> tuple[list[dict], dict]:
    """Per-file CER and WER (percent) and the overall rates from the summed edits."""
    per_file, totals = [], None
    for reference, hypothesis in zip(references, hypotheses):
        sums = error_counts([reference], [hypothesis])
        totals = {key: (totals or {}).get(key, 0.0) + value for key, value in sums.items()}
        per_file.append({**error_rates(sums), **sums})
    return per_file, {**error_rates(totals), **totals}


def load_recognizer(args: argparse.Namespace) -> Recognizer:
    """The --asr checkpoint's model and letters (wav2vec2/api.py), on the device and in the precision of the flags."""
    return Recognizer.from_checkpoint(args.asr, inference_device(args), inference_dtype(args, bf16_by_default()),
                                      args.batch_size, args.labels_path, flag="--asr")


def evaluate(recognizer: Recognizer, pairs: list[tuple[int, str, Path]],
             language_model: BeamSearchDecoder | None = None) -> dict:
    """Greedy decoding's per-file and overall rates; with a language model's decoder, its own under "with_lm"."""
    references = [reference_words(text) for _, text, _ in pairs]
    greedy, log_probs = recognizer.transcribe([wav for _, _, wav in pairs], return_log_probs=True)
    report = scored_transcripts(pairs, references, greedy)
    if language_model is not None:
        report["with_lm"] = scored_transcripts(pairs, references, [language_model(torch.from_numpy(frames))
                                                                   for frames in log_probs])
    return report


def evaluate_with_moonshine(judge, pairs: list[tuple[int, str, Path]]) -> dict:
    """Moonshine's per-file and overall rates; each file also keeps what it wrote ("written")."""
    written = judge.transcribe([wav for _, _, wav in pairs])
    report = scored_transcripts(pairs, [reference_words(text) for _, text, _ in pairs],
                                [reference_words(text) for text in written])
    for file, text in zip(report["files"], written):
        file["written"] = text
    return report


def scored_transcripts(pairs: list[tuple[int, str, Path]], references: list[str], hypotheses: list[str]) -> dict:
    per_file, overall = score(references, hypotheses)
    files = [{"line": number, "wav": str(wav), "text": text, "reference": reference, "hypothesis": hypothesis, **rates}
             for (number, text, wav), reference, hypothesis, rates in zip(pairs, references, hypotheses, per_file)]
    return {"files": files, **overall}


def render_with_espeak(pairs: list[tuple[int, str, Path]], folder: Path, voice: str,
                       rate: int) -> list[tuple[int, str, Path]]:
    """eSpeak NG's audio_<n>.wav of each line's english_cleaners form, at its own sampling rate."""
    import soundfile

    from scripts.data.espeak import synthesize

    folder.mkdir(parents=True, exist_ok=True)
    rendered = []
    for number, text, _ in pairs:
        samples, sampling_rate = synthesize(english_cleaners(text), voice=voice, words_per_minute=rate)
        path = folder / f"audio_{number}.wav"
        soundfile.write(path, samples, sampling_rate, subtype="PCM_16")
        rendered.append((number, text, path))
    return rendered


def print_report(name: str, report: dict, quiet: bool) -> None:
    decodings = [("", report)] + ([(" with the language model", report["with_lm"])] if "with_lm" in report else [])
    if not quiet:
        for decoding, rates in decodings:
            print(f"{name}{decoding}:")
            print("| line | CER % | WER % | reference | heard |")
            print("| --- | --- | --- | --- | --- |")
            for file in rates["files"]:
                heard = file.get("written", file["hypothesis"])  # Moonshine's own writing, repeats and all
                print(f"| {file['line']} | {file['cer']:.1f} | {file['wer']:.1f} | {file['reference']} | {heard} |")
    print(f"{name}: CER {report['cer']:.2f} %, WER {report['wer']:.2f} % over {len(report['files'])} files "
          f"({report['chars']:.0f} characters, {report['words']:.0f} words)"
          + "".join(f";{decoding} CER {rates['cer']:.2f} %, WER {rates['wer']:.2f} %"
                    for decoding, rates in decodings[1:]))


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    check_judge_args(args)
    pairs = pair_wavs_with_lines(Path(args.wavs), Path(args.texts), args.suffix)
    judged = judge_from_args(args)
    result = {"judge": args.judge, "judge_silence": args.judge_silence, "asr": args.asr, "wavs": args.wavs,
              "texts": args.texts, "lm": args.lm, "synthesized": judged(pairs)}
    print_report(f"synthesized ({args.wavs})", result["synthesized"], args.quiet)
    if args.espeak_ceiling:
        folder = Path(args.output) / "espeak" if args.output else Path(args.wavs).parent / "espeak_ceiling"
        result["espeak"] = judged(render_with_espeak(pairs, folder, args.voice, args.rate))
        result["espeak"].update(voice=args.voice, rate=args.rate, wavs=str(folder))
        print_report(f"eSpeak NG ceiling ({args.voice}, {args.rate} wpm)", result["espeak"], args.quiet)
    if args.output:
        Path(args.output).mkdir(parents=True, exist_ok=True)
        (Path(args.output) / "intelligibility.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    exit_on_user_error(main)
