"""Tacotron 2's dataset with --keep-in-memory: the same items as computing each mel every epoch, each computed once."""
import shutil

import torch

from common.audio import AudioParams
from common.text import TextProcessor
from tacotron2.data_function import TextMelDataset


def test_kept_in_memory_the_items_are_the_same_and_each_mel_is_computed_once(synthetic_corpus, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(synthetic_corpus.dataset_dir, corpus)
    filelist = corpus / "filelists" / synthetic_corpus.train_filelist.name
    computed_each_time = TextMelDataset(filelist, corpus, TextProcessor(), AudioParams())
    kept = TextMelDataset(filelist, corpus, TextProcessor(), AudioParams(), keep_in_memory=True)
    for index in range(len(kept)):
        for ours, theirs in zip(kept[index], computed_each_time[index]):
            assert torch.equal(ours, theirs)
    first_mel = kept[0][1]
    shutil.rmtree(corpus / "wavs")  # nothing is read again
    assert torch.equal(kept[0][1], first_mel)
    assert len(kept.in_memory) == len(kept)
