"""Tacotron 2's dataset: with --keep-in-memory the same items as computing each mel every epoch, each computed once;
with --final-punctuation-dropout a share of items read without their final marks."""
import shutil

import pytest
import torch

from common.arguments import config_from_args
from common.audio import AudioParams
from common.text import TextProcessor
from tacotron2.arg_parser import Tacotron2TrainingSettings
from tacotron2.data_function import TextMelDataset
from tacotron2.recipe import build_data
from train import parse_run_args


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


def test_final_punctuation_dropout_reads_a_share_of_items_without_their_final_marks(synthetic_corpus):
    """--final-punctuation-dropout: items drawn from (seed, epoch, item) alone lose the marks that end them, mel
    unchanged; the others, and every item at 0 (the default), are read as encoded."""
    text = TextProcessor()
    kept = TextMelDataset(synthetic_corpus.train_filelist, synthetic_corpus.dataset_dir, text, AudioParams())
    dropping = TextMelDataset(synthetic_corpus.train_filelist, synthetic_corpus.dataset_dir, text, AudioParams(),
                              final_punctuation_dropout=0.5, seed=7)

    def read_without_marks(dataset):
        return [index for index in range(len(dataset)) if dataset[index][0].size(0) < dataset.token_ids[index].size(0)]

    first_epoch = read_without_marks(dropping)
    assert 0 < len(first_epoch) < len(dropping) and not read_without_marks(kept)
    for index in first_epoch:
        ids, mel = dropping[index]
        assert text.symbols[int(dropping.token_ids[index][-1])] in ".!?"  # every corpus sentence ends in one
        assert ids.tolist() == text.without_final_mark(dropping.token_ids[index].tolist())
        assert text.symbols[int(ids[-1])] not in ".!? " and torch.equal(mel, kept[index][1])
    assert read_without_marks(dropping) == first_epoch  # the same items, however often they are read
    dropping.set_epoch(1)
    assert read_without_marks(dropping) != first_epoch  # drawn anew each epoch


def test_final_punctuation_dropout_is_a_training_flag_for_the_training_split_only(synthetic_corpus):
    corpus = ["-m", "Tacotron2", "-o", "unused", "-lr", "1e-3", "--epochs", "1",
              "-d", str(synthetic_corpus.dataset_dir),
              "--training-files", str(synthetic_corpus.train_filelist),
              "--validation-files", str(synthetic_corpus.val_filelist),
              "--seed", "1", "--num-workers", "0"]
    assert parse_run_args(corpus).final_punctuation_dropout == 0.0
    args = parse_run_args(corpus + ["--final-punctuation-dropout", "0.3"])
    data = build_data(config_from_args(Tacotron2TrainingSettings, args), {})
    assert (data.train.final_punctuation_dropout, data.train.seed) == (0.3, 1)
    assert data.validation.final_punctuation_dropout == 0.0
    with pytest.raises(SystemExit):
        parse_run_args(corpus + ["--final-punctuation-dropout", "1.5"])
