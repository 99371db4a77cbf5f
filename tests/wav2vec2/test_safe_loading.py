"""wav2vec 2.0 files of this project load with torch.load(weights_only=True), as every checkpoint here does, so a site
that sets TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 reads them; only fairseq's files, whose configuration objects weights_only
refuses, go through the restricted unpickler (common/safe_unpickle.py), which that setting forbids: there they are
refused in one line saying how to convert them."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.checkpoint import save_checkpoint
from common.errors import UserError
from common.safe_unpickle import read_checkpoint_of_any_origin
from tests.conftest import REPO_ROOT
from wav2vec2.api import Recognizer
from wav2vec2.checkpoints import project_checkpoint, read_any_checkpoint
from wav2vec2.model import Wav2Vec2CTC

TINY = dict(conv_feature_layers="[(16, 10, 5)] + [(16, 3, 2)]", encoder_layers=1, encoder_embed_dim=16,
            encoder_ffn_embed_dim=32, encoder_attention_heads=2, final_dim=8, latent_vars=4, latent_groups=2,
            num_negatives=2, conv_pos=4, conv_pos_groups=2)
SYMBOLS = ["<s>", "<pad>", "</s>", "<unk>", "|", "A", "B"]


@pytest.fixture
def ours(tmp_path) -> Path:
    """A tiny CTC model in this project's checkpoint format (what wav2vec2.convert writes)."""
    model = Wav2Vec2CTC(TINY, len(SYMBOLS))
    config = dict(model.config, vocab_size=len(SYMBOLS), final_dropout=0.0, freeze_finetune_updates=0)
    path = tmp_path / "ours.pt"
    save_checkpoint(project_checkpoint(config, model.state_dict(), SYMBOLS), path)
    return path


@pytest.fixture
def fairseq_style(tmp_path) -> Path:
    """A file holding an argparse.Namespace, as fairseq's (until 2020) do: weights_only=True refuses it."""
    path = tmp_path / "fairseq.pt"
    torch.save({"args": argparse.Namespace(arch="wav2vec2", encoder_layers=1), "model": {"w": torch.ones(2)}}, path)
    return path


@pytest.fixture
def weights_only_forced(monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")  # torch reads it at every torch.load


def test_our_checkpoint_loads_where_weights_only_is_forced(ours, weights_only_forced):
    found = read_any_checkpoint(ours, "--checkpoint")
    assert found["format"] == "ours" and found["symbols"] == SYMBOLS
    assert Recognizer.from_checkpoint(ours).dictionary.symbols_with_specials == SYMBOLS


def test_a_fairseq_file_goes_through_the_restricted_unpickler_which_forced_weights_only_forbids(
        fairseq_style, monkeypatch):
    assert read_checkpoint_of_any_origin(fairseq_style)["args"] == {"arch": "wav2vec2", "encoder_layers": 1}
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(UserError) as refused:
        read_checkpoint_of_any_origin(fairseq_style, "--w2v-path")
    assert str(refused.value) == (
        f"cannot read --w2v-path {fairseq_style}: TORCH_FORCE_WEIGHTS_ONLY_LOAD is set, which allows only "
        "torch.load(weights_only=True), and this file holds objects that it refuses (fairseq's or NVIDIA's "
        "configuration, which this project otherwise reads with a restricted unpickler of its own); convert it once "
        f"where that variable is not set (python -m wav2vec2.convert --checkpoint {fairseq_style} --output "
        "converted.pt) and give the converted file, which loads with weights_only=True")


def test_a_damaged_file_is_called_damaged_where_weights_only_is_forced(ours, weights_only_forced):
    ours.write_bytes(ours.read_bytes()[:3000])
    with pytest.raises(UserError, match=r"ours\.pt: the file is damaged or truncated"):
        read_any_checkpoint(ours)


@pytest.mark.slow
def test_inference_with_our_recognizer_where_weights_only_is_forced(recognizer_checkpoint, synthetic_asr_corpus,
                                                                     tmp_path):
    """inference.py -m wav2vec2 started with TORCH_FORCE_WEIGHTS_ONLY_LOAD=1, as on a hardened site: it used to
    report every checkpoint of ours damaged."""
    completed = subprocess.run(
        [sys.executable, "inference.py", "-m", "wav2vec2", "--checkpoint", str(recognizer_checkpoint),
         "-i", str(synthetic_asr_corpus.test_sentences), "-o", str(tmp_path / "out"), "--cpu", "--quiet",
         "--save-predictions"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1", "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert (tmp_path / "out" / "predictions.txt").read_text().strip()
