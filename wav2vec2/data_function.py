"""wav2vec 2.0's data: fairseq manifests and labels, the audio dataset, and the collate that draws masks and negatives.

A manifest (`train.tsv`) names the audio; its first line is the root folder (a relative root is taken from the
manifest's folder), then one `relative/path<TAB>num_samples` line per utterance. Labels sit beside it with the same
stem: `train.ltr` (letters, "H I | T H E R E |") and `train.wrd` (words), one line per manifest row, and the letter
dictionary is `dict.ltr.txt` (wav2vec2/dictionary.py). Every file's header is read at start-up (soundfile.info, no
decoding), so a missing file, a wrong sample count or a wrong sampling rate fails before training, naming the manifest
line; audio at another rate is resampled only when the user asks for it (--resample).

Batches (`AudioBatch`) are made by `Collater`:
- pre-training: every utterance is cropped to the batch's shortest (capped at --max-sample-size) at a random offset,
  and the batch carries its time masks and negatives (wav2vec2/masking.py), so the loss's item count is known before
  the forward pass;
- fine-tuning: utterances are zero-padded to the longest with a padding mask, and carry their time and channel masks
  and their targets padded with <pad>; with --random-phase-prob, that share of training utterances first goes
  through a random all-pass filter (random_phase: the same magnitude spectrum, another phase).
Every random draw of a batch (crop offsets, then time masks, then channel masks, then negatives, from one generator
in that order) comes from np.random.default_rng([seed, epoch, *indices]) (indices: the batch's dataset indices; seed
and epoch: the dataset's, which its items carry to the collate): it does not depend on worker processes, and a
resumed run redraws the same. The all-pass filters are drawn from a stream of their own, so the masks do not
depend on them. Validation datasets always use epoch 0, so their masks, and the validation loss, are
the same at every validation.

`--num-concat-batches N` forwards N max-tokens batches as one (as NVIDIA's): ConcatBatches yields (index, sub_batch)
pairs, and the collate draws masks and negatives for each sub-batch from its own indices, so their counts and values
are those of N separate batches; the whole group is cropped to its shortest (pre-training) or padded to its longest
(fine-tuning).
"""
from __future__ import annotations

import sys
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import scipy.signal
import soundfile
import torch
from torch.utils.data import Dataset, Sampler

from common.audio import load_wav, resampled_length
from common.errors import UserError, UserFileNotFoundError
from common.recipe import BatchingContext
from common.sampler import MaxTokensBatchSampler, ResumedEpoch
from wav2vec2.arg_parser import Wav2Vec2TrainingSettings
from wav2vec2.dictionary import Dictionary, UnknownSymbolError
from wav2vec2.masking import compute_mask_indices, conv_output_lengths, sample_negative_indices
from wav2vec2.model import parse_conv_feature_layers

PRETRAINING_MIN_MASKS = 2  # fairseq's min_masks for time masks, in pre-training and fine-tuning alike


# ---------------------------------------------------------------------------------------------------------------
# Manifests and labels


@dataclass
class Manifest:
    path: Path
    root: Path
    entries: list[tuple[str, int]]  # (path relative to root, samples as the file holds them)
    line_numbers: list[int]  # the manifest line of each entry, for error messages
    sampling_rates: list[int]  # each file's rate (read at start-up; empty when the audio was not checked)

    def __len__(self) -> int:
        return len(self.entries)

    def audio_path(self, index: int) -> Path:
        return self.root / self.entries[index][0]

    def source(self, index: int) -> str:
        """"<manifest>:<line>", to begin an error message about entry `index`."""
        return f"{self.path}:{self.line_numbers[index]}"


