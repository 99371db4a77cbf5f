"""wav2vec 2.0's data: manifests and labels checked at start-up (every mistake named by file and line), the audio
dataset, and the collate's crops, padding, masks and negatives, which are a pure function of (seed, epoch, indices)
whatever the worker process, and per sub-batch under --num-concat-batches."""
import pickle

import numpy as np
import pytest
import soundfile
import torch
from scipy.signal import resample_poly
from torch.utils.data import DataLoader

from common.audio import load_wav
from common.errors import UserError, UserFileNotFoundError
from common.recipe import BatchingContext
from wav2vec2.arg_parser import Wav2Vec2TrainingSettings
from wav2vec2.data_function import (AudioDataset, Collater, ConcatBatches, batch_rng, label_path, max_tokens_batches,
                                    random_phase, read_labels, read_manifest)
from wav2vec2.dictionary import Dictionary, words_to_letters
from wav2vec2.masking import compute_mask_indices, conv_output_lengths, sample_negative_indices
from wav2vec2.model import model_config_from

RATE = 16000
CONV = "[(32, 10, 5)] + [(32, 3, 2)] * 2 + [(32, 2, 2)]"  # stride 80: 200 frames a second
CONV_LAYERS = [(32, 10, 5), (32, 3, 2), (32, 3, 2), (32, 2, 2)]
CONFIG = model_config_from(dict(conv_feature_layers=CONV, encoder_embed_dim=32, encoder_attention_heads=2,
                                conv_pos_groups=4, final_dim=16, num_negatives=5, mask_prob=0.65, mask_length=10))
FINETUNE_CONFIG = dict(CONFIG, mask_prob=0.5, mask_channel_prob=0.25, mask_channel_length=4)
LENGTHS = [6000, 9000, 7500, 12000, 8000, 10400, 6800, 11000]
WORDS = ["HI", "THE CAT", "A DOG RAN", "IT'S HERE", "NO", "YES WE CAN", "OK", "THE END"]


def write_corpus(folder, name="train", lengths=LENGTHS, words=WORDS, rate=RATE):
    """Noise clips at `rate`, a manifest with a relative root, its .ltr and .wrd, and dict.ltr.txt."""
    (folder / "audio").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(len(lengths))
    rows = []
    for index, length in enumerate(lengths):
        relative = f"audio/{name}_{index}.wav"
        soundfile.write(str(folder / relative), (0.1 * rng.standard_normal(length)).clip(-1, 1), rate,
                        subtype="PCM_16")
        rows.append(f"{relative}\t{length}")
    (folder / f"{name}.tsv").write_text(".\n" + "\n".join(rows) + "\n")
    (folder / f"{name}.wrd").write_text("".join(f"{w}\n" for w in words[:len(lengths)]))
    (folder / f"{name}.ltr").write_text("".join(f"{words_to_letters(w)}\n" for w in words[:len(lengths)]))
    (folder / "dict.ltr.txt").write_text("".join(f"{s} 1\n" for s in "| E T A O N I H S R D L U M W C F G Y P B V K "
                                                 "' X J Q Z".split()))
    return folder / f"{name}.tsv"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("w2v_corpus"))


def read_audio(path):
    return torch.from_numpy(soundfile.read(str(path), dtype="float32")[0])


def frames(samples):
    return int(conv_output_lengths(torch.tensor([samples]), CONV_LAYERS)[0])


# ---------------------------------------------------------------------------------------------------------------
# Manifests and labels



def batching(**flags) -> Wav2Vec2TrainingSettings:
    """A run's settings with these batching flags."""
    return Wav2Vec2TrainingSettings(output="unused", learning_rate=1e-4, max_updates=1, **flags)

