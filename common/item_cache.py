"""--keep-in-memory for a dataset: each item's loaded data kept once read. The cache lives in the process that reads
the items, so it lasts across epochs only with --num-workers 0 (common/trainer.py refuses the pair otherwise)."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

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