def read_manifest(path: str | Path, sampling_rate: int | None = None, *, resample: bool = False,
                  check_audio: bool = True) -> Manifest:
    """Parse a fairseq `.tsv` manifest. With check_audio, every file's header is read (soundfile.info): it must exist,
    hold the stated number of samples, and be at `sampling_rate` Hz unless `resample`. Mistakes name the file and
    line."""
    path = Path(path)
    if not path.is_file():
        raise UserFileNotFoundError(f"manifest not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read the manifest {path}: {error}") from error
    if not lines or not lines[0].strip():
        raise UserError(f"{path}: empty manifest: its first line must be the root folder of the audio")
    if "\t" in lines[0]:
        raise UserError(f"{path}:1: the first line must be the root folder of the audio, found an entry "
                        f"{lines[0]!r} (is the root line missing?)")
    root = Path(lines[0].strip())
    if not root.is_absolute():
        root = path.parent / root

    entries, line_numbers = [], []
    for line_number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip().isdigit():
            raise UserError(f"{path}:{line_number}: expected 'relative/path<TAB>num_samples', found {line!r}")
        entries.append((fields[0].strip(), int(fields[1])))
        line_numbers.append(line_number)
    if not entries:
        raise UserError(f"{path}: the manifest lists no audio files")
    manifest = Manifest(path, root, entries, line_numbers, [])
    if check_audio:
        if not root.is_dir():
            raise UserFileNotFoundError(f"{path}:1: the audio root folder {root} does not exist")
        manifest.sampling_rates = [_check_audio_header(manifest, index, sampling_rate, resample)
                                   for index in range(len(entries))]
    return manifest


def _check_audio_header(manifest: Manifest, index: int, sampling_rate: int | None, resample: bool) -> int:
    audio_path = manifest.audio_path(index)
    if not audio_path.is_file():
        raise UserFileNotFoundError(f"{manifest.source(index)}: audio file not found: {audio_path}")
    try:
        info = soundfile.info(str(audio_path))
    except Exception as error:  # soundfile raises several types for unreadable files
        raise UserError(f"{manifest.source(index)}: cannot read audio file {audio_path}: {error}") from error
    stated = manifest.entries[index][1]
    if info.frames != stated:
        raise UserError(f"{manifest.source(index)}: {audio_path} has {info.frames} samples, the manifest says "
                        f"{stated} (regenerate the manifest)")
    if sampling_rate is not None and info.samplerate != sampling_rate and not resample:
        raise UserError(f"{manifest.source(index)}: {audio_path} is at {info.samplerate} Hz, expected "
                        f"{sampling_rate} Hz (resample the corpus, or pass --resample to resample as it is read)")
    return int(info.samplerate)


@dataclass
class Labels:
    path: Path
    lines: list[str]  # one per manifest entry

    def source(self, index: int) -> str:
        return f"{self.path}:{index + 1}"


def label_path(manifest: Manifest, extension: str = "ltr") -> Path:
    """The label file beside a manifest: train.tsv -> train.<extension>."""
    return manifest.path.with_suffix("." + extension)


def read_labels(manifest: Manifest, path: str | Path) -> Labels:
    """A label file (`.ltr` or `.wrd`), one line per manifest entry."""
    path = Path(path)
    if not path.is_file():
        raise UserFileNotFoundError(f"label file not found: {path} (the labels of {manifest.path})")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read the label file {path}: {error}") from error
    if len(lines) != len(manifest):
        raise UserError(f"{path} has {len(lines)} lines but {manifest.path} lists {len(manifest)} audio files: "
                        "every utterance needs one label line, in the same order")
    return Labels(path, lines)


def encode_labels(labels: Labels, dictionary: Dictionary) -> list[list[int]]:
    """Every `.ltr` line as dictionary indices; an unknown letter names the file, line and symbol."""
    encoded = []
    for index, line in enumerate(labels.lines):
        try:
            encoded.append(dictionary.encode_letters(line))
        except UnknownSymbolError as error:
            raise UserError(f"{labels.source(index)}: symbol {error.symbol!r} is not in the dictionary "
                            f"{dictionary.source}") from None
    return encoded


# ---------------------------------------------------------------------------------------------------------------
# The dataset


