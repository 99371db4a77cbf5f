"""Where a text-to-speech model loses its words: in the vocoder or in the acoustic model. Each row is the same held-out
sentences, heard by the same judge (scripts/intelligibility.py: a wav2vec 2.0 recognizer, or Moonshine base), through
one more stage:

    python -m experiments.tts_intelligibility_breakdown.intelligibility_breakdown \
        --asr output/demo_asr/checkpoint_wav2vec2_last.pt \
        --tacotron2 output/demo/checkpoint_Tacotron2_last.pt [--hifigan CKPT] [--melinverter CKPT] \
        [-d data/synthetic] \
        [--filelist filelists/synthetic_audio_text_test.txt] [--limit 25] [-o output/demo/breakdown]
    # open text, heard by Moonshine: eSpeak NG's rendering of each line stands for its recording
    python -m experiments.tts_intelligibility_breakdown.intelligibility_breakdown --judge moonshine \
        --tacotron2 output/demo/checkpoint_Tacotron2_last.pt --melinverter CKPT --texts output/demo/everyday_plain.txt \
        --limit 50 --phase-iterations 32 100 300

rows (CER and WER, eSpeak's ceiling among them):
    the recordings                              the corpus's own wavs (with --texts: eSpeak NG's, the ceiling)
    eSpeak NG speaking the same text            the recognizer's ceiling (scripts/intelligibility.py)
    recordings' magnitudes -> Griffin-Lim      the phase retrieval's loss alone: the recordings' own STFT
                                                magnitudes (no mel), fast Griffin-Lim's phase at each
                                                --phase-iterations
    recordings' mels -> <vocoder>               the vocoder's loss alone, for each Griffin-Lim setting below and
                                                --hifigan's and --melinverter's vocoders (the latter's phase at
                                                each --phase-iterations)
    Tacotron 2 teacher-forced mels -> <vocoder> the acoustic model fed the true previous frames
    Tacotron 2 mels -> <vocoder>                free-running synthesis, as inference.py makes it
The table is printed as Markdown; with -o, breakdown.json holds every number and transcript, and each row's wavs
are kept in a folder of their own.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from common.arguments import positive_int
from common.audio import (GRIFFIN_LIM_ITERS, GRIFFIN_LIM_MOMENTUM, GRIFFIN_LIM_POWER, AudioParams, MelSpectrogram,
                          griffin_lim, griffin_lim_phase, load_wav, save_wav)
from common.errors import exit_on_user_error
from common.filelist import FilelistEntry, read_filelist
from scripts.extract_gta_mels import teacher_forced_mels
from scripts.intelligibility import (ESPEAK_RATE, ESPEAK_VOICE, add_judge_args, check_judge_args, judge_from_args,
                                     numbered_lines, render_with_espeak)


@dataclass(frozen=True)
class GriffinLimSetting:
    name: str
    power: float
    n_iters: int
    momentum: float

    def __call__(self, mel: torch.Tensor, params: AudioParams) -> torch.Tensor:
        return griffin_lim(mel, params, n_iters=self.n_iters, power=self.power, momentum=self.momentum)


# The setting the demo shipped with before, the same without sharpening, and today's default.
GRIFFIN_LIM_SETTINGS = (
    GriffinLimSetting("Griffin-Lim, power 1.5, 60 iterations (before)", 1.5, 60, 0.0),
    GriffinLimSetting("Griffin-Lim, power 1.0, 60 iterations", 1.0, 60, 0.0),
    GriffinLimSetting(f"fast Griffin-Lim, power {GRIFFIN_LIM_POWER:g}, {GRIFFIN_LIM_ITERS} iterations, momentum "
                      f"{GRIFFIN_LIM_MOMENTUM:g} (default)", GRIFFIN_LIM_POWER, GRIFFIN_LIM_ITERS,
                      GRIFFIN_LIM_MOMENTUM),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--tacotron2", required=True, help="the Tacotron 2 checkpoint to judge")
    parser.add_argument("--hifigan", default=None, help="also vocode with this HiFi-GAN checkpoint")
    parser.add_argument("--melinverter", default=None,
                        help="also vocode with this mel inverter checkpoint (and Griffin-Lim's phase: a row for each "
                             "--phase-iterations)")
    parser.add_argument("-d", "--dataset-path", default="data/synthetic", help="the corpus the filelist is in")
    sentences = parser.add_mutually_exclusive_group()
    sentences.add_argument("--filelist", default="filelists/synthetic_audio_text_test.txt",
                           help="held-out wavs and their text (wavs/<ID>.wav|text)")
    sentences.add_argument("--texts", default=None,
                           help="open text instead, one sentence a line: eSpeak NG's rendering of each (the "
                                "ceiling's voice and rate) stands for its recording")
    parser.add_argument("--limit", type=positive_int, default=25, help="the first N sentences")
    parser.add_argument("--phase-iterations", type=positive_int, nargs="+", default=[GRIFFIN_LIM_ITERS],
                        metavar="N", help="fast Griffin-Lim's iterations in the phase-only and mel inverter rows, a "
                                          "row for each (default: %(default)s, inference's)")
    parser.add_argument("-o", "--output", default=None, help="keep each row's wavs here, and breakdown.json")
    parser.add_argument("--seed", type=int, default=1234, help="prenet dropout of synthesis")
    parser.add_argument("--quiet", action="store_true", help="print the table only")
    add_judge_args(parser)
    return parser


def write_wavs(folder: Path, audios: list[torch.Tensor], sampling_rate: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"audio_{number}.wav" for number in range(1, len(audios) + 1)]
    for path, audio in zip(paths, audios):
        save_wav(path, audio, sampling_rate)
    return paths


def load_synthesizer(tacotron2: str, hifigan: str | None):
    """Tacotron 2 and its vocoder as `inference.py --tacotron2 T.pt [--hifigan H.pt] --cpu` loads them."""
    import inference
    from tacotron2.inference import Synthesizer

    flags = ["-i", "-", "-o", "-", "--tacotron2", tacotron2, "--cpu"] + (["--hifigan", hifigan] if hifigan else [])
    return Synthesizer.from_args(inference.build_parser().parse_args(flags))


def load_melinverters(path: str, phase_iterations: list[int]) -> list:
    """The mel inverter of `path` (read once) as a vocoder for each count of Griffin-Lim's phase iterations."""
    from common.vocoder import VocoderSettings
    from melinverter.vocoder import MelInverterVocoder, load_vocoder

    inverter = load_vocoder(VocoderSettings(name="MelInverter", checkpoint=path, checkpoint_flag="--melinverter"),
                            torch.device("cpu"), torch.float32)
    return [MelInverterVocoder(inverter.model, inverter.audio_params, iterations, inverter.momentum)
            for iterations in phase_iterations]


