"""Shared test setup: the repository root on sys.path, the tiny eSpeak NG corpora built once per session, and the
small checkpoints that tests of several folders read (a Tacotron 2 trained for an epoch, NVIDIA's WaveGlow format, a
tiny speech recognizer), and a stand-in for Python that notes the commands a shell script runs."""
from __future__ import annotations

import getpass
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # so tests can `import common`, `import tacotron2`, `import train`

# torch.compile's caches do not tell code vectorised under one ATEN_CPU_CAPABILITY from code for another: with the
# suite run again under `default`, kernels an earlier run cached failed to build ("'at::vec' has not been declared").
# One cache folder per setting (subprocesses inherit it).
if os.environ.get("ATEN_CPU_CAPABILITY"):
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(
        Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}_{os.environ['ATEN_CPU_CAPABILITY']}"))

SYNTHETIC_CORPUS_UTTERANCES = 24  # 22 train, 1 val, 1 test; about a minute of audio, built in under a second
SYNTHETIC_CORPUS_SEED = 1234


@dataclass(frozen=True)
class SyntheticCorpus:
    dataset_dir: Path  # wavs/, metadata.csv; the filelist paths are relative to it
    train_filelist: Path  # wavs/<ID>.wav|text
    val_filelist: Path
    test_filelist: Path
    num_utterances: int


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory) -> SyntheticCorpus:
    """A 24-utterance LJSpeech-layout corpus (seed 1234) with its filelists in filelists/ of the same folder.

    Shared by every test of the session: treat it as read-only (copy it to change it).
    """
    from scripts.data.synthetic_corpus import build_corpus

    dataset_dir = tmp_path_factory.mktemp("synthetic_corpus")
    summary = build_corpus(dataset_dir, dataset_dir / "filelists", num_utterances=SYNTHETIC_CORPUS_UTTERANCES,
                           seed=SYNTHETIC_CORPUS_SEED)
    return SyntheticCorpus(
        dataset_dir=dataset_dir,
        train_filelist=summary.filelists["audio_train"],
        val_filelist=summary.filelists["audio_val"],
        test_filelist=summary.filelists["audio_test"],
        num_utterances=summary.num_utterances,
    )


SYNTHETIC_ASR_CORPUS_UTTERANCES = 22  # 18 train, 2 valid, 2 test_sentences (+ 2 test_voice); about a minute, 16 kHz


@dataclass(frozen=True)
class SyntheticAsrCorpus:
    directory: Path  # the --data of train.py -m wav2vec2: <split>.tsv/.ltr/.wrd, dict.ltr.txt, wavs/
    train: Path  # train.tsv (its labels: train.ltr, train.wrd beside it)
    valid: Path
    test_sentences: Path  # held-out sentences, training voices
    test_voice: Path  # the same sentences, a voice never in training
    dictionary: Path  # dict.ltr.txt
    sampling_rate: int


@pytest.fixture(scope="session")
def synthetic_asr_corpus(tmp_path_factory) -> SyntheticAsrCorpus:
    """A tiny speech-recognition corpus (scripts/data/asr_corpus.py, seed 1234) in fairseq's manifest layout at
    16 kHz, built once per session. Shared by every test of the session: treat it as read-only."""
    from scripts.data.asr_corpus import build_asr_corpus

    directory = tmp_path_factory.mktemp("synthetic_asr_corpus")
    summary = build_asr_corpus(directory, num_utterances=SYNTHETIC_ASR_CORPUS_UTTERANCES, seed=1234)
    return SyntheticAsrCorpus(directory=directory, train=summary.manifests["train"],
                              valid=summary.manifests["valid"], test_sentences=summary.manifests["test_sentences"],
                              test_voice=summary.manifests["test_voice"], dictionary=summary.dictionary,
                              sampling_rate=16000)


# A small WaveGlow in NVIDIA's training-checkpoint format (tests/waveglow/test_vocoder.py, tests/test_inference.py).
# Its architecture is not the flag defaults, so only the file's config can build it. 80 mel channels: the vocoder's
# audio parameters are the defaults for a file without ours.
NVIDIA_WAVEGLOW_ARCHITECTURE = dict(n_mel_channels=80, flows=4, groups=8, early_every=2, early_size=2, wn_channels=8,
                                    wn_layers=2, wn_kernel_size=3, hop_length=256, win_length=1024)
NVIDIA_WAVEGLOW_CONFIG = {"n_mel_channels": 80, "n_flows": 4, "n_group": 8, "n_early_every": 2, "n_early_size": 2,
                          "WN_config": {"n_layers": 2, "kernel_size": 3, "n_channels": 8}}


