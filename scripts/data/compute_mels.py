"""Precompute log mels for `--load-mel-from-disk` training, and the filelists that point at them.

    python -m scripts.data.compute_mels --dataset-dir data/LJSpeech-1.1 \
        --audio-filelists filelists/ljs_audio_text_train_filelist.txt filelists/ljs_audio_text_val_filelist.txt \
        [--overwrite] [audio flags as for train.py: --sampling-rate 22050 --mel-fmax 8000 ...]

For each line `wavs/<ID>.wav|text` it saves the (n_mel_channels, frames) float32 log mel that common.audio's
MelSpectrogram makes (so it equals what training computes on the fly) to <dataset-dir>/mels/<ID>.pt, and writes the
mel filelist (`mels/<ID>.pt|text`) named after the audio one with `_audio_text_` turned into `_mel_text_`.
mels/audio_params.json records the audio parameters: a later run with other parameters is refused (or, with
--overwrite, recomputes everything), and a run with the same ones skips mels already saved.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

from common.arguments import add_audio_args, audio_params_of
from common.audio import AudioParams, MelSpectrogram, load_wav
from common.filelist import read_filelist

PARAMS_FILE = "audio_params.json"
MEL_DIR = "mels"


def mel_filelist_path(audio_filelist: Path) -> Path:
    if "_audio_text_" not in audio_filelist.name:
        raise ValueError(f"cannot name the mel filelist for {audio_filelist}: its name has no '_audio_text_' "
                         "(give --mel-filelists)")
    return audio_filelist.with_name(audio_filelist.name.replace("_audio_text_", "_mel_text_"))


def save_atomically(tensor: torch.Tensor, path: Path) -> None:
    """A reader (or a rerun after Ctrl-C) never sees a half-written file."""
    temporary = path.with_name(path.name + ".tmp")
    torch.save(tensor, temporary)
    os.replace(temporary, path)


def _check_saved_params(params_path: Path, params: AudioParams, overwrite: bool) -> bool:
    """True when the mels already on disk were made with `params` and can be kept."""
    if not params_path.exists():
        return False
    try:
        saved = AudioParams.from_dict(json.loads(params_path.read_text()))
    except (json.JSONDecodeError, TypeError) as error:
        raise ValueError(f"{params_path} is not a valid audio parameter file ({error}); delete it or use --overwrite")
    if saved != params and not overwrite:
        saved.check_matches(params, f"the mels in {params_path.parent}", "this run's audio flags")  # raises
    return saved == params and not overwrite


def compute_mels(dataset_dir: str | Path, audio_filelists: list[str | Path],
                 mel_filelists: list[str | Path] | None = None, params: AudioParams = AudioParams(),
                 overwrite: bool = False, progress: bool = False) -> list[Path]:
    """Save every listed wav's log mel under <dataset_dir>/mels/ and write the mel filelists; returns their paths."""
    dataset_dir = Path(dataset_dir)
    audio_filelists = [Path(path) for path in audio_filelists]
    if mel_filelists is None:
        mel_filelists = [mel_filelist_path(path) for path in audio_filelists]
    mel_filelists = [Path(path) for path in mel_filelists]
    if len(mel_filelists) != len(audio_filelists):
        raise ValueError(f"{len(audio_filelists)} audio filelists but {len(mel_filelists)} mel filelists")

    listed = [(filelist, read_filelist(filelist, dataset_dir)) for filelist in audio_filelists]
    first_entry_of = {}
    for _, entries in listed:
        for entry in entries:
            other = first_entry_of.setdefault(entry.path.stem, entry)
            if other is not entry:
                raise ValueError(f"{entry.source}: {entry.path} and {other.path} ({other.source}) would both be "
                                 f"saved as {MEL_DIR}/{entry.path.stem}.pt")

    mel_dir = dataset_dir / MEL_DIR
    mel_dir.mkdir(parents=True, exist_ok=True)
    params_path = mel_dir / PARAMS_FILE
    keep_existing = _check_saved_params(params_path, params, overwrite)
    mel_spectrogram = MelSpectrogram(params)

    total = sum(len(entries) for _, entries in listed)
    done = computed = 0
    for (filelist, entries), mel_filelist in zip(listed, mel_filelists):
        lines = []
        for entry in entries:
            identifier = entry.path.stem
            mel_path = mel_dir / f"{identifier}.pt"
            if not (keep_existing and mel_path.exists()):
                try:
                    audio = load_wav(entry.path, params.sampling_rate)
                except (ValueError, FileNotFoundError) as error:
                    raise type(error)(f"{entry.source}: {error}") from error
                with torch.no_grad():
                    mel = mel_spectrogram(audio)[0].contiguous().clone()  # (n_mel_channels, frames)
                save_atomically(mel, mel_path)
                computed += 1
            lines.append(f"{MEL_DIR}/{identifier}.pt|{entry.text}\n")
            done += 1
            if progress and done % 1000 == 0:
                print(f"  {done}/{total} mels", flush=True)
        mel_filelist.parent.mkdir(parents=True, exist_ok=True)
        temporary = mel_filelist.with_name(mel_filelist.name + ".tmp")
        temporary.write_text("".join(lines), encoding="utf-8")
        os.replace(temporary, mel_filelist)
    # Written last: its presence means every mel listed so far was made with these parameters.
    temporary = params_path.with_name(PARAMS_FILE + ".tmp")
    temporary.write_text(json.dumps(params.to_dict(), indent=2) + "\n")
    os.replace(temporary, params_path)
    if progress:
        print(f"compute_mels: {computed} computed, {total - computed} already there, in {mel_dir}")
    return mel_filelists


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset-dir", required=True, help="the folder the filelist paths are relative to")
    parser.add_argument("--audio-filelists", nargs="+", required=True, help="wavs/<ID>.wav|text filelists")
    parser.add_argument("--mel-filelists", nargs="+", default=None,
                        help="where to write the mel filelists (default: the audio names with _mel_text_)")
    parser.add_argument("--overwrite", action="store_true",
                        help="recompute every mel, even if mels/ holds ones made with other audio parameters")
    add_audio_args(parser)
    args = parser.parse_args(argv)
    try:
        written = compute_mels(args.dataset_dir, args.audio_filelists, args.mel_filelists,
                               audio_params_of(args), args.overwrite, progress=True)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")
    for path in written:
        print(f"  {path}")


if __name__ == "__main__":
    main()