def test_a_manifest_lists_root_relative_paths_and_sample_counts(corpus):
    manifest = read_manifest(corpus, RATE)
    assert manifest.root == corpus.parent / "."  # a relative root is taken from the manifest's folder
    assert manifest.entries[1] == ("audio/train_1.wav", 9000) and len(manifest) == len(LENGTHS)
    assert manifest.line_numbers[:2] == [2, 3] and manifest.source(1) == f"{corpus}:3"
    assert manifest.sampling_rates == [RATE] * len(LENGTHS)
    assert manifest.audio_path(1).is_file()


def write_manifest(folder, text):
    path = folder / "bad.tsv"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, message", [
    ("", r"bad.tsv: empty manifest: its first line must be the root folder"),
    ("audio/train_0.wav\t6000\n", r"bad.tsv:1: the first line must be the root folder of the audio, found an entry"),
    (".\naudio/train_0.wav 6000\n", r"bad.tsv:2: expected 'relative/path<TAB>num_samples', found 'audio/train_0.wav "),
    (".\naudio/train_0.wav\t6000\naudio/train_1.wav\tmany\n", r"bad.tsv:3: expected 'relative/path<TAB>num_samples'"),
    (".\n\n", r"bad.tsv: the manifest lists no audio files"),
    (".\naudio/train_0.wav\t6000\n\naudio/missing.wav\t100\n", r"bad.tsv:4: audio file not found: .*missing.wav"),
    (".\naudio/train_1.wav\t9001\n", r"bad.tsv:2: .*train_1.wav has 9000 samples, the manifest says 9001"),
    ("nowhere\naudio/train_1.wav\t9000\n", r"bad.tsv:1: the audio root folder .*nowhere does not exist"),
    (".\naudio/notes.wav\t10\n", r"bad.tsv:2: cannot read audio file .*notes.wav"),
])
def test_manifest_mistakes_are_named_by_file_and_line(corpus, text, message):
    (corpus.parent / "audio" / "notes.wav").write_text("not audio")
    with pytest.raises(UserError, match=message):
        read_manifest(write_manifest(corpus.parent, text), RATE)


def test_a_missing_manifest_and_audio_at_another_rate_are_refused_unless_resampling(tmp_path):
    with pytest.raises(UserFileNotFoundError, match="manifest not found: .*none.tsv"):
        read_manifest(tmp_path / "none.tsv", RATE)
    manifest_path = write_corpus(tmp_path, lengths=[2205, 4410], rate=22050)
    with pytest.raises(UserError, match=r"train.tsv:2: .*train_0.wav is at 22050 Hz, expected 16000 Hz "
                                        r"\(resample the corpus, or pass --resample"):
        read_manifest(manifest_path, RATE)
    assert read_manifest(manifest_path, RATE, resample=True).sampling_rates == [22050, 22050]
    assert read_manifest(manifest_path).sampling_rates == [22050, 22050]  # no rate asked for: none checked

    dataset = AudioDataset(manifest_path, RATE, resample=True)
    assert dataset.sizes.tolist() == [1600, 3200]
    original = soundfile.read(str(tmp_path / "audio" / "train_1.wav"), dtype="float32")[0]
    expected = resample_poly(original, 320, 441)
    np.testing.assert_allclose(dataset[1].source.numpy(), expected, atol=1e-6)
    assert dataset[1].source.dtype == torch.float32 and len(dataset[1].source) == 3200


def test_labels_sit_beside_the_manifest_and_must_match_it(corpus, tmp_path):
    manifest = read_manifest(corpus, RATE)
    dictionary = Dictionary.load(corpus.parent / "dict.ltr.txt")
    labels = read_labels(manifest, label_path(manifest, "ltr"))
    assert labels.path == corpus.with_suffix(".ltr") and labels.lines[1] == "T H E | C A T |"
    assert read_labels(manifest, label_path(manifest, "wrd")).lines[1] == "THE CAT"

    short = tmp_path / "short.ltr"
    short.write_text("H I |\n")
    with pytest.raises(UserError, match=rf"short.ltr has 1 lines but {corpus} lists 8 audio files"):
        read_labels(manifest, short)
    with pytest.raises(UserFileNotFoundError, match="label file not found: .*train.phn"):
        read_labels(manifest, label_path(manifest, "phn"))
    odd = tmp_path / "odd.ltr"
    odd.write_text("".join(f"{words_to_letters(w)}\n" for w in WORDS[:5] + ["NAÏVE", "OK", "END"]))
    with pytest.raises(UserError, match=r"odd.ltr:6: symbol 'Ï' is not in the dictionary .*dict.ltr.txt"):
        AudioDataset(manifest, RATE, labels=odd, dictionary=dictionary)