class AudioItem(NamedTuple):
    """An utterance, and what the collate needs to know of its dataset: the seed and epoch of its random draws, and
    the pre-training crop's cap."""
    index: int  # in the dataset
    source: torch.Tensor  # (samples,) float32
    target: torch.Tensor | None  # (letters,) long, or None without labels
    epoch: int  # the epoch whose random draws the collate makes (always 0 for a validation dataset)
    sub_batch: int  # which of --num-concat-batches batches it came in (0 without concatenation)
    training: bool  # False: a validation or inference item (fine-tuning masks only with Collater's mask_in_eval)
    seed: int
    max_sample_size: int | None  # pre-training crops to at most this many samples


class AudioDataset(Dataset):
    """The utterances of a manifest as float32 waveforms at `sampling_rate`, with their letter targets when `labels`.

    Items shorter than `min_sample_size` (after resampling) are left out at start-up, with their labels. `sizes` are
    the kept items' lengths; `batching_lengths()` what a max-tokens batch of them costs: capped at
    `max_sample_size` (the pre-training crop) for an unlabelled dataset, the whole length for a labelled one
    (fine-tuning batches pad whole utterances). `seed` and the epoch (set_epoch) seed the collate's random draws;
    the items carry them, and max_sample_size, to it.
    A validation (or inference) dataset is made with training=False: its random draws always use epoch 0.
    """

    def __init__(self, manifest: Manifest | str | Path, sampling_rate: int, *,
                 labels: Labels | str | Path | None = None, dictionary: Dictionary | None = None,
                 min_sample_size: int | None = None, max_sample_size: int | None = None, normalize: bool = False,
                 resample: bool = False, seed: int = 0, training: bool = True):
        if not isinstance(manifest, Manifest):
            manifest = read_manifest(manifest, sampling_rate, resample=resample)
        elif not manifest.sampling_rates:
            raise ValueError(f"{manifest.path}: read it with check_audio=True to make a dataset of it")
        if labels is not None and not isinstance(labels, Labels):
            labels = read_labels(manifest, labels)
        if labels is not None and dictionary is None:
            raise ValueError("labels need the dictionary that encodes them")
        self.manifest, self.sampling_rate = manifest, sampling_rate
        self.normalize, self.resample, self.training = normalize, resample, training
        self.max_sample_size, self.seed = max_sample_size, seed
        self.labels, self.dictionary = labels, dictionary
        targets = encode_labels(labels, dictionary) if labels is not None else None

        sizes = [resampled_length(count, rate, sampling_rate)
                 for (_, count), rate in zip(manifest.entries, manifest.sampling_rates)]
        self.manifest_indices = [index for index, size in enumerate(sizes)
                                 if min_sample_size is None or size >= min_sample_size]
        if len(self.manifest_indices) < len(sizes):
            dropped = len(sizes) - len(self.manifest_indices)
            print(f"{manifest.path}: left out {dropped} of {len(sizes)} utterances shorter than --min-sample-size "
                  f"{min_sample_size} samples", file=sys.stderr)
            if not self.manifest_indices:
                raise UserError(f"{manifest.path}: every utterance is shorter than --min-sample-size "
                                f"{min_sample_size}; lower it")
        self.sizes = np.array([sizes[index] for index in self.manifest_indices], dtype=np.int64)
        self.targets = None if targets is None else [targets[index] for index in self.manifest_indices]
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.manifest_indices)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batching_lengths(self) -> list[int]:
        if self.max_sample_size is None or self.labels is not None:  # labelled: fine-tuning, never cropped
            return self.sizes.tolist()
        return np.minimum(self.sizes, self.max_sample_size).tolist()

    def source(self, index: int) -> str:
        """"<manifest>:<line>" of dataset item `index`."""
        return self.manifest.source(self.manifest_indices[index])

    def audio_path(self, index: int) -> Path:
        return self.manifest.audio_path(self.manifest_indices[index])

    def load_audio(self, index: int) -> torch.Tensor:
        return load_wav(self.audio_path(index), self.sampling_rate, source=self.source(index), mix_to_mono=True,
                        resample=self.resample, resample_flag="--resample", normalize=self.normalize)

    def __getitem__(self, key: int | tuple[int, int]) -> AudioItem:
        index, sub_batch = (key, 0) if isinstance(key, (int, np.integer)) else key
        index = int(index)
        target = None if self.targets is None else torch.tensor(self.targets[index], dtype=torch.long)
        return AudioItem(index, self.load_audio(index), target, self.epoch if self.training else 0, int(sub_batch),
                         self.training, self.seed, self.max_sample_size)