def espeak_entries(texts: str, limit: int, folder: Path) -> list[FilelistEntry]:
    """The first `limit` lines of an open text file as filelist entries whose recordings are eSpeak NG's."""
    lines = list(numbered_lines(Path(texts)).items())[:limit]
    rendered = render_with_espeak([(number, text, None) for number, text in lines], folder, ESPEAK_VOICE, ESPEAK_RATE)
    return [FilelistEntry(path=path, text=text, source=f"{texts}:{number}") for number, text, path in rendered]


def free_running_mels(synthesizer, entries, seed: int) -> list[torch.Tensor]:
    """Synthesis from text alone, as inference.py makes it (one batch, prenet dropout seeded)."""
    result = synthesizer.synthesize_batch([entry.text for entry in entries], [entry.source for entry in entries], seed)
    return [result["mel"][row, :, :length] for row, length in enumerate(result["mel_lengths"].tolist())]


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    check_judge_args(args)
    output = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="intelligibility_breakdown_"))
    output.mkdir(parents=True, exist_ok=True)
    if args.texts:
        entries = espeak_entries(args.texts, args.limit, output / "espeak")
    else:
        entries = read_filelist(args.filelist, args.dataset_path)[: args.limit]
    texts = [entry.text for entry in entries]

    judged = judge_from_args(args)
    synthesizer = load_synthesizer(args.tacotron2, args.hifigan)
    params = synthesizer.audio_params
    vocoders = [(setting.name, lambda mel, setting=setting: setting(mel.unsqueeze(0), params)[0])
                for setting in GRIFFIN_LIM_SETTINGS]
    if args.hifigan:
        vocoders.append((f"HiFi-GAN ({args.hifigan})", lambda mel: synthesizer.vocoder(mel.unsqueeze(0)).float()[0]))
    if args.melinverter:
        for iterations, inverter in zip(args.phase_iterations,
                                        load_melinverters(args.melinverter, args.phase_iterations)):
            vocoders.append((f"mel inverter + fast Griffin-Lim, {iterations} iterations ({args.melinverter})",
                             lambda mel, inverter=inverter: inverter(mel.unsqueeze(0))[0]))

    recordings = [entry.path for entry in entries]
    mel_spectrogram = MelSpectrogram(params)
    with torch.no_grad():
        recorded_audio = [load_wav(path, params.sampling_rate) for path in recordings]
        true_mels = [mel_spectrogram(audio)[0] for audio in recorded_audio]
        # Griffin-Lim from the exact magnitudes: what phase retrieval alone costs, with no mel to invert.
        magnitudes = [mel_spectrogram.magnitude(audio.unsqueeze(0)) for audio in recorded_audio]
        phase_only = {iterations: [griffin_lim_phase(magnitude, params, iterations)[0] for magnitude in magnitudes]
                      for iterations in args.phase_iterations}
    mel_sets = [("recordings' mels", true_mels),
                ("Tacotron 2 teacher-forced mels", teacher_forced_mels(
                    synthesizer.tacotron2, synthesizer.text, mel_spectrogram, params, entries, args.seed,
                    torch.device("cpu"))),
                ("Tacotron 2 mels", free_running_mels(synthesizer, entries, args.seed))]

    def pairs(paths: list[Path]) -> list[tuple[int, str, Path]]:
        return [(number, text, path) for number, (text, path) in enumerate(zip(texts, paths), 1)]

    if args.texts:
        rows = [("eSpeak NG speaking the text (the recordings, and the ceiling)", pairs(recordings))]
    else:
        rows = [("the recordings", pairs(recordings)),
                ("eSpeak NG speaking the same text (the ceiling)",
                 render_with_espeak(pairs(recordings), output / "espeak", ESPEAK_VOICE, ESPEAK_RATE))]

    def add_row(name: str, audios: list[torch.Tensor]) -> None:
        folder = output / f"row_{len(rows) + 1:02d}"
        rows.append((name, pairs(write_wavs(folder, audios, params.sampling_rate))))

    for iterations, audios in phase_only.items():
        add_row(f"recordings' STFT magnitudes (no mel) -> fast Griffin-Lim's phase, {iterations} iterations", audios)
    for mel_name, mels in mel_sets:
        for vocoder_name, vocode in vocoders:
            with torch.no_grad():
                add_row(f"{mel_name} -> {vocoder_name}", [vocode(mel) for mel in mels])

    sentences = args.texts or args.filelist
    judge = args.asr if args.judge == "wav2vec2" else "Moonshine base"
    report = {"judge": args.judge, "asr": args.asr, "tacotron2": args.tacotron2, "hifigan": args.hifigan,
              "melinverter": args.melinverter, "sentences_from": sentences, "sentences": len(texts), "rows": []}
    print(f"{len(texts)} sentences of {sentences}, heard by {judge}")
    print("| audio | CER % | WER % |")
    print("| --- | --- | --- |")
    for name, row_pairs in rows:
        result = judged(row_pairs)
        report["rows"].append({"audio": name, **result})
        print(f"| {name} | {result['cer']:.1f} | {result['wer']:.1f} |", flush=True)
    (output / "breakdown.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    if not args.quiet:
        print(f"wrote {output / 'breakdown.json'}")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
