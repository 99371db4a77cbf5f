"""train.py and inference.py, run as a user runs them: a mistake in what was given ends in one `error: ...` line on
stderr that names the file, line, flag or preset key and what to do, exit code 2, and no traceback.

MISTAKES is the table of every such mistake: each row gives the entry point, its arguments and the exact error
line, both built from the files of the `workspace` fixture. Most rows run the entry point's main in this process
through common.errors.exit_on_user_error (what the scripts run); the rows marked `subprocess` run the script itself,
to show the real contract (stderr, exit status) end to end."""
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np
import pytest
import soundfile
import torch

from tests.conftest import REPO_ROOT

TINY_TACOTRON2 = ["--symbols-embedding-dim", "16", "--encoder-embedding-dim", "16", "--encoder-n-convolutions", "1",
                  "--attention-rnn-dim", "16", "--decoder-rnn-dim", "16", "--prenet-dim", "8", "--attention-dim", "8",
                  "--postnet-embedding-dim", "8", "--postnet-n-convolutions", "1"]
HELP = " (--help lists the flags)"  # what argparse's own errors end with (common.errors.ArgumentParser)


def write_wav_with(path: Path, source: Path, sample: int, value: float) -> Path:
    """A float wav of `source`'s samples with one of them set to `value` (NaN, inf): what a broken export writes."""
    audio, sampling_rate = soundfile.read(source, dtype="float32")
    audio[sample] = value
    soundfile.write(path, audio, sampling_rate, subtype="FLOAT")
    return path


def write_json(path: Path, content) -> Path:
    path.write_text(json.dumps(content))
    return path