@pytest.fixture(scope="module")
def nvidia_checkpoint(tmp_path_factory):
    """NVIDIA's WaveGlow training checkpoint of NVIDIA_WAVEGLOW_ARCHITECTURE, random weights: (its path, state dict)."""
    import torch

    from tests.waveglow.reference_equations import legacy_state_dict

    state_dict = legacy_state_dict(NVIDIA_WAVEGLOW_ARCHITECTURE, seed=4)
    parameter = torch.nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.Adam([parameter])
    parameter.grad = torch.ones(3)
    optimizer.step()
    path = tmp_path_factory.mktemp("nvidia") / "checkpoint_WaveGlow_1000.pt"
    torch.save({"epoch": 1000, "cuda_rng_state_all": torch.zeros(2, 16, dtype=torch.uint8),
                "random_rng_states_all": torch.zeros(2, 5056, dtype=torch.uint8), "config": NVIDIA_WAVEGLOW_CONFIG,
                "state_dict": state_dict, "optimizer": optimizer.state_dict(),
                "scaler": torch.amp.GradScaler("cpu").state_dict()}, path)
    return path, state_dict


# A Tacotron 2 small enough to train an epoch in seconds (tests/test_inference.py, the HiFi-GAN and scripts tests).
TINY_TACOTRON2 = ["--symbols-embedding-dim", "32", "--encoder-embedding-dim", "32", "--encoder-n-convolutions", "1",
                  "--attention-rnn-dim", "32", "--decoder-rnn-dim", "32", "--prenet-dim", "16", "--attention-dim", "8",
                  "--attention-location-n-filters", "4", "--attention-location-kernel-size", "5",
                  "--postnet-embedding-dim", "16", "--postnet-n-convolutions", "2", "--n-frames-per-step", "2",
                  "--max-decoder-steps", "40"]


@pytest.fixture(scope="module")
def tacotron2_checkpoint(synthetic_corpus, tmp_path_factory):
    """TINY_TACOTRON2 trained for one epoch on the synthetic corpus: its last checkpoint."""
    import torch

    import train

    output = tmp_path_factory.mktemp("tacotron2")
    torch.set_num_threads(1)
    train.main(["-m", "Tacotron2", "-o", str(output), "-d", str(synthetic_corpus.dataset_dir),
                "--training-files", str(synthetic_corpus.train_filelist),
                "--validation-files", str(synthetic_corpus.val_filelist), "-lr", "1e-3", "-bs", "8", "--epochs", "1",
                "--num-workers", "0", "--quiet", "--cpu", *TINY_TACOTRON2])
    return output / "checkpoint_Tacotron2_last.pt"


# A tiny speech recognizer (the scripts' tests, tests/test_api.py, tests/test_hubconf.py).
TINY_RECOGNIZER = ["--conv-feature-layers", "[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", "--encoder-layers", "2",
                   "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
                   "--final-dim", "16", "--latent-vars", "8", "--num-negatives", "5", "--conv-pos", "8",
                   "--conv-pos-groups", "4"]


@pytest.fixture(scope="module")
def recognizer_checkpoint(synthetic_asr_corpus, tmp_path_factory):
    """A tiny CTC model fine-tuned from scratch for 2 updates on the synthetic ASR corpus (scripts/intelligibility.py
    and the demos judge with it; the Python API and torch.hub tests load it)."""
    import train

    output = tmp_path_factory.mktemp("tiny_asr")
    train.main(["-m", "wav2vec2", "finetune", "--data", str(synthetic_asr_corpus.directory), "-o", str(output),
                "-lr", "1e-4", "--max-updates", "2", "--max-tokens", "80000", "--mask-channel-length", "4",
                "--num-workers", "0", "--quiet", "--cpu", *TINY_RECOGNIZER])
    return output / "checkpoint_wav2vec2_last.pt"


@dataclass(frozen=True)
class PythonStandIn:
    """An executable that, given as a script's PYTHON, notes each command line it is asked to run and does nothing:
    a script's wiring, tested without running what it wires."""
    path: Path
    calls: Path

    def commands(self) -> list[list[str]]:
        return [line.split() for line in self.calls.read_text().splitlines()] if self.calls.exists() else []


@pytest.fixture
def python_stand_in(tmp_path) -> PythonStandIn:
    calls = tmp_path / "python_calls.txt"
    path = tmp_path / "python_stand_in"
    path.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    path.chmod(0o755)
    return PythonStandIn(path, calls)