# ---------------------------------------------------------------------------------------------------------------
# Batches


@dataclass
class AudioBatch:
    source: torch.Tensor  # (B, L) float32
    padding_mask: torch.Tensor | None  # (B, L) bool, True = padding (fine-tuning batches with unequal lengths)
    mask_indices: torch.Tensor | None  # (B, T) bool, the masked frames
    negative_indices: torch.Tensor | None  # (N, K) long: indices into the flat list of masked frames (pre-training)
    channel_mask: torch.Tensor | None  # (B, C) bool, the masked channels (fine-tuning)
    targets: torch.Tensor | None  # (B, S) long, padded with <pad>
    target_lengths: torch.Tensor | None  # (B,) long
    ids: list[int]  # dataset indices, in batch order
    num_samples: int  # audio samples that are not padding
    # Seeds the model's own random draws on this batch (dropout, LayerDrop, Gumbel noise; see wav2vec2/recipe.py),
    # so that they too depend on the batch alone, not on the rank or the worker that runs it.
    noise_seed: int = 0

    TENSORS = ("source", "padding_mask", "mask_indices", "negative_indices", "channel_mask", "targets",
               "target_lengths")

    def _map_tensors(self, function) -> "AudioBatch":
        return dataclasses.replace(self, **{name: None if getattr(self, name) is None else function(getattr(self, name))
                                            for name in self.TENSORS})

    def to(self, device: torch.device) -> "AudioBatch":
        return self._map_tensors(lambda tensor: tensor.to(device, non_blocking=True))

    def pin_memory(self) -> "AudioBatch":  # called by DataLoader(pin_memory=True)
        return self._map_tensors(lambda tensor: tensor.pin_memory())


def batch_to_device(batch: AudioBatch, device: torch.device) -> AudioBatch:
    return batch.to(device)


def batch_rng(seed: int, epoch: int, indices: Sequence[int]) -> np.random.Generator:
    """The generator of every random draw of the (sub-)batch of these dataset indices."""
    return np.random.default_rng([seed, epoch, *(int(index) for index in indices)])


def _sub_batches(items: Sequence[AudioItem]) -> list[list[int]]:
    """Positions of the items of each sub-batch, in order (consecutive items with the same sub_batch number)."""
    groups: list[list[int]] = []
    for position, item in enumerate(items):
        if not groups or items[groups[-1][0]].sub_batch != item.sub_batch:
            groups.append([])
        groups[-1].append(position)
    return groups


def random_phase(waveform: torch.Tensor, rng: np.random.Generator, sections: int = 4) -> torch.Tensor:
    """`waveform` through `sections` second-order all-pass filters, each with a random pole (radius 0.5-0.95, any
    angle), and its polarity flipped half the time: the magnitude spectrum stays, the phase and so the waveform's
    shape change. A listener hardly hears the difference; a recognizer that reads raw samples can learn one voice's
    pulse shape instead of its spectrum, and then mishears audio whose phase comes from elsewhere (another glottal
    source, or a vocoder's phase retrieval such as Griffin-Lim)."""
    radius = rng.uniform(0.5, 0.95, sections)
    angle = rng.uniform(0.0, np.pi, sections)
    a1, a2 = -2.0 * radius * np.cos(angle), radius ** 2
    ones = np.ones(sections)
    # Each section is (a2 + a1 z^-1 + z^-2) / (1 + a1 z^-1 + a2 z^-2): its numerator is its denominator reversed.
    filters = np.stack([a2, a1, ones, ones, a1, a2], axis=1)
    polarity = -1.0 if rng.random() < 0.5 else 1.0
    filtered = scipy.signal.sosfilt(filters, waveform.double().numpy()) * polarity
    return torch.from_numpy(filtered.astype(np.float32))