# ---------------------------------------------------------------------------------------------------------------
# The dataset


def test_items_are_the_files_samples_with_their_targets(corpus):
    dictionary = Dictionary.load(corpus.parent / "dict.ltr.txt")
    dataset = AudioDataset(corpus, RATE, labels=corpus.with_suffix(".ltr"), dictionary=dictionary)
    item = dataset[2]
    index, waveform = item[0], item[1]
    assert index == 2 and waveform.dtype == torch.float32 and waveform.shape == (7500,)
    assert torch.equal(waveform, read_audio(corpus.parent / "audio/train_2.wav"))
    assert dictionary.decode(item.target.tolist()) == "A DOG RAN"
    assert dataset.sizes.tolist() == LENGTHS
    assert dataset[(3, 1)].sub_batch == 1 and dataset[(3, 1)].index == 3

    normalized = AudioDataset(corpus, RATE, normalize=True)[2].source
    expected = (waveform - waveform.mean()) / torch.sqrt(waveform.var(unbiased=False) + 1e-5)
    torch.testing.assert_close(normalized, expected, atol=1e-5, rtol=1e-5)


def test_stereo_files_are_averaged(tmp_path):
    (tmp_path / "audio").mkdir()
    stereo = np.stack([np.full(1000, 0.5), np.full(1000, -0.25)], axis=1)
    soundfile.write(str(tmp_path / "audio" / "s.wav"), stereo, RATE, subtype="FLOAT")
    (tmp_path / "s.tsv").write_text(f"{tmp_path}\naudio/s.wav\t1000\n")  # an absolute root, as fairseq writes
    source = AudioDataset(tmp_path / "s.tsv", RATE)[0].source
    assert torch.allclose(source, torch.full((1000,), 0.125))


def test_single_files_of_any_rate_load_for_inference_and_mistakes_name_them(tmp_path):
    path = tmp_path / "voice.flac"
    samples = (0.1 * np.random.default_rng(0).standard_normal(4410)).clip(-1, 1)
    soundfile.write(str(path), samples, 44100, format="FLAC")
    audio = load_wav(path, RATE, resample=True)
    assert audio.dtype == torch.float32 and audio.shape == (1600,)
    with pytest.raises(UserError, match=r"voice.flac is at 44100 Hz, expected 16000 Hz"):
        load_wav(path, RATE, resample_flag="--resample")
    with pytest.raises(UserFileNotFoundError, match=r"list.tsv:3: audio file not found: .*none.wav"):
        load_wav(tmp_path / "none.wav", RATE, source="list.tsv:3")
    (tmp_path / "text.wav").write_text("not audio")
    with pytest.raises(UserError, match=r"cannot read audio file .*text.wav"):
        load_wav(tmp_path / "text.wav", RATE)
    soundfile.write(str(tmp_path / "empty.wav"), np.zeros(0), RATE)
    with pytest.raises(UserError, match=r"empty.wav holds no samples"):
        load_wav(tmp_path / "empty.wav", RATE)


