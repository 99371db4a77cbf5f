"""Shared test setup: the repository root on sys.path, and a tiny eSpeak NG corpus built once per session."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # so tests can `import common`, `import tacotron2`, `import train`

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
