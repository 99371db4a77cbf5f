"""Batch sampling that is seeded per epoch, shards across ranks, can bucket by length, and can resume mid-epoch."""
from __future__ import annotations

from typing import Iterator, Sequence

import torch
from torch.utils.data import Sampler


class EpochBatchSampler(Sampler[list[int]]):
    """Yields the batches of this rank for the epoch given to set_epoch().

    Every rank draws the same permutation from (seed, epoch) and takes every world_size-th batch, so ranks never see
    the same item in an epoch. With `lengths`, items are sorted by length inside windows of `bucket_size` batches
    before batching, so a batch holds utterances of similar length (less padding); batch order is still shuffled.
    """

    def __init__(self, num_items: int, batch_size: int, *, shuffle: bool = True, drop_last: bool = True,
                 seed: int = 0, rank: int = 0, world_size: int = 1, lengths: Sequence[int] | None = None,
                 bucket_size: int = 32):
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        if num_items < batch_size * world_size and drop_last:
            raise ValueError(
                f"{num_items} items cannot fill one batch of {batch_size} on each of {world_size} ranks; "
                "lower the batch size or add data"
            )
        self.num_items, self.batch_size, self.shuffle, self.drop_last = num_items, batch_size, shuffle, drop_last
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.lengths = None if lengths is None else torch.as_tensor(lengths)
        self.bucket_size = bucket_size
        self.epoch = 0
        self.skip_batches = 0

    def set_epoch(self, epoch: int, skip_batches: int = 0) -> None:
        self.epoch, self.skip_batches = epoch, skip_batches

    def _all_batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        order = torch.randperm(self.num_items, generator=generator) if self.shuffle else torch.arange(self.num_items)
        if self.lengths is not None:
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
        return iter(mine[self.skip_batches:])

    def __len__(self) -> int:
        return len(self._all_batches()[self.rank::self.world_size]) - self.skip_batches
