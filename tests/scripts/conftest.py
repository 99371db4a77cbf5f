"""Fixtures of the scripts' tests: a tiny speech recognizer (scripts/intelligibility.py and the demos judge with it)."""
import pytest

import train

TINY_RECOGNIZER = ["--conv-feature-layers", "[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", "--encoder-layers", "2",
                   "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
                   "--final-dim", "16", "--latent-vars", "8", "--num-negatives", "5", "--conv-pos", "8",
                   "--conv-pos-groups", "4"]


@pytest.fixture(scope="module")
def recognizer_checkpoint(synthetic_asr_corpus, tmp_path_factory):
    """A tiny CTC model fine-tuned from scratch for 2 updates on the synthetic ASR corpus."""
    output = tmp_path_factory.mktemp("tiny_asr")
    train.main(["-m", "wav2vec2", "finetune", "--data", str(synthetic_asr_corpus.directory), "-o", str(output),
                "-lr", "1e-4", "--max-updates", "2", "--max-tokens", "80000", "--mask-channel-length", "4",
                "--num-workers", "0", "--quiet", "--cpu", *TINY_RECOGNIZER])
    return output / "checkpoint_wav2vec2_last.pt"