def build_mistakes(folder: Path, corpus, asr) -> SimpleNamespace:
    """Files with the mistakes in them, and untrained checkpoints of each family, in `folder`."""
    from tests.families import run_args
    from tests.training_runs import untrained_checkpoint

    w = SimpleNamespace(folder=folder, corpus=corpus, asr=asr)
    for name in ("Tacotron2", "WaveGlow", "HiFiGAN"):
        setattr(w, name, untrained_checkpoint(run_args(name, corpus, folder), folder / f"{name}.pt"))
    ctc = run_args("wav2vec2", asr, folder)
    ctc[ctc.index("pretrain")] = "finetune"
    w.wav2vec2 = untrained_checkpoint(ctc, folder / "wav2vec2.pt")
    w.empty = folder / "empty.pt"
    w.empty.write_bytes(b"")
    w.text_file = folder / "notes.pt"
    w.text_file.write_text("these are my notes, not a checkpoint\n")
    w.latin1 = folder / "latin1.txt"
    w.latin1.write_bytes("wavs/a.wav|na\xefve caf\xe9\n".encode("latin-1"))
    w.malformed = folder / "malformed.txt"
    w.malformed.write_text("wavs/a.wav and no transcript separator\n")
    w.blank = folder / "blank.txt"
    w.blank.write_text("\n  \n")
    first_wav = corpus.train_filelist.read_text().splitlines()[0].split("|")[0]
    w.no_transcript = folder / "no_transcript.txt"
    w.no_transcript.write_text(f"{first_wav}|\n")
    w.no_symbols = folder / "no_symbols.txt"  # every character outside the symbol table: nothing left to say
    w.no_symbols.write_text(f"{first_wav}|Hello there.\n{first_wav}|#$^*~\n")
    w.missing_wav = folder / "missing_wav.txt"
    w.missing_wav.write_text("wavs/not_there.wav|Some words.\n")
    w.nan_wav = write_wav_with(folder / "nan.wav", corpus.dataset_dir / first_wav, 500, np.nan)
    w.nan_filelist = folder / "nan_filelist.txt"  # an absolute path is taken as it is, whatever -d says
    w.nan_filelist.write_text(f"{w.nan_wav}|Hello there.\n")
    first_asr_wav = asr.directory / asr.train.read_text().splitlines()[1].split("\t")[0]
    w.inf_wav = write_wav_with(folder / "inf.wav", first_asr_wav, 100, np.inf)
    w.short_wav = folder / "short.wav"  # 2 ms: shorter than the tiny recognizer's receptive field (60 samples)
    soundfile.write(w.short_wav, np.full(32, 0.1, dtype=np.float32), 16000)
    w.unknown_key = write_json(folder / "preset.json", {"training": {"epochs": 3, "learning_rat": 0.001}})
    w.negative_keep = write_json(folder / "keep.json", {"keep_last_checkpoints": -1})
    w.bad_choice = write_json(folder / "backend.json", {"training": {"dist-backend": "mpi"}})
    w.bad_type = write_json(folder / "epochs.json", {"epochs": "many"})
    w.list_for_one = write_json(folder / "list.json", {"epochs": [1, 2]})
    w.not_a_switch = write_json(folder / "switch.json", {"run": {"cpu": "yes"}})
    w.null_rate = write_json(folder / "null.json", {"learning-rate": None})
    w.null_workers = write_json(folder / "null_workers.json", {"num_workers": None})
    w.wrong_count = write_json(folder / "betas.json", {"adam-betas": [0.9]})
    w.long_hop = write_json(folder / "hop.json", {"audio": {"hop_length": 2048}})
    w.preset_list = write_json(folder / "list_preset.json", [{"epochs": 3}])
    w.latin1_preset = folder / "latin1.json"
    w.latin1_preset.write_bytes('{"tensorboard_dir": "caf\xe9"}'.encode("latin-1"))
    w.mel_40 = folder / "mel_40.pt"
    torch.save(torch.zeros(40, 20), w.mel_40)
    w.mel_3d = folder / "mel_3d.pt"
    torch.save(torch.zeros(2, 80, 20), w.mel_3d)
    w.mel_filelist = folder / "mel_filelist.txt"  # for --load-mel-from-disk, paths relative to `folder`
    w.mel_filelist.write_text("mel_40.pt|Hello there.\n")
    w.not_audio = folder / "speech.wav"
    w.not_audio.write_text("not a wav at all")
    w.silent = folder / "silent.wav"
    soundfile.write(w.silent, np.zeros(0, dtype=np.float32), 16000)
    w.bad_manifest = folder / "bad_manifest"
    w.bad_manifest.mkdir()
    (w.bad_manifest / "train.tsv").write_text(f"{asr.directory}\nwavs/train-00001.wav 37480\n")
    w.empty_manifest = folder / "empty_manifest"
    w.empty_manifest.mkdir()
    (w.empty_manifest / "train.tsv").write_text("")
    w.short_labels = folder / "short_labels"
    shutil.copytree(asr.directory, w.short_labels, ignore=shutil.ignore_patterns("wavs"))
    (w.short_labels / "train.ltr").write_text("A |\n")
    w.latin1_references = folder / "latin1_references"  # a manifest whose word references are Latin-1
    w.latin1_references.mkdir()
    shutil.copy(asr.valid, w.latin1_references / "valid.tsv")
    (w.latin1_references / "valid.wrd").write_bytes(
        "".join(f"CAF\xc9 {number}\n" for number in range(len(asr.valid.read_text().splitlines()) - 1))
        .encode("latin-1"))
    whole = folder / "whole.pt"
    torch.save({"state_dict": {"weight": torch.zeros(1000)}}, whole)
    w.truncated = folder / "truncated.pt"
    w.truncated.write_bytes(whole.read_bytes()[:500])
    w.not_json = folder / "not_json.json"
    w.not_json.write_text("{epochs: 3}")
    w.a_file = folder / "a_file"
    w.a_file.write_text("a file where a folder should be\n")
    return w


@pytest.fixture(scope="module")
def workspace(synthetic_corpus, synthetic_asr_corpus, tmp_path_factory):
    """The mistakes' files, made once for the table."""
    return build_mistakes(tmp_path_factory.mktemp("mistakes"), synthetic_corpus, synthetic_asr_corpus)


def train_tacotron2(w, *extra):
    return ["-m", "Tacotron2", "-o", w.folder / "run", "-lr", "1e-3", "-bs", "2", "--epochs", "1", "--cpu",
            "--num-workers", "0", "-d", w.corpus.dataset_dir, "--training-files", w.corpus.train_filelist,
            "--validation-files", w.corpus.val_filelist, *TINY_TACOTRON2, *extra]


def train_family(w, name, *extra):
    from tests.families import run_args

    return run_args(name, w.asr if name == "wav2vec2" else w.corpus, w.folder / "run", "--epochs", "1", *extra)


def synthesize(w, phrases=None, *extra):
    if phrases is None:
        phrases = w.folder / "phrases.txt"
        phrases.write_text("Hello.\n")
    return ["-i", phrases, "-o", w.folder, "--tacotron2", w.Tacotron2, *extra]