def test_short_items_are_left_out_with_their_labels_and_counted(corpus, capsys):
    dictionary = Dictionary.load(corpus.parent / "dict.ltr.txt")
    dataset = AudioDataset(corpus, RATE, labels=corpus.with_suffix(".ltr"), dictionary=dictionary,
                           min_sample_size=8000)
    assert f"{corpus}: left out 3 of 8 utterances shorter than --min-sample-size 8000" in capsys.readouterr().err
    kept = [i for i, n in enumerate(LENGTHS) if n >= 8000]
    assert len(dataset) == 5 and dataset.sizes.tolist() == [LENGTHS[i] for i in kept]
    for position, manifest_index in enumerate(kept):
        assert dictionary.decode(dataset[position].target.tolist()) == WORDS[manifest_index]
        assert torch.equal(dataset[position].source, read_audio(corpus.parent / f"audio/train_{manifest_index}.wav"))
        assert dataset.source(position) == f"{corpus}:{manifest_index + 2}"
    with pytest.raises(UserError, match="every utterance is shorter than --min-sample-size 99999"):
        AudioDataset(corpus, RATE, min_sample_size=99999)


# ---------------------------------------------------------------------------------------------------------------
# Pre-training batches


def test_pretraining_batches_crop_to_the_shortest_and_carry_masks_and_negatives(corpus):
    dataset = AudioDataset(corpus, RATE, seed=11, max_sample_size=10000)
    dataset.set_epoch(3)
    indices = [1, 3, 4]
    collate = Collater(CONFIG, mode="pretrain")
    batch = collate([dataset[i] for i in indices])

    crop = 8000  # the shortest of 9000, 12000, 8000
    num_frames = frames(crop)
    assert batch.source.shape == (3, crop) and batch.padding_mask is None and batch.ids == indices
    assert batch.num_samples == 3 * crop and batch.targets is None and batch.channel_mask is None

    # The documented draws, recomputed: one generator from (seed, epoch, *indices): crop offsets, masks, negatives.
    rng = np.random.default_rng([11, 3, *indices])
    for row, index in enumerate(indices):
        whole = read_audio(corpus.parent / f"audio/train_{index}.wav")
        start = int(rng.integers(0, len(whole) - crop + 1))
        assert torch.equal(batch.source[row], whole[start:start + crop])
    mask = compute_mask_indices([num_frames] * 3, num_frames, 0.65, 10, rng, min_masks=2)
    negatives = sample_negative_indices(mask, 5, rng)
    assert torch.equal(batch.mask_indices, torch.from_numpy(mask))
    assert torch.equal(batch.negative_indices, negatives)

    counts = batch.mask_indices.sum(1)
    assert batch.mask_indices.shape == (3, num_frames) and (counts == counts[0]).all()
    assert 0.3 < counts[0] / num_frames < 0.7
    assert batch.negative_indices.shape == (int(counts.sum()), 5)
    row_of = torch.repeat_interleave(torch.arange(3), counts)  # negatives are masked frames of the same row
    assert torch.equal(row_of[batch.negative_indices], row_of[:, None].expand(-1, 5))
    assert not (batch.negative_indices == torch.arange(len(row_of))[:, None]).any()

    capped = collate([dataset[i] for i in [3, 5]])  # shortest 10400, capped at max_sample_size
    assert capped.source.shape == (2, 10000)


def test_draws_depend_on_seed_epoch_and_indices_only(corpus):
    dataset = AudioDataset(corpus, RATE, seed=11)
    collate = Collater(CONFIG, mode="pretrain")
    first = collate([dataset[i] for i in [0, 2]])
    again = pickle.loads(pickle.dumps(collate))([dataset[i] for i in [0, 2]])
    assert torch.equal(first.source, again.source) and torch.equal(first.mask_indices, again.mask_indices)
    assert torch.equal(first.negative_indices, again.negative_indices)
    dataset.set_epoch(1)
    other_epoch = collate([dataset[i] for i in [0, 2]])
    assert not torch.equal(first.mask_indices, other_epoch.mask_indices)
    other_seed = collate([AudioDataset(corpus, RATE, seed=12)[i] for i in [0, 2]])
    assert not torch.equal(first.mask_indices, other_seed.mask_indices)

    validation = AudioDataset(corpus, RATE, seed=11, training=False)
    validation.set_epoch(5)  # a validation dataset always draws as epoch 0: the same masks at every validation
    assert torch.equal(collate([validation[i] for i in [0, 2]]).mask_indices, first.mask_indices)
    with pytest.raises(ValueError, match="a batch mixes items of datasets or epochs"):
        collate([dataset[0], validation[2]])


