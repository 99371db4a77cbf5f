"""train.py and inference.py, run as a user runs them: a mistake in what was given ends in one `error: ...` line on
stderr that names the file or flag and what to do, exit code 2, and no traceback."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile
import torch

from common.checkpoint import save_checkpoint
from tests.conftest import REPO_ROOT

TINY_TACOTRON2 = ["--symbols-embedding-dim", "16", "--encoder-embedding-dim", "16", "--encoder-n-convolutions", "1",
                  "--attention-rnn-dim", "16", "--decoder-rnn-dim", "16", "--prenet-dim", "8", "--attention-dim", "8",
                  "--postnet-embedding-dim", "8", "--postnet-n-convolutions", "1"]


def run_entry_point(script: str, *arguments) -> str:
    """Run the script; assert the user-error contract and return the error line."""
    completed = subprocess.run([sys.executable, str(REPO_ROOT / script), *map(str, arguments)], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
    return lines[0]


@pytest.fixture()
def phrases(tmp_path):
    path = tmp_path / "phrases.txt"
    path.write_text("Hello.\n")
    return path


@pytest.mark.slow
def test_inference_with_a_truncated_checkpoint(tmp_path, phrases):
    whole = tmp_path / "whole.pt"
    torch.save({"state_dict": {"weight": torch.zeros(1000)}}, whole)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(whole.read_bytes()[:500])
    line = run_entry_point("inference.py", "-i", phrases, "-o", tmp_path / "out", "--tacotron2", truncated)
    assert line.startswith(f"error: cannot read checkpoint --tacotron2 {truncated}: the file is damaged or truncated")
    assert line.endswith("copy or download it again, or give another file")
    assert "weights_only" not in line  # torch's advice to load unsafely is wrong for a damaged file


@pytest.mark.slow
def test_inference_with_another_models_checkpoint(tmp_path, phrases):
    waveglow = tmp_path / "checkpoint_WaveGlow_9.pt"
    save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, waveglow)
    line = run_entry_point("inference.py", "-i", phrases, "-o", tmp_path / "out", "--tacotron2", waveglow)
    assert line == (f"error: checkpoint --tacotron2 {waveglow} is a WaveGlow checkpoint, expected Tacotron2; "
                    "give a Tacotron2 checkpoint there")


@pytest.mark.slow
def test_inference_with_a_missing_vocoder_checkpoint_in_mel_to_wav_mode(tmp_path):
    mel = tmp_path / "mel_1.pt"
    torch.save(torch.zeros(80, 4), mel)
    line = run_entry_point("inference.py", "-m", "WaveGlow", "-i", mel, "-o", tmp_path / "out",
                           "--waveglow", tmp_path / "absent.pt")
    assert line == f"error: checkpoint not found: --waveglow {tmp_path / 'absent.pt'}"


@pytest.mark.slow
def test_train_with_a_missing_filelist(tmp_path):
    line = run_entry_point("train.py", "-m", "Tacotron2", "-o", tmp_path / "run", "-lr", "1e-3", "-bs", "2",
                           "--epochs", "1", "--cpu", "--num-workers", "0", "--training-files", tmp_path / "train.txt",
                           "--validation-files", tmp_path / "val.txt", *TINY_TACOTRON2)
    assert line.startswith(f"error: filelist not found: {tmp_path / 'train.txt'}; check the path")


@pytest.mark.slow
def test_train_keeping_the_data_in_memory_with_worker_processes(synthetic_corpus, tmp_path):
    line = run_entry_point("train.py", "-m", "Tacotron2", "-o", tmp_path / "run", "-lr", "1e-3", "-bs", "2",
                           "--epochs", "1", "--cpu", "--num-workers", "2", "--keep-in-memory",
                           "-d", synthetic_corpus.dataset_dir, "--training-files", synthetic_corpus.train_filelist,
                           "--validation-files", synthetic_corpus.val_filelist, *TINY_TACOTRON2)
    assert line == ("error: --keep-in-memory keeps the data in the training process, and --num-workers 2 loads it "
                    "in worker processes that each epoch starts afresh: give --num-workers 0 with it, or "
                    "--no-keep-in-memory")


@pytest.mark.slow
def test_train_with_a_config_file_that_is_not_json(tmp_path):
    config = tmp_path / "preset.json"
    config.write_text("{epochs: 3}")
    line = run_entry_point("train.py", "-m", "Tacotron2", "--config-file", config, "-o", tmp_path / "run")
    assert line.startswith(f"error: --config-file {config} is not valid JSON")


# ---- the sweep (issue 21): mistakes across train.py and inference.py for every family, run in this process -------
# Each case gives (entry point, its arguments built from the workspace, a fragment the error line must hold).


@pytest.fixture(scope="module")
def workspace(synthetic_corpus, synthetic_asr_corpus, tmp_path_factory):
    """Files with the mistakes in them, and untrained checkpoints of each family, made once for the sweep."""
    from types import SimpleNamespace

    from tests.families import run_args
    from tests.training_runs import untrained_checkpoint

    folder = tmp_path_factory.mktemp("mistakes")
    w = SimpleNamespace(folder=folder, corpus=synthetic_corpus, asr=synthetic_asr_corpus)
    for name in ("Tacotron2", "WaveGlow", "HiFiGAN"):
        setattr(w, name, untrained_checkpoint(run_args(name, synthetic_corpus, folder), folder / f"{name}.pt"))
    ctc = run_args("wav2vec2", synthetic_asr_corpus, folder)
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
    first_wav = synthetic_corpus.train_filelist.read_text().splitlines()[0].split("|")[0]
    w.no_transcript = folder / "no_transcript.txt"
    w.no_transcript.write_text(f"{first_wav}|\n")
    w.missing_wav = folder / "missing_wav.txt"
    w.missing_wav.write_text("wavs/not_there.wav|Some words.\n")
    w.unknown_key = folder / "preset.json"
    w.unknown_key.write_text('{"training": {"epochs": 3, "learning_rat": 0.001}}')
    w.mel_40 = folder / "mel_40.pt"
    torch.save(torch.zeros(40, 20), w.mel_40)
    w.mel_3d = folder / "mel_3d.pt"
    torch.save(torch.zeros(2, 80, 20), w.mel_3d)
    w.mel_filelist = folder / "mel_filelist.txt"  # for --load-mel-from-disk, paths relative to `folder`
    w.mel_filelist.write_text("mel_40.pt|Hello there.\nmel_40.pt|General Kenobi.\n")
    w.not_audio = folder / "speech.wav"
    w.not_audio.write_text("not a wav at all")
    w.silent = folder / "silent.wav"
    soundfile.write(w.silent, np.zeros(0, dtype=np.float32), 16000)
    w.bad_manifest = folder / "bad_manifest"
    w.bad_manifest.mkdir()
    (w.bad_manifest / "train.tsv").write_text(f"{synthetic_asr_corpus.directory}\nwavs/train-00001.wav 37480\n")
    w.empty_manifest = folder / "empty_manifest"
    w.empty_manifest.mkdir()
    (w.empty_manifest / "train.tsv").write_text("")
    w.short_labels = folder / "short_labels"
    shutil.copytree(synthetic_asr_corpus.directory, w.short_labels, ignore=shutil.ignore_patterns("wavs"))
    (w.short_labels / "train.ltr").write_text("A |\n")
    return w


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


SWEEP = {
    # train.py: files
    "filelist not UTF-8": ("train.py", lambda w: train_tacotron2(w, "--training-files", w.latin1),
                           "latin1.txt:1: not UTF-8 text"),
    "filelist line without a transcript separator": (
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.malformed), "malformed.txt:1: malformed line"),
    "filelist of blank lines": ("train.py", lambda w: train_tacotron2(w, "--training-files", w.blank),
                                "blank.txt has no entries"),
    "filelist line with an empty transcript": (
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.no_transcript),
        "no_transcript.txt:1: empty transcript"),
    "filelist naming a missing wav (Tacotron 2)": (
        "train.py", lambda w: train_tacotron2(w, "--training-files", w.missing_wav),
        "missing_wav.txt:1: audio file not found"),
    "filelist naming a missing wav (HiFi-GAN)": (
        "train.py", lambda w: train_family(w, "HiFiGAN", "--training-files", w.missing_wav),
        "missing_wav.txt:1: audio file not found"),
    "preset with an unknown key": ("train.py", lambda w: train_tacotron2(w, "--config-file", w.unknown_key),
                                   "unknown setting 'learning_rat'"),
    "missing preset": ("train.py", lambda w: train_tacotron2(w, "--config-file", w.folder / "absent.json"),
                       "absent.json does not exist"),
    # train.py: checkpoints
    "resume from a missing checkpoint": (
        "train.py", lambda w: train_tacotron2(w, "--checkpoint-path", w.folder / "absent.pt"),
        "checkpoint not found: --checkpoint-path"),
    "resume from an empty checkpoint": ("train.py", lambda w: train_tacotron2(w, "--checkpoint-path", w.empty),
                                        "the file is empty"),
    "resume from a text file": ("train.py", lambda w: train_family(w, "WaveGlow", "--checkpoint-path", w.text_file),
                                "the file is damaged, truncated, or not a PyTorch checkpoint"),
    "resume Tacotron 2 from a WaveGlow checkpoint": (
        "train.py", lambda w: train_tacotron2(w, "--checkpoint-path", w.WaveGlow),
        "is a WaveGlow checkpoint, expected Tacotron2"),
    "resume from weights without training state": (
        "train.py", lambda w: train_family(w, "WaveGlow", "--checkpoint-path", w.WaveGlow),
        "is not a training checkpoint of this project"),
    "fine-tune HiFi-GAN from a Tacotron 2 checkpoint": (
        "train.py", lambda w: train_family(w, "HiFiGAN", "--fine-tune-from", w.Tacotron2),
        "is a Tacotron2 checkpoint, expected HiFiGAN"),
    "an output folder that is a file": ("train.py", lambda w: train_family(w, "WaveGlow", "-o", w.text_file),
                                        "is a file; give a folder"),
    # train.py: flag values
    "no length of training": ("train.py", lambda w: train_family(w, "WaveNet", "--epochs", "0"),
                              "say how long to train"),
    "a learning rate that is no number": ("train.py", lambda w: train_tacotron2(w, "-lr", "fast"),
                                          "argument -lr/--learning-rate: invalid float value: 'fast'"),
    "a negative number of checkpoints to keep": (
        "train.py", lambda w: train_tacotron2(w, "--keep-last-checkpoints", "-1"), "must be >= 0, got -1"),
    "a flag that does not exist": ("train.py", lambda w: train_tacotron2(w, "--epoch", "3"),
                                   "unrecognized arguments: --epoch 3"),
    "a model that does not exist": ("train.py", lambda w: ["-m", "FastPitch", "-o", w.folder, "-lr", "1"],
                                    "argument -m/--model-name: invalid choice: 'FastPitch'"),
    "a Tacotron 2 mel of 40 channels from disk": (
        "train.py", lambda w: train_tacotron2(w, "-d", w.folder, "--load-mel-from-disk", "--training-files",
                                              w.mel_filelist, "--validation-files", w.mel_filelist),
        "mel_40.pt holds a float32 array of shape (40, 20), expected a float log mel of shape (80, frames)"),
    "a WaveGlow segment of no samples": ("train.py", lambda w: train_family(w, "WaveGlow", "--segment-length", "0"),
                                         "--segment-length must be positive"),
    "a HiFi-GAN segment that is no whole number of hops": (
        "train.py", lambda w: train_family(w, "HiFiGAN", "--segment-size", "2000"),
        "--segment-length (2000) must be a positive multiple of --hop-length (256)"),
    "HiFi-GAN mels that were never extracted": (
        "train.py", lambda w: train_family(w, "HiFiGAN", "--input-mels-dir", w.folder),
        "--input-mels-dir"),
    "wav2vec 2.0 max tokens of 0": ("train.py", lambda w: train_family(w, "wav2vec2", "--max-tokens", "0"),
                                    "--max-tokens must be a positive number of samples, got 0"),
    # train.py: manifests
    "a manifest line without a tab": ("train.py", lambda w: train_family(w, "wav2vec2", "--data", w.bad_manifest),
                                      "train.tsv:2: expected 'relative/path<TAB>num_samples'"),
    "an empty manifest": ("train.py", lambda w: train_family(w, "wav2vec2", "--data", w.empty_manifest),
                          "empty manifest"),
    "a manifest folder without its subset": (
        "train.py", lambda w: train_family(w, "wav2vec2", "--train-subset", "train-960"), "manifest not found"),
    "labels that do not match the manifest": (
        "train.py", lambda w: [token for token in train_family(w, "wav2vec2", "--data", w.short_labels)
                               if token != "pretrain"] + ["--mode", "finetune"],
        "train.ltr has 1 lines but"),
    # inference.py: text to speech
    "a phrase file not UTF-8": ("inference.py", lambda w: synthesize(w, w.latin1), "latin1.txt:1: not UTF-8 text"),
    "an empty phrase file": ("inference.py", lambda w: synthesize(w, w.blank), "has no text"),
    "an empty Tacotron 2 checkpoint": ("inference.py", lambda w: synthesize(w, None, "--tacotron2", w.empty),
                                       "cannot read checkpoint --tacotron2"),
    "a vocoder checkpoint of the wrong family": ("inference.py", lambda w: synthesize(w, None, "--waveglow", w.HiFiGAN),
                                                 "is a HiFiGAN checkpoint, expected WaveGlow"),
    "a batch of no phrases": ("inference.py", lambda w: synthesize(w, None, "-bs", "0"),
                              "--batch-size must be at least 1"),
    # inference.py: mels to wavs
    "a mel of 40 channels for an 80-channel WaveGlow": (
        "inference.py", lambda w: vocode(w, "WaveGlow", w.mel_40, w.WaveGlow), "mel_40.pt"),
    "a mel of three dimensions for HiFi-GAN": ("inference.py", lambda w: vocode(w, "HiFiGAN", w.mel_3d, w.HiFiGAN),
                                               "mel_3d.pt"),
    "a text file given as a mel": ("inference.py", lambda w: vocode(w, "WaveGlow", w.text_file, w.WaveGlow),
                                   "notes.pt"),
    "a WaveGlow checkpoint given to WaveNet": ("inference.py", lambda w: vocode(w, "WaveNet", w.mel_40, w.WaveGlow),
                                               "is a WaveGlow checkpoint, expected WaveNet"),
    "a negative benchmark repeat count": (
        "inference.py", lambda w: vocode(w, "HiFiGAN", w.mel_40, w.HiFiGAN, "--benchmark-repeats", "-2"),
        "--benchmark-repeats"),
    # inference.py: speech to text
    "a file that is not audio": ("inference.py", lambda w: transcribe(w, w.not_audio), "cannot read audio file"),
    "an audio file of no samples": ("inference.py", lambda w: transcribe(w, w.silent), "holds no samples"),
    "a Tacotron 2 checkpoint for speech recognition": ("inference.py", lambda w: transcribe(w, w.silent, w.Tacotron2),
                                                       "Tacotron2"),
    "a malformed manifest for speech recognition": ("inference.py",
                                                    lambda w: transcribe(w, w.bad_manifest / "train.tsv"),
                                                    "train.tsv:2: expected"),
}


@pytest.mark.parametrize("mistake", SWEEP)
def test_each_mistake_ends_in_one_error_line_and_exit_code_2(mistake, workspace, capsys):
    import inference
    import train
    from common.errors import exit_on_user_error

    script, arguments, expected = SWEEP[mistake]
    main = {"train.py": train.main, "inference.py": inference.main}[script]
    argv = [str(argument) for argument in arguments(workspace)]
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: main(argv))
    error = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2, error
    assert len(error) == 1 and error[0].startswith("error: "), error
    assert expected in error[0], error[0]


def test_the_sweep_covers_every_family_and_both_entry_points():
    assert len(SWEEP) >= 30
    covered = " ".join(f"{script} {mistake}" for mistake, (script, _, _) in SWEEP.items())
    for words in ("train.py", "inference.py", "Tacotron 2", "WaveGlow", "HiFi-GAN", "WaveNet", "wav2vec 2.0",
                  "speech recognition"):
        assert words in covered, words