class Collater:
    """Items -> AudioBatch (see the module's docstring). Picklable, so DataLoader workers can run it.

    `config` is the model configuration (wav2vec2/model.py's keys): conv_feature_layers, mask_prob, mask_length,
    num_negatives, mask_channel_prob, mask_channel_length and encoder_embed_dim are read from it.
    The seed and epoch of the draws and the crop's cap come with the items, from their dataset.
    mode "pretrain": crop to the shortest (capped at max_sample_size), time masks (min_masks 2) and num_negatives
    negatives per masked frame, in training and validation alike (the loss needs them).
    mode "finetune": pad to the longest; time masks (min_masks 2) when mask_prob > 0 and channel masks over the
    encoder's channels when mask_channel_prob > 0, in training, and in validation and inference only with
    mask_in_eval (by default they see no masks). `random_phase_prob`: the share of training utterances (fine-tuning
    only) that go through random_phase, drawn apart from the masks.
    """

    def __init__(self, config: dict, *, mode: str, pad_index: int = Dictionary.pad_index, mask_in_eval: bool = False,
                 random_phase_prob: float = 0.0):
        if mode not in ("pretrain", "finetune"):
            raise ValueError(f"mode must be 'pretrain' or 'finetune', got {mode!r}")
        if not 0.0 <= random_phase_prob <= 1.0:
            raise UserError(f"--random-phase-prob must be in [0, 1], got {random_phase_prob}")
        if random_phase_prob > 0 and mode != "finetune":
            raise UserError("--random-phase-prob is for fine-tuning (--mode finetune)")
        self.pretraining = mode == "pretrain"
        self.conv_layers = parse_conv_feature_layers(config["conv_feature_layers"])
        self.mask_prob, self.mask_length = float(config["mask_prob"]), int(config["mask_length"])
        self.num_negatives = int(config["num_negatives"])
        self.mask_channel_prob = float(config.get("mask_channel_prob", 0.0))
        self.mask_channel_length = int(config.get("mask_channel_length", 10))
        self.num_channels = int(config["encoder_embed_dim"])
        self.pad_index, self.mask_in_eval = pad_index, mask_in_eval
        self.random_phase_prob = random_phase_prob

    def frames(self, num_samples: Sequence[int] | int) -> torch.Tensor:
        return conv_output_lengths(torch.as_tensor(num_samples), self.conv_layers)

    def __call__(self, items: Sequence[AudioItem]) -> AudioBatch:
        if not items:
            raise ValueError("an empty batch")
        settings = {(item.seed, item.epoch, item.training, item.max_sample_size) for item in items}
        if len(settings) != 1:
            raise ValueError(f"a batch mixes items of datasets or epochs: (seed, epoch, training, max_sample_size) "
                             f"{sorted(settings, key=str)}")
        seed, epoch, training, max_sample_size = settings.pop()
        groups = _sub_batches(items)
        rngs = [batch_rng(seed, epoch, [items[position].index for position in group]) for group in groups]
        if self.pretraining:
            batch = self._pretraining_batch(items, groups, rngs, max_sample_size)
        else:
            masks = training or self.mask_in_eval
            if training and self.random_phase_prob > 0:
                phase_rng = np.random.default_rng(self._stream(seed, epoch, items, stream=2))
                items = [item._replace(source=random_phase(item.source, phase_rng))
                         if phase_rng.random() < self.random_phase_prob else item for item in items]
            batch = self._finetuning_batch(items, groups, rngs, masks)
        if any(item.target is not None for item in items):
            if any(item.target is None for item in items):
                raise ValueError("a batch mixes items with and without targets")
            lengths = torch.tensor([len(item.target) for item in items], dtype=torch.long)
            targets = torch.full((len(items), int(lengths.max())), self.pad_index, dtype=torch.long)
            for row, item in enumerate(items):
                targets[row, :len(item.target)] = item.target
            batch.targets, batch.target_lengths = targets, lengths
        batch.noise_seed = int(np.random.default_rng(self._stream(seed, epoch, items, stream=1)).integers(2 ** 62))
        return batch

    @staticmethod
    def _stream(seed: int, epoch: int, items: Sequence[AudioItem], stream: int) -> np.random.SeedSequence:
        """A random stream of the batch's own (1: the model's noise seed, 2: the random phase), apart from the crop
        and mask draws of batch_rng."""
        return np.random.SeedSequence([seed, epoch, *(item.index for item in items)], spawn_key=(stream,))

    def _pretraining_batch(self, items, groups, rngs, max_sample_size: int | None) -> AudioBatch:
        crop = min(len(item.source) for item in items)
        if max_sample_size is not None:
            crop = min(crop, max_sample_size)
        num_frames = int(self.frames(crop))
        source = torch.empty(len(items), crop, dtype=torch.float32)
        masks, negatives, masked_before = [], [], 0
        for group, rng in zip(groups, rngs):
            for position in group:
                waveform = items[position].source
                start = int(rng.integers(0, len(waveform) - crop + 1))
                source[position] = waveform[start:start + crop]
            mask = compute_mask_indices([num_frames] * len(group), num_frames, self.mask_prob, self.mask_length,
                                        rng, min_masks=PRETRAINING_MIN_MASKS)
            try:
                group_negatives = sample_negative_indices(mask, self.num_negatives, rng)
            except ValueError as error:
                ids = [items[position].index for position in group]
                raise UserError(f"utterances {ids} cropped to {crop} samples ({num_frames} frames) are too short "
                                f"to mask: {error}; raise --min-sample-size") from error
            masks.append(mask)
            negatives.append(group_negatives + masked_before)
            masked_before += int(mask.sum())
        return AudioBatch(source=source, padding_mask=None, mask_indices=torch.from_numpy(np.concatenate(masks)),
                          negative_indices=torch.cat(negatives), channel_mask=None, targets=None,
                          target_lengths=None, ids=[item.index for item in items], num_samples=crop * len(items))

    def _finetuning_batch(self, items, groups, rngs, masks: bool) -> AudioBatch:
        lengths = [len(item.source) for item in items]
        longest = max(lengths)
        source = torch.zeros(len(items), longest, dtype=torch.float32)
        padding_mask = torch.zeros(len(items), longest, dtype=torch.bool)
        for row, item in enumerate(items):
            source[row, :lengths[row]] = item.source
            padding_mask[row, lengths[row]:] = True
        batch = AudioBatch(source=source, padding_mask=padding_mask if bool(padding_mask.any()) else None,
                           mask_indices=None, negative_indices=None, channel_mask=None, targets=None,
                           target_lengths=None, ids=[item.index for item in items], num_samples=sum(lengths))
        if not masks:
            return batch
        frame_lengths = self.frames(lengths).tolist()
        num_frames = int(self.frames(longest))
        time_masks, channel_masks = [], []
        for group, rng in zip(groups, rngs):
            if self.mask_prob > 0:
                time_masks.append(compute_mask_indices([frame_lengths[position] for position in group], num_frames,
                                                       self.mask_prob, self.mask_length, rng,
                                                       min_masks=PRETRAINING_MIN_MASKS))
            if self.mask_channel_prob > 0:
                channel_masks.append(compute_mask_indices([self.num_channels] * len(group), self.num_channels,
                                                          self.mask_channel_prob, self.mask_channel_length, rng))
        if time_masks:
            batch.mask_indices = torch.from_numpy(np.concatenate(time_masks))
        if channel_masks:
            batch.channel_mask = torch.from_numpy(np.concatenate(channel_masks))
        return batch