def test_worker_processes_and_a_resumed_epoch_give_the_same_batches(corpus):
    args = batching(max_tokens=24000, num_concat_batches=1)
    dataset = AudioDataset(corpus, RATE, max_sample_size=10000, seed=3)
    collate = Collater(CONFIG, mode="pretrain")

    def epoch_batches(num_workers, epoch, skip=0):
        sampler = max_tokens_batches(args, dataset, BatchingContext(training=True, seed=3, rank=0, world_size=1))
        sampler.set_epoch(epoch, skip_batches=skip)
        dataset.set_epoch(epoch)
        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=num_workers)
        return list(loader)

    in_process = epoch_batches(0, epoch=2)
    in_workers = epoch_batches(2, epoch=2)
    resumed = epoch_batches(0, epoch=2, skip=2)
    assert len(in_process) >= 3
    for batch, other in zip(in_process, in_workers):
        assert batch.ids == other.ids and torch.equal(batch.source, other.source)
        assert torch.equal(batch.mask_indices, other.mask_indices)
        assert torch.equal(batch.negative_indices, other.negative_indices)
    for batch, other in zip(in_process[2:], resumed, strict=True):
        assert batch.ids == other.ids and torch.equal(batch.mask_indices, other.mask_indices)
    for batch in in_process:  # the budget holds for the capped lengths
        assert len(batch.ids) * max(min(LENGTHS[i], 10000) for i in batch.ids) <= 24000


def test_concatenated_batches_draw_as_separate_batches(corpus, tmp_path):
    # Every utterance is longer than max_sample_size, so each batch alone and the group are cropped alike.
    manifest = write_corpus(tmp_path, lengths=[9000, 9600, 8800, 10000, 9200, 12000, 8400, 11000])
    dataset = AudioDataset(manifest, RATE, max_sample_size=8000, seed=7)
    dataset.set_epoch(4)
    collate = Collater(CONFIG, mode="pretrain")
    args = batching(max_tokens=16000, num_concat_batches=2)
    sampler = max_tokens_batches(args, dataset, BatchingContext(training=True, seed=7, rank=0, world_size=1))
    assert isinstance(sampler, ConcatBatches)
    sampler.set_epoch(4)
    plain = sampler.batches
    separate = list(plain)
    groups = list(sampler)
    assert len(separate) == 4 and len(groups) == len(sampler) == 2
    assert groups[0] == [(i, 0) for i in separate[0]] + [(i, 1) for i in separate[1]]

    for group_number, group in enumerate(groups):
        together = collate([dataset[key] for key in group])
        alone = [collate([dataset[i] for i in separate[2 * group_number + k]]) for k in range(2)]
        assert together.ids == alone[0].ids + alone[1].ids
        assert torch.equal(together.source, torch.cat([b.source for b in alone]))
        assert torch.equal(together.mask_indices, torch.cat([b.mask_indices for b in alone]))
        offset = int(alone[0].mask_indices.sum())
        assert torch.equal(together.negative_indices,
                           torch.cat([alone[0].negative_indices, alone[1].negative_indices + offset]))

    sampler.set_epoch(4, skip_batches=1)  # resuming skips whole groups
    assert len(sampler) == 1 and list(sampler) == groups[1:]
    with pytest.raises(UserError, match="--num-concat-batches 5: each rank has only 4 batches"):
        max_tokens_batches(batching(max_tokens=16000, num_concat_batches=5), dataset,
                           BatchingContext(training=True, seed=7, rank=0, world_size=1))
    validation = max_tokens_batches(args, dataset, BatchingContext(training=False, seed=7, rank=0, world_size=1))
    assert not isinstance(validation, ConcatBatches)


