"""--keep-in-memory: the same crops as reading every clip for every crop, each clip read from disk only once."""
import shutil

import torch

from common.audio import AudioParams
from common.mel_audio_data import MelAudioCrops


def test_kept_in_memory_the_crops_are_the_same_and_each_clip_is_read_once(synthetic_corpus, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(synthetic_corpus.dataset_dir, corpus)
    filelist = corpus / "filelists" / synthetic_corpus.train_filelist.name
    read_each_time = MelAudioCrops(filelist, corpus, AudioParams(), 4096, seed=3)
    kept = MelAudioCrops(filelist, corpus, AudioParams(), 4096, seed=3, keep_in_memory=True)
    for epoch in (0, 1):  # a new epoch draws new crops of the clips already in memory
        read_each_time.set_epoch(epoch)
        kept.set_epoch(epoch)
        for index in range(len(kept)):
            for ours, theirs in zip(kept[index], read_each_time[index]):
                assert torch.equal(ours, theirs)
    shutil.rmtree(corpus / "wavs")  # nothing is read again
    kept.set_epoch(2)
    assert kept[0][1].shape == (4096,)