# ---------------------------------------------------------------------------------------------------------------
# Batching


class ConcatBatches(Sampler[list[tuple[int, int]]]):
    """Groups of `num_concat` consecutive batches of this rank, forwarded as one: each group is a list of
    (index, sub_batch) pairs, which AudioDataset reads and Collater splits back into sub-batches. A rank's last
    batches that cannot fill a group are dropped (as NVIDIA's); every rank has as many groups, since the inner
    sampler gives every rank as many batches."""

    def __init__(self, batches: MaxTokensBatchSampler, num_concat: int):
        if num_concat < 1:
            raise UserError(f"--num-concat-batches must be at least 1, got {num_concat}")
        self.batches, self.num_concat = batches, num_concat
        self.batches.set_epoch(0, 0)
        self.epoch = self.skip_batches = 0
        self.resumed_epoch: ResumedEpoch | None = None
        if self._num_groups() < 1:
            raise UserError(f"--num-concat-batches {num_concat}: each rank has only {len(batches)} batches of "
                            "--max-tokens; lower one of them or add data")

    def set_epoch(self, epoch: int, skip_batches: int = 0) -> None:
        self.batches.set_epoch(epoch, 0)
        self.epoch, self.skip_batches = epoch, skip_batches  # in groups: what the trainer counts as batches

    def resume_epoch_without(self, resumed: ResumedEpoch) -> None:
        """The inner sampler leaves the items out; the groups taken before are counted here, as the trainer counts."""
        self.batches.resume_epoch_without(ResumedEpoch(resumed.epoch, resumed.seen_items, 0))
        self.resumed_epoch = resumed

    def _groups_to_skip(self) -> int:
        if self.resumed_epoch is None or self.resumed_epoch.epoch != self.epoch:
            return self.skip_batches
        return max(self.skip_batches - self.resumed_epoch.batches_before, 0)

    def _num_groups(self) -> int:
        return len(self.batches) // self.num_concat  # the inner sampler never skips: set_epoch gives it 0

    def __iter__(self):
        batches = list(self.batches)
        groups = [[(index, sub_batch) for sub_batch, batch in enumerate(batches[start:start + self.num_concat])
                   for index in batch]
                  for start in range(0, len(batches) - self.num_concat + 1, self.num_concat)]
        return iter(groups[self._groups_to_skip():])

    def __len__(self) -> int:
        return max(self._num_groups() - self._groups_to_skip(), 0)