def test_utterances_too_short_to_mask_are_a_user_error(tmp_path):
    dataset = AudioDataset(write_corpus(tmp_path, lengths=[60, 6000]), RATE)  # 60 samples: 1 frame
    with pytest.raises(UserError, match=r"utterances \[0, 1\] cropped to 60 samples \(1 frames\) are too short "
                                        r"to mask.*--min-sample-size"):
        Collater(CONFIG, mode="pretrain")([dataset[0], dataset[1]])


# ---------------------------------------------------------------------------------------------------------------
# Fine-tuning batches


def test_finetuning_batches_pad_to_the_longest_with_targets_and_masks(corpus):
    dictionary = Dictionary.load(corpus.parent / "dict.ltr.txt")
    dataset = AudioDataset(corpus, RATE, labels=corpus.with_suffix(".ltr"), dictionary=dictionary,
                           max_sample_size=7000, seed=5)
    assert dataset.batching_lengths() == LENGTHS  # labelled data is never cropped
    dataset.set_epoch(2)
    indices = [0, 3, 2]
    collate = Collater(FINETUNE_CONFIG, mode="finetune")
    batch = collate([dataset[i] for i in indices])

    lengths = [LENGTHS[i] for i in indices]
    assert batch.source.shape == (3, 12000) and batch.num_samples == sum(lengths)
    for row, (index, length) in enumerate(zip(indices, lengths)):
        assert torch.equal(batch.source[row, :length], read_audio(corpus.parent / f"audio/train_{index}.wav"))
        assert not batch.source[row, length:].any()
        assert not batch.padding_mask[row, :length].any() and batch.padding_mask[row, length:].all()
    assert batch.targets.shape == (3, len(words_to_letters("A DOG RAN").split()))
    for row, index in enumerate(indices):
        length = int(batch.target_lengths[row])
        assert dictionary.decode(batch.targets[row, :length].tolist()) == WORDS[index]
        assert (batch.targets[row, length:] == dictionary.pad_index).all()

    frame_lengths = conv_output_lengths(torch.tensor(lengths), CONV_LAYERS).tolist()
    num_frames = frames(12000)
    rng = np.random.default_rng([5, 2, *indices])
    time_mask = compute_mask_indices(frame_lengths, num_frames, 0.5, 10, rng, min_masks=2)
    channel_mask = compute_mask_indices([32] * 3, 32, 0.25, 4, rng)
    assert torch.equal(batch.mask_indices, torch.from_numpy(time_mask))
    assert torch.equal(batch.channel_mask, torch.from_numpy(channel_mask))
    assert batch.channel_mask.shape == (3, 32) and batch.channel_mask.any()
    for row, valid in enumerate(frame_lengths):  # only frames of the utterance itself are masked
        assert batch.mask_indices[row, :valid].any() and not batch.mask_indices[row, valid:].any()
    assert batch.negative_indices is None

    validation = AudioDataset(corpus, RATE, labels=corpus.with_suffix(".ltr"), dictionary=dictionary,
                              seed=5, training=False)
    plain = collate([validation[i] for i in indices])
    assert plain.mask_indices is None and plain.channel_mask is None and torch.equal(plain.source, batch.source)
    masked = Collater(FINETUNE_CONFIG, mode="finetune", mask_in_eval=True)([validation[i] for i in indices])
    expected = compute_mask_indices(frame_lengths, num_frames, 0.5, 10, batch_rng(5, 0, indices), min_masks=2)
    assert torch.equal(masked.mask_indices, torch.from_numpy(expected))

    no_masks = Collater(dict(FINETUNE_CONFIG, mask_prob=0.0, mask_channel_prob=0.0), mode="finetune")
    unmasked = no_masks([dataset[i] for i in indices])
    assert unmasked.mask_indices is None and unmasked.channel_mask is None
    equal = collate([dataset[i] for i in [1, 1]])
    assert equal.padding_mask is None  # nothing padded


