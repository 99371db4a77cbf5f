"""Batch sampling that is seeded per epoch, shards across ranks, can bucket by length, and can resume mid-epoch.

Two samplers share that contract (set_epoch(epoch, skip_batches), len(), iteration yields lists of item indices):
EpochBatchSampler makes batches of a fixed number of items; MaxTokensBatchSampler fills each batch up to a budget of
padded length (items x longest item), the batching of speech recognition where utterances vary 10x in length.
Both are pure functions of (seed, epoch): every rank computes the same global list of batches and takes its share.
A run resumed mid-epoch with other batching than the run that began the epoch (another batch size, number of ranks,
--max-tokens) gives them a ResumedEpoch: that epoch's items already taken are left out and the others batched anew.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import torch
from torch.utils.data import Sampler

from common.errors import UserError

if TYPE_CHECKING:  # whose --batch-size fixed_size_batches reads
    from common.training_settings import TrainingSettings


@dataclass
class ResumedEpoch:
    """An epoch resumed with other batching than the run that began it (common/training_state.py finds out which
    items that run had taken). The epoch's other items are batched anew, and the trainer's count of the epoch's
    batches goes on from `batches_before` (what each rank had taken), so set_epoch(epoch, skip_batches) skips
    skip_batches - batches_before of the new batches. Saved in the checkpoint until the epoch ends, so a second stop
    in the same epoch resumes too."""
    epoch: int
    seen_items: torch.Tensor  # int64 indices of the items taken before, in any order
    batches_before: int

    def to_checkpoint(self) -> dict:
        return {"epoch": self.epoch, "seen_items": self.seen_items.clone(), "batches_before": self.batches_before}

    @classmethod
    def from_checkpoint(cls, saved: dict | None) -> "ResumedEpoch | None":
        if not saved:
            return None
        return cls(int(saved["epoch"]), saved["seen_items"].long(), int(saved["batches_before"]))


def batch_items(batch: list) -> list[int]:
    """The item indices of a batch a sampler yields: ints, or (index, sub-batch) pairs (wav2vec 2.0's ConcatBatches)."""
    return [int(entry[0]) if isinstance(entry, tuple) else int(entry) for entry in batch]


class ResumableEpochs:
    """set_epoch(epoch, skip_batches) and the ResumedEpoch bookkeeping the samplers share."""
    epoch: int
    skip_batches: int
    resumed_epoch: ResumedEpoch | None

    def set_epoch(self, epoch: int, skip_batches: int = 0) -> None:
        self.epoch, self.skip_batches = epoch, skip_batches

    def resume_epoch_without(self, resumed: ResumedEpoch) -> None:
        self.resumed_epoch = resumed

    def _in_resumed_epoch(self) -> bool:
        return self.resumed_epoch is not None and self.resumed_epoch.epoch == self.epoch

    def _unseen(self, order: torch.Tensor) -> torch.Tensor:
        """`order` (item indices) without the items a resumed epoch had already taken."""
        if not self._in_resumed_epoch():
            return order
        return order[~torch.isin(order, self.resumed_epoch.seen_items)]

    def _batches_to_skip(self) -> int:
        if not self._in_resumed_epoch():
            return self.skip_batches
        return max(self.skip_batches - self.resumed_epoch.batches_before, 0)


class EpochBatchSampler(ResumableEpochs, Sampler[list[int]]):
    """Yields the batches of this rank for the epoch given to set_epoch().

    Every rank draws the same permutation from (seed, epoch) and takes every world_size-th batch, so ranks never see
    the same item in an epoch. With `lengths`, items are sorted by length inside windows of `bucket_size` batches
    before batching, so a batch holds utterances of similar length (less padding); batch order is still shuffled.
    """

    def __init__(self, num_items: int, batch_size: int, *, shuffle: bool = True, drop_last: bool = True,
                 seed: int = 0, rank: int = 0, world_size: int = 1, lengths: Sequence[int] | None = None,
                 bucket_size: int = 32):
        if batch_size < 1:
            raise UserError(f"batch size must be at least 1, got {batch_size}")
        if num_items < batch_size * world_size and drop_last:
            raise UserError(
                f"{num_items} items cannot fill one batch of {batch_size} on each of {world_size} ranks; "
                "lower the batch size or add data"
            )
        self.num_items, self.batch_size, self.shuffle, self.drop_last = num_items, batch_size, shuffle, drop_last
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.lengths = None if lengths is None else torch.as_tensor(lengths)
        self.bucket_size = bucket_size
        self.epoch = 0
        self.skip_batches = 0
        self.resumed_epoch = None

    def _all_batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        order = torch.randperm(self.num_items, generator=generator) if self.shuffle else torch.arange(self.num_items)
        order = self._unseen(order)
        if self.lengths is not None and len(order):  # a resumed epoch may have no item left
            window = self.batch_size * self.bucket_size
            chunks = [order[start:start + window] for start in range(0, len(order), window)]
            order = torch.cat([chunk[torch.argsort(self.lengths[chunk], descending=True, stable=True)]
                               for chunk in chunks])
        batches = [order[start:start + self.batch_size].tolist() for start in range(0, len(order), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        if self.lengths is not None and self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        usable = len(batches) - len(batches) % self.world_size if self.drop_last else len(batches)
        return batches[:usable]

    def __iter__(self) -> Iterator[list[int]]:
        mine = self._all_batches()[self.rank::self.world_size]
        return iter(mine[self._batches_to_skip():])

    def __len__(self) -> int:
        return max(len(self._all_batches()[self.rank::self.world_size]) - self._batches_to_skip(), 0)


class MaxTokensBatchSampler(ResumableEpochs, Sampler[list[int]]):
    """Batches whose padded size (number of items x longest item) stays within max_tokens.

    Items are shuffled with (seed, epoch), then stably sorted by length, so each batch holds items of similar length
    (little padding) and ties fall differently each epoch; batches are cut greedily, shuffled, and only then sharded
    across ranks (rank r takes every world_size-th batch). In training the last batches that cannot go one to every
    rank are dropped, so ranks take the same number of steps.
    """

    def __init__(self, lengths: Sequence[int], max_tokens: int, *, max_batch_size: int | None = None,
                 shuffle: bool = True, drop_uneven: bool = True, seed: int = 0, rank: int = 0, world_size: int = 1,
                 skip_too_long: bool = False):
        """skip_too_long: leave out items longer than max_tokens (saying how many) instead of refusing them."""
        self.lengths = torch.as_tensor(lengths, dtype=torch.long)
        too_long = torch.nonzero(self.lengths > max_tokens).flatten().tolist()
        if too_long and not skip_too_long:
            raise UserError(f"{len(too_long)} item(s) are longer than --max-tokens {max_tokens} (item {too_long[0]}: "
                            f"{int(self.lengths[too_long[0]])}); raise --max-tokens or filter the data by length")
        if too_long and rank == 0:
            print(f"leaving out {len(too_long)} of {len(self.lengths)} items longer than {max_tokens} samples",
                  flush=True)
        self.fitting = torch.nonzero(self.lengths <= max_tokens).flatten()
        self.max_tokens, self.max_batch_size = max_tokens, max_batch_size
        self.shuffle, self.drop_uneven = shuffle, drop_uneven
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.epoch = 0
        self.skip_batches = 0
        self.resumed_epoch = None
        if len(self._all_batches()) < world_size and drop_uneven:
            raise UserError(f"{len(self.lengths)} items make fewer than one batch of --max-tokens {max_tokens} for "
                            f"each of {world_size} ranks; lower --max-tokens or add data")

    def _all_batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        order = self.fitting[torch.randperm(len(self.fitting), generator=generator)] if self.shuffle else self.fitting
        order = self._unseen(order)
        order = order[torch.argsort(self.lengths[order], stable=True)].tolist()
        batches, batch, longest = [], [], 0
        for index in order:
            length = int(self.lengths[index])
            full = self.max_batch_size is not None and len(batch) == self.max_batch_size
            if batch and (max(longest, length) * (len(batch) + 1) > self.max_tokens or full):
                batches.append(batch)
                batch, longest = [], 0
            batch.append(index)
            longest = max(longest, length)
        if batch:
            batches.append(batch)
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        usable = len(batches) - len(batches) % self.world_size if self.drop_uneven else len(batches)
        return batches[:usable]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._all_batches()[self.rank::self.world_size][self._batches_to_skip():])

    def __len__(self) -> int:
        return max(len(self._all_batches()[self.rank::self.world_size]) - self._batches_to_skip(), 0)


def fixed_size_batches(settings: TrainingSettings, dataset, context, lengths: list[int] | None = None
                       ) -> EpochBatchSampler:
    """The default batching of common.recipe.Recipe.batch_sampler (context: its BatchingContext): --batch-size items per
    batch and rank, reshuffled every epoch; with `lengths`, items of similar length batch together (in training)."""
    if settings.batch_size is None:
        raise UserError("-bs/--batch-size is required: items per batch and per process")
    return EpochBatchSampler(len(dataset), settings.batch_size, shuffle=context.training, drop_last=context.training,
                             seed=context.seed, rank=context.rank, world_size=context.world_size,
                             lengths=lengths if context.training else None)