def vocode(w, model, mel, checkpoint, *extra):
    return ["-m", model, "-i", mel, "-o", w.folder, f"--{model.lower()}", checkpoint, *extra]


def transcribe(w, audio, checkpoint=None):
    return ["-m", "wav2vec2", "-i", audio, "-o", w.folder, "--checkpoint", checkpoint or w.wav2vec2]


@dataclass(frozen=True)
class Mistake:
    script: str  # train.py or inference.py
    arguments: Callable  # workspace -> the script's arguments
    # workspace -> the exact error line; a compiled pattern for the few lines that quote a library's own words
    # (libsndfile's, which change between its versions)
    expected: Callable[[SimpleNamespace], str | re.Pattern]
    subprocess: bool = False  # run the script itself (slow), not its main in this process


def line(text: str) -> Callable:
    """An expected line that does not depend on the workspace."""
    return lambda w: text


MISTAKES = {
    # ---- train.py: files ----------------------------------------------------------------------------------------
    "filelist not UTF-8": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.latin1),
        lambda w: f"error: {w.latin1}:1: not UTF-8 text (invalid continuation byte at byte 13); save the file as "
                  "UTF-8"),
    "filelist line without a transcript separator": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.malformed),
        lambda w: f"error: {w.malformed}:1: malformed line 'wavs/a.wav and no transcript separator'; expected "
                  "'relative/path.wav|transcript'"),
    "filelist of blank lines": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.blank),
        lambda w: f"error: filelist {w.blank} has no entries"),
    "filelist line with an empty transcript": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.no_transcript),
        lambda w: f"error: {w.no_transcript}:1: empty transcript for wavs/SYN001-0001.wav"),
    "filelist line whose transcript encodes to no symbols": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.no_symbols),
        lambda w: f"error: {w.no_symbols}:2: transcript '#$^*~' encodes to no symbols"),
    "a missing filelist": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.folder / "train.txt"),
        lambda w: f"error: filelist not found: {w.folder / 'train.txt'}; check the path (relative to the current "
                  "folder; scripts/prepare_dataset.sh writes the filelists)", subprocess=True),
    "filelist naming a missing wav (Tacotron 2)": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.missing_wav),
        lambda w: f"error: {w.missing_wav}:1: audio file not found: {w.corpus.dataset_dir / 'wavs/not_there.wav'}"),
    "filelist naming a missing wav (HiFi-GAN)": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--training-files", w.missing_wav),
        lambda w: f"error: {w.missing_wav}:1: audio file not found: {w.corpus.dataset_dir / 'wavs/not_there.wav'}"),
    "a wav holding NaN samples (Tacotron 2)": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.nan_filelist, "-bs", "1"),
        lambda w: f"error: {w.nan_filelist}:1: {w.nan_wav} holds 1 NaN or infinite samples (the first is sample "
                  "500, at 0.023 s): repair the file or leave it out"),
    "a wav holding NaN samples (HiFi-GAN)": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--training-files", w.nan_filelist, "-bs", "1"),
        lambda w: f"error: {w.nan_filelist}:1: {w.nan_wav} holds 1 NaN or infinite samples (the first is sample "
                  "500, at 0.023 s): repair the file or leave it out"),
    # ---- train.py: presets (each value goes through its flag's checks) -------------------------------------------
    "preset with an unknown key": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.unknown_key),
        lambda w: f"error: --config-file {w.unknown_key}: unknown setting 'learning_rat'"),
    "preset that is not JSON": Mistake(
        "train.py", lambda w: ["-m", "Tacotron2", "--config-file", w.not_json, "-o", w.folder / "run"],
        lambda w: f"error: --config-file {w.not_json} is not valid JSON: Expecting property name enclosed in double "
                  "quotes: line 1 column 2 (char 1)", subprocess=True),
    "missing preset": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.folder / "absent.json"),
        lambda w: f"error: --config-file {w.folder / 'absent.json'} does not exist"),
    "preset that is a folder": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.folder),
        lambda w: f"error: --config-file {w.folder} is a folder, not a file"),
    "preset not UTF-8": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.latin1_preset),
        lambda w: f"error: --config-file {w.latin1_preset}:1: not UTF-8 text (invalid continuation byte at byte 24); "
                  "save the file as UTF-8"),
    "preset that is a list": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.preset_list),
        lambda w: f"error: --config-file {w.preset_list}: expected a JSON object of flag names to values "
                  "(optionally in sections), found list"),
    "preset keeping -1 checkpoints": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.negative_keep),
        lambda w: f"error: --config-file {w.negative_keep}: keep_last_checkpoints: must be >= 0, got -1",
        subprocess=True),
    "preset naming no backend there is": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.bad_choice),
        lambda w: f"error: --config-file {w.bad_choice}: dist-backend: invalid choice: 'mpi' (choose from 'nccl', "
                  "'gloo')"),
    "preset epochs that are no number": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.bad_type),
        lambda w: f"error: --config-file {w.bad_type}: epochs: invalid int value: 'many'"),
    "preset giving a list to a flag of one value": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.list_for_one),
        lambda w: f"error: --config-file {w.list_for_one}: epochs: expected one value, got a list: [1, 2]"),
    "preset giving a switch a string": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.not_a_switch),
        lambda w: f"error: --config-file {w.not_a_switch}: cpu: expected true or false, got \"yes\""),
    "preset giving a required flag null": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.null_rate),
        lambda w: f"error: --config-file {w.null_rate}: learning-rate: a value is required here, not null"),
    "preset giving null to a flag with a value by default": Mistake(
        "train.py", lambda w: train_family(w, "WaveNet", "--config-file", w.null_workers),
        lambda w: f"error: --config-file {w.null_workers}: num_workers: null is only for a setting whose default is "
                  "null; give a value (the default is 2)"),
    "preset giving one of two betas": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--config-file", w.wrong_count),
        lambda w: f"error: --config-file {w.wrong_count}: adam-betas: expected a list of 2 values, got [0.9]"),
    "preset hop longer than the window": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--config-file", w.long_hop),
        line("error: --hop-length 2048 is longer than --win-length 1024: the windows would skip samples; give a "
             "hop of at most the window")),
    # ---- train.py: checkpoints ----------------------------------------------------------------------------------
    "resume from a missing checkpoint": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--checkpoint-path", w.folder / "absent.pt"),
        lambda w: f"error: checkpoint not found: --checkpoint-path {w.folder / 'absent.pt'}"),
    "resume from an empty checkpoint": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--checkpoint-path", w.empty),
        lambda w: f"error: cannot read checkpoint --checkpoint-path {w.empty}: the file is empty; copy or download "
                  "it again, or give another file"),
    "resume from a text file": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "--checkpoint-path", w.text_file),
        lambda w: f"error: cannot read checkpoint --checkpoint-path {w.text_file}: the file is damaged, truncated, "
                  "or not a PyTorch checkpoint; copy or download it again, or give another file"),
    "resume Tacotron 2 from a WaveGlow checkpoint": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--checkpoint-path", w.WaveGlow),
        lambda w: f"error: checkpoint --checkpoint-path {w.WaveGlow} is a WaveGlow checkpoint, expected Tacotron2; "
                  "give a Tacotron2 checkpoint there"),
    "resume from weights without training state": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "--checkpoint-path", w.WaveGlow),
        lambda w: f"error: {w.WaveGlow} is not a training checkpoint of this project (no 'optimizers'); to start "
                  "from its weights use it for inference or fine-tuning instead"),
    "fine-tune HiFi-GAN from a Tacotron 2 checkpoint": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--fine-tune-from", w.Tacotron2),
        lambda w: f"error: checkpoint --fine-tune-from {w.Tacotron2} is a Tacotron2 checkpoint, expected HiFiGAN; "
                  "give a HiFiGAN checkpoint there"),
    "an output folder that is a file": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "-o", w.text_file),
        lambda w: f"error: -o/--output {w.text_file} is a file; give a folder for the checkpoints and logs"),
    # ---- train.py: flag values ----------------------------------------------------------------------------------
    "no length of training": Mistake(
        "train.py", lambda w: train_family(w, "WaveNet", "--epochs", "0"),
        line("error: say how long to train: --epochs N, --max-updates N, or both (the first reached ends)")),
    "a negative number of epochs": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--epochs", "-1"),
        line(f"error: argument --epochs: must be >= 0, got -1{HELP}")),
    "a negative number of updates": Mistake(
        "train.py", lambda w: train_family(w, "wav2vec2", "--max-updates", "-5"),
        line(f"error: argument --max-updates: must be >= 0, got -5{HELP}")),
    "a negative checkpoint interval in updates": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--save-interval-updates", "-1"),
        line(f"error: argument --save-interval-updates/--iters-per-checkpoint: must be >= 0, got -1{HELP}")),
    "a negative validation interval in updates": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "--val-interval-updates", "-1"),
        line(f"error: argument --val-interval-updates: must be >= 0, got -1{HELP}")),
    "a learning rate that is no number": Mistake(
        "train.py", lambda w: train_tacotron2(w, "-lr", "fast"),
        line(f"error: argument -lr/--learning-rate: invalid float value: 'fast'{HELP}")),
    "a negative learning rate": Mistake(
        "train.py", lambda w: train_tacotron2(w, "-lr", "-1"),
        line(f"error: argument -lr/--learning-rate: must be >= 0, got -1.0{HELP}"), subprocess=True),
    "a negative weight decay": Mistake(
        "train.py", lambda w: train_family(w, "MelInverter", "--weight-decay", "-1"),
        line(f"error: argument --weight-decay: must be >= 0, got -1.0{HELP}")),
    "a batch of no items": Mistake(
        "train.py", lambda w: train_tacotron2(w, "-bs", "0"),
        line(f"error: argument -bs/--batch-size: must be >= 1, got 0{HELP}")),
    "no batches accumulated": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--grad-accumulation", "0"),
        line(f"error: argument --grad-accumulation: must be >= 1, got 0{HELP}")),
    "keeping the data in memory with worker processes": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--num-workers", "2", "--keep-in-memory"),
        line("error: --keep-in-memory keeps the data in the training process, and --num-workers 2 loads it in "
             "worker processes that each epoch starts afresh: give --num-workers 0 with it, or --no-keep-in-memory"),
        subprocess=True),
    "a negative number of data workers": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--num-workers", "-1"),
        line(f"error: argument --num-workers: must be >= 0, got -1{HELP}")),
    "a negative seed": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "--seed", "-1"),
        line(f"error: argument --seed: must be >= 0, got -1{HELP}")),
    "a negative number of checkpoints to keep": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--keep-last-checkpoints", "-1"),
        line(f"error: argument --keep-last-checkpoints: must be >= 0, got -1{HELP}")),
    "a flag that does not exist": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--epoch", "3"),
        line(f"error: unrecognized arguments: --epoch 3{HELP}")),
    "a model that does not exist": Mistake(
        "train.py", lambda w: ["-m", "FastPitch", "-o", w.folder, "-lr", "1"],
        line("error: argument -m/--model-name: invalid choice: 'FastPitch' (choose from 'Tacotron2', 'WaveGlow', "
             f"'WaveNet', 'HiFiGAN', 'MelInverter', 'wav2vec2'){HELP}")),
    # ---- train.py: audio flags, each and together ---------------------------------------------------------------
    "a sampling rate of 0": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--sampling-rate", "0"),
        line(f"error: argument --sampling-rate: must be >= 1, got 0{HELP}")),
    "a sampling rate whose Nyquist frequency is below the mel filterbank's top": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--sampling-rate", "8000"),
        line("error: --mel-fmax 8000 is above the Nyquist frequency of --sampling-rate 8000 (4000 Hz): give "
             "--mel-fmax 4000 or less")),
    "no mel channels": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "--n-mel-channels", "0"),
        line(f"error: argument --n-mel-channels: must be >= 1, got 0{HELP}")),
    "a hop longer than the window": Mistake(
        "train.py", lambda w: train_tacotron2(w, "--hop-length", "2048"),
        line("error: --hop-length 2048 is longer than --win-length 1024: the windows would skip samples; give a "
             "hop of at most the window")),
    "a window longer than the FFT": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--win-length", "2048"),
        line("error: --win-length 2048 is longer than --filter-length 1024 (the FFT size): the window must fit in "
             "the FFT")),
    "a mel filterbank whose bottom is above its top": Mistake(
        "train.py", lambda w: train_family(w, "MelInverter", "--mel-fmin", "9000"),
        line("error: --mel-fmin 9000 must be below --mel-fmax 8000")),
    "a HiFi-GAN loss mel above the Nyquist frequency": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--mel-fmax-loss", "16000"),
        line("error: --mel-fmax-loss 16000 is above the Nyquist frequency of --sampling-rate 22050 (11025 Hz): give "
             "11025 or less, or leave it out (the default is the Nyquist frequency)")),
    # ---- train.py: family flags ---------------------------------------------------------------------------------
    "a Tacotron 2 mel of 40 channels from disk": Mistake(
        "train.py", lambda w: train_tacotron2(w, "-d", w.folder, "--load-mel-from-disk", "--training-files",
                                              w.mel_filelist, "--validation-files", w.mel_filelist, "-bs", "1"),
        lambda w: f"error: {w.mel_filelist}:1: {w.mel_40} holds a float32 array of shape (40, 20), expected a float "
                  "log mel of shape (80, frames)"),
    "a WaveGlow segment of no samples": Mistake(
        "train.py", lambda w: train_family(w, "WaveGlow", "--segment-length", "0"),
        line("error: --segment-length must be positive, got 0")),
    "a HiFi-GAN segment that is no whole number of hops": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--segment-size", "2000"),
        line("error: --segment-length (2000) must be a positive multiple of --hop-length (256): one mel frame per "
             "hop of audio")),
    "HiFi-GAN mels that were never extracted": Mistake(
        "train.py", lambda w: train_family(w, "HiFiGAN", "--input-mels-dir", w.folder),
        lambda w: f"error: --input-mels-dir {w.folder}: no SYN001-0001.pt or SYN001-0001.npy for "
                  f"{w.corpus.dataset_dir / 'wavs/SYN001-0001.wav'} (extract the mels with "
                  "scripts/extract_gta_mels.sh)"),
    "wav2vec 2.0 max tokens of 0": Mistake(
        "train.py", lambda w: train_family(w, "wav2vec2", "--max-tokens", "0"),
        line("error: --max-tokens must be a positive number of samples, got 0")),
    # ---- train.py: manifests ------------------------------------------------------------------------------------
    "a manifest line without a tab": Mistake(
        "train.py", lambda w: train_family(w, "wav2vec2", "--data", w.bad_manifest),
        lambda w: f"error: {w.bad_manifest / 'train.tsv'}:2: expected 'relative/path<TAB>num_samples', found "
                  "'wavs/train-00001.wav 37480'"),
    "an empty manifest": Mistake(
        "train.py", lambda w: train_family(w, "wav2vec2", "--data", w.empty_manifest),
        lambda w: f"error: {w.empty_manifest / 'train.tsv'}: empty manifest: its first line must be the root folder "
                  "of the audio"),
    "a manifest folder without its subset": Mistake(
        "train.py", lambda w: train_family(w, "wav2vec2", "--train-subset", "train-960"),
        lambda w: f"error: manifest not found: {w.asr.directory / 'train-960.tsv'}"),
    "labels that do not match the manifest": Mistake(
        "train.py", lambda w: [token for token in train_family(w, "wav2vec2", "--data", w.short_labels)
                               if token != "pretrain"] + ["--mode", "finetune"],
        lambda w: f"error: {w.short_labels / 'train.ltr'} has 1 lines but {w.short_labels / 'train.tsv'} lists 18 "
                  "audio files: every utterance needs one label line, in the same order"),
    # ---- inference.py: text to speech ---------------------------------------------------------------------------
    "a phrase file not UTF-8": Mistake(
        "inference.py", lambda w: synthesize(w, w.latin1),
        lambda w: f"error: -i {w.latin1}:1: not UTF-8 text (invalid continuation byte at byte 13); save the file as "
                  "UTF-8"),
    "an empty phrase file": Mistake(
        "inference.py", lambda w: synthesize(w, w.blank),
        lambda w: f"error: input file {w.blank} has no text (-i): give one utterance per line"),
    "an empty Tacotron 2 checkpoint": Mistake(
        "inference.py", lambda w: synthesize(w, None, "--tacotron2", w.empty),
        lambda w: f"error: cannot read checkpoint --tacotron2 {w.empty}: the file is empty; copy or download it "
                  "again, or give another file"),
    "a vocoder checkpoint of the wrong family": Mistake(
        "inference.py", lambda w: synthesize(w, None, "--waveglow", w.HiFiGAN),
        lambda w: f"error: checkpoint --waveglow {w.HiFiGAN} is a HiFiGAN checkpoint, expected WaveGlow; give a "
                  "WaveGlow checkpoint there"),
    "a batch of no phrases": Mistake(
        "inference.py", lambda w: synthesize(w, None, "-bs", "0"),
        line("error: --batch-size must be at least 1, got 0")),
    "float16 LSTM weights asked of the reference decoder": Mistake(
        "inference.py", lambda w: synthesize(w, None, "--cpu", "--no-fast-decoder", "--half-lstm-weights"),
        line("error: --half-lstm-weights cannot be combined with --no-fast-decoder (it is the fast decoder's): drop "
             "one of them")),
    "a truncated Tacotron 2 checkpoint": Mistake(
        "inference.py", lambda w: synthesize(w, None, "--tacotron2", w.truncated),
        lambda w: re.compile(re.escape(f"error: cannot read checkpoint --tacotron2 {w.truncated}: the file is "
                                       "damaged or truncated (") + r"[^;]*" + re.escape(
                             "); copy or download it again, or give another file")), subprocess=True),
    "another model's checkpoint given as Tacotron 2": Mistake(
        "inference.py", lambda w: synthesize(w, None, "--tacotron2", w.WaveGlow),
        lambda w: f"error: checkpoint --tacotron2 {w.WaveGlow} is a WaveGlow checkpoint, expected Tacotron2; give a "
                  "Tacotron2 checkpoint there", subprocess=True),
    "no decoder steps": Mistake(
        "inference.py", lambda w: synthesize(w, None, "--max-decoder-steps", "0"),
        line(f"error: argument --max-decoder-steps: must be >= 1, got 0{HELP}")),
    "an output folder that is a file (text to speech)": Mistake(
        "inference.py", lambda w: synthesize(w, None, "-o", w.a_file),
        lambda w: f"error: -o/--output {w.a_file} is a file; give a folder for the outputs", subprocess=True),
    "an output folder that cannot be made": Mistake(
        "inference.py", lambda w: synthesize(w, None, "-o", w.a_file / "wavs"),
        lambda w: f"error: -o/--output {w.a_file / 'wavs'}: cannot create the folder or write in it: Not a "
                  "directory"),
    # ---- inference.py: mels to wavs -----------------------------------------------------------------------------
    "a mel of 40 channels for an 80-channel WaveGlow": Mistake(
        "inference.py", lambda w: vocode(w, "WaveGlow", w.mel_40, w.WaveGlow),
        lambda w: f"error: {w.mel_40} holds a float32 array of shape (40, 20), expected a float log mel of shape "
                  "(80, frames)"),
    "a mel of three dimensions for HiFi-GAN": Mistake(
        "inference.py", lambda w: vocode(w, "HiFiGAN", w.mel_3d, w.HiFiGAN),
        lambda w: f"error: {w.mel_3d} holds a float32 array of shape (2, 80, 20), expected a float log mel of shape "
                  "(80, frames)"),
    "a missing vocoder checkpoint": Mistake(
        "inference.py", lambda w: vocode(w, "WaveGlow", w.mel_40, w.folder / "absent.pt"),
        lambda w: f"error: checkpoint not found: --waveglow {w.folder / 'absent.pt'}"),
    "a text file given as a mel": Mistake(
        "inference.py", lambda w: vocode(w, "WaveGlow", w.text_file, w.WaveGlow),
        lambda w: f"error: cannot read mel file {w.text_file}: it is damaged or not a saved tensor"),
    "a WaveGlow checkpoint given to WaveNet": Mistake(
        "inference.py", lambda w: vocode(w, "WaveNet", w.mel_40, w.WaveGlow),
        lambda w: f"error: checkpoint --wavenet {w.WaveGlow} is a WaveGlow checkpoint, expected WaveNet; give a "
                  "WaveNet checkpoint there"),
    "a negative benchmark repeat count": Mistake(
        "inference.py", lambda w: vocode(w, "HiFiGAN", w.mel_40, w.HiFiGAN, "--benchmark-repeats", "-2"),
        line("error: --benchmark-repeats must be 0 (off) or more, got -2")),
    "an output folder that is a file (mels to wavs)": Mistake(
        "inference.py", lambda w: vocode(w, "HiFiGAN", w.mel_40, w.HiFiGAN, "-o", w.a_file),
        lambda w: f"error: -o/--output {w.a_file} is a file; give a folder for the outputs"),
    # ---- inference.py: speech to text ---------------------------------------------------------------------------
    "a file that is not audio": Mistake(
        "inference.py", lambda w: transcribe(w, w.not_audio),
        lambda w: re.compile(re.escape(f"error: -i: cannot read audio file {w.not_audio}: ") + ".+")),
    "an audio file of no samples": Mistake(
        "inference.py", lambda w: transcribe(w, w.silent),
        lambda w: f"error: -i: {w.silent} holds no samples"),
    "an audio file shorter than the recognizer's receptive field": Mistake(
        "inference.py", lambda w: transcribe(w, w.short_wav),
        lambda w: f"error: -i: {w.short_wav}: has 32 samples, expected at least 60: the model's feature extractor "
                  "reads 60 samples (3.75 ms) for one frame"),
    "an audio file holding infinite samples": Mistake(
        "inference.py", lambda w: transcribe(w, w.inf_wav),
        lambda w: f"error: -i: {w.inf_wav} holds 1 NaN or infinite samples (the first is sample 100, at 0.006 s): "
                  "repair the file or leave it out"),
    "word references not UTF-8": Mistake(
        "inference.py", lambda w: transcribe(w, w.latin1_references / "valid.tsv"),
        lambda w: f"error: {w.latin1_references / 'valid.wrd'}:1: not UTF-8 text (invalid continuation byte at byte "
                  "3); save the file as UTF-8"),
    "a Tacotron 2 checkpoint for speech recognition": Mistake(
        "inference.py", lambda w: transcribe(w, w.silent, w.Tacotron2),
        lambda w: f"error: --checkpoint {w.Tacotron2} is a Tacotron2 checkpoint, expected wav2vec2"),
    "a malformed manifest for speech recognition": Mistake(
        "inference.py", lambda w: transcribe(w, w.bad_manifest / "train.tsv"),
        lambda w: f"error: {w.bad_manifest / 'train.tsv'}:2: expected 'relative/path<TAB>num_samples', found "
                  "'wavs/train-00001.wav 37480'"),
}