def test_random_phase_keeps_the_magnitude_spectrum_and_changes_the_waveform():
    # A click train, as a voice's glottal pulses; zeros after it hold the filters' ringing, so the two whole spectra
    # compare exactly.
    clicks = torch.zeros(20000)
    clicks[:4000:100] = 1.0
    changed = random_phase(clicks, np.random.default_rng(3))
    assert changed.shape == clicks.shape and changed.dtype == torch.float32
    before, after = np.abs(np.fft.rfft(clicks.numpy())), np.abs(np.fft.rfft(changed.numpy()))
    assert np.abs(after - before).max() < 1e-4 * before.max()
    assert abs(np.corrcoef(clicks.numpy(), changed.numpy())[0, 1]) < 0.5  # another waveform
    assert torch.equal(changed, random_phase(clicks, np.random.default_rng(3)))  # a function of the generator
    assert not torch.allclose(changed, random_phase(clicks, np.random.default_rng(4)))


def test_random_phase_in_fine_tuning_changes_the_training_audio_alone_and_not_the_masks(corpus):
    dictionary = Dictionary.load(corpus.parent / "dict.ltr.txt")
    dataset = AudioDataset(corpus, RATE, labels=corpus.with_suffix(".ltr"), dictionary=dictionary, seed=5)
    indices = [0, 3, 2, 5]
    plain = Collater(FINETUNE_CONFIG, mode="finetune")([dataset[i] for i in indices])
    every = Collater(FINETUNE_CONFIG, mode="finetune", random_phase_prob=1.0)([dataset[i] for i in indices])
    assert torch.equal(every.mask_indices, plain.mask_indices) and torch.equal(every.channel_mask, plain.channel_mask)
    assert torch.equal(every.padding_mask, plain.padding_mask) and torch.equal(every.targets, plain.targets)
    for row, index in enumerate(indices):
        length = LENGTHS[index]
        assert not torch.allclose(every.source[row, :length], plain.source[row, :length])
        spectrum = np.abs(np.fft.rfft(every.source[row, :length].numpy()))
        assert spectrum.sum() == pytest.approx(np.abs(np.fft.rfft(plain.source[row, :length].numpy())).sum(),
                                               rel=0.05)
    again = Collater(FINETUNE_CONFIG, mode="finetune", random_phase_prob=1.0)([dataset[i] for i in indices])
    assert torch.equal(again.source, every.source)  # drawn from (seed, epoch, indices), as every draw
    everyone = range(len(LENGTHS))
    half = Collater(FINETUNE_CONFIG, mode="finetune", random_phase_prob=0.5)([dataset[i] for i in everyone])
    as_they_are = Collater(FINETUNE_CONFIG, mode="finetune")([dataset[i] for i in everyone])
    changed = [not torch.equal(half.source[row], as_they_are.source[row]) for row in everyone]
    assert 0 < sum(changed) < len(changed)

    validation = AudioDataset(corpus, RATE, labels=corpus.with_suffix(".ltr"), dictionary=dictionary, seed=5,
                              training=False)
    heard = Collater(FINETUNE_CONFIG, mode="finetune", random_phase_prob=1.0)([validation[i] for i in indices])
    assert torch.equal(heard.source, plain.source)  # validation hears the audio as it is

    with pytest.raises(UserError, match=r"--random-phase-prob must be in \[0, 1\], got 1.5"):
        Collater(FINETUNE_CONFIG, mode="finetune", random_phase_prob=1.5)
    with pytest.raises(UserError, match="--random-phase-prob is for fine-tuning"):
        Collater(CONFIG, mode="pretrain", random_phase_prob=0.5)


def test_batches_move_to_a_device_whole(corpus):
    dataset = AudioDataset(corpus, RATE)
    batch = Collater(CONFIG, mode="pretrain")([dataset[0], dataset[1]])
    moved = batch.to(torch.device("cpu"))
    assert moved.ids == [0, 1] and moved.num_samples == batch.num_samples and moved.padding_mask is None
    assert torch.equal(moved.mask_indices, batch.mask_indices) and moved.negative_indices.dtype == torch.long
