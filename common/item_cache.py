"""--keep-in-memory for a dataset: each item's loaded data kept once read. The cache lives in the process that reads
the items, so it lasts across epochs only with --num-workers 0 (check_kept_in_this_process refuses the pair
otherwise; a family whose data has the flag calls it in its build_data)."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

from common.errors import UserError

Item = TypeVar("Item")


class ItemCache(Generic[Item]):
    def __init__(self, enabled: bool):
        self.enabled, self.items = enabled, {}

    def get(self, index: int, load: Callable[[int], Item]) -> Item:
        """Item index: from the cache, or load(index), kept when enabled."""
        if index in self.items:
            return self.items[index]
        item = load(index)
        if self.enabled:
            self.items[index] = item
        return item

    def __len__(self) -> int:
        return len(self.items)


def check_kept_in_this_process(keep_in_memory: bool, num_workers: int) -> None:
    """Each epoch's data-loader workers start from the dataset as it is in the training process, so what they keep
    is lost when the epoch ends: --keep-in-memory needs --num-workers 0."""
    if keep_in_memory and num_workers:
        raise UserError(f"--keep-in-memory keeps the data in the training process, and --num-workers {num_workers} "
                        "loads it in worker processes that each epoch starts afresh: give --num-workers 0 with it, or "
                        "--no-keep-in-memory")