def run_in_process(script: str, argv: list[str], capsys) -> tuple[int, list[str]]:
    """The script's main run as its `__main__` runs it (exit_on_user_error): (exit status, stderr's lines)."""
    import inference
    import train
    from common.errors import exit_on_user_error

    main = {"train.py": train.main, "inference.py": inference.main}[script]
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: main(argv))
    return stopped.value.code, capsys.readouterr().err.strip().splitlines()


def run_script(script: str, argv: list[str]) -> tuple[int, list[str]]:
    completed = subprocess.run([sys.executable, str(REPO_ROOT / script), *argv], cwd=REPO_ROOT, capture_output=True,
                               text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return completed.returncode, completed.stderr.strip().splitlines()


def check_the_error_line(mistake: str, status: int, stderr: list[str], workspace) -> None:
    assert status == 2, stderr
    assert len(stderr) == 1 and "Traceback" not in stderr[0], stderr
    expected = MISTAKES[mistake].expected(workspace)
    if isinstance(expected, re.Pattern):
        assert expected.fullmatch(stderr[0]), stderr[0]
    else:
        assert stderr[0] == expected


IN_PROCESS = [name for name, mistake in MISTAKES.items() if not mistake.subprocess]
SUBPROCESS = [name for name, mistake in MISTAKES.items() if mistake.subprocess]


@pytest.mark.parametrize("mistake", IN_PROCESS)
def test_each_mistake_ends_in_its_one_error_line_and_exit_code_2(mistake, workspace, capsys):
    row = MISTAKES[mistake]
    status, stderr = run_in_process(row.script, [str(argument) for argument in row.arguments(workspace)], capsys)
    check_the_error_line(mistake, status, stderr, workspace)


@pytest.mark.slow
@pytest.mark.parametrize("mistake", SUBPROCESS)
def test_the_script_itself_prints_one_error_line_and_exits_2(mistake, workspace):
    row = MISTAKES[mistake]
    status, stderr = run_script(row.script, [str(argument) for argument in row.arguments(workspace)])
    check_the_error_line(mistake, status, stderr, workspace)


def test_the_table_covers_every_family_both_entry_points_and_presets():
    assert len(MISTAKES) >= 60 and len(SUBPROCESS) >= 5
    covered = " ".join(f"{row.script} {mistake}" for mistake, row in MISTAKES.items())
    for words in ("train.py", "inference.py", "Tacotron 2", "WaveGlow", "HiFi-GAN", "WaveNet", "wav2vec 2.0",
                  "speech recognition", "preset", "NaN", "infinite"):
        assert words in covered, words