def max_tokens_batches(settings: Wav2Vec2TrainingSettings, dataset: AudioDataset, context: BatchingContext
                       ) -> Sampler:
    """Recipe.batch_sampler: batches of at most --max-tokens samples (items x longest, each item's length capped at
    the dataset's max_sample_size: pre-training's crop) of similar lengths; in training, --num-concat-batches of them
    forwarded as one. Validation uses --max-tokens-valid (default --max-tokens), unshuffled, nothing dropped but,
    with --skip-invalid-size-inputs-valid-test, the utterances longer than that. -bs (NVIDIA's --batch_size) caps
    the utterances of a batch."""
    if context.training:
        max_tokens = settings.max_tokens
    else:
        max_tokens = settings.max_tokens_valid or settings.max_tokens
    if max_tokens is None or max_tokens < 1:
        raise UserError(f"--max-tokens must be a positive number of samples, got {max_tokens}")
    skip_too_long = not context.training and settings.skip_invalid_size_inputs_valid_test
    sampler = MaxTokensBatchSampler(dataset.batching_lengths(), max_tokens,
                                    max_batch_size=settings.batch_size, shuffle=context.training,
                                    drop_uneven=context.training, seed=context.seed, rank=context.rank,
                                    world_size=context.world_size, skip_too_long=skip_too_long)
    num_concat = settings.num_concat_batches or 1
    if context.training and num_concat > 1:
        return ConcatBatches(sampler, num_concat)
    return sampler
