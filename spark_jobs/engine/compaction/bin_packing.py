"""Iceberg Java's ``BinPacking.ListPacker``: first-fit packing over a window of open bins.

The algorithm (``PackingIterator``), for items in their given order:

1. An item goes into the first open bin whose weight plus the item's stays within the target weight.
2. When none fits, a new bin is opened at the end with the item; if more than ``lookback`` bins are now open, one
   is closed and emitted: the heaviest (the first of equals) with ``largest_bin_first``, else the oldest.
3. When the items run out, the open bins are emitted oldest first.

An item heavier than the target gets a bin of its own. The rewrite planner packs with ``lookback=1`` and
``largest_bin_first=False``: files fill one group in order until the next one does not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Item = TypeVar("Item")


@dataclass(eq=False)
class _Bin(Generic[Item]):
    """Items gathered so far and their total weight."""

    weight: int = 0
    items: list[Item] = field(default_factory=list)


class ListPacker(Generic[Item]):
    """Packs items into lists of at most ``target_weight`` total weight (a lone heavier item makes its own list)."""

    def __init__(self, target_weight: int, lookback: int, largest_bin_first: bool) -> None:
        if lookback <= 0:
            raise ValueError(f"Bin look-back size must be greater than 0: {lookback}")
        self._target_weight = target_weight
        self._lookback = lookback
        self._largest_bin_first = largest_bin_first

    def pack(self, items: Iterable[Item], weight: Callable[[Item], int]) -> list[list[Item]]:
        """The bins in the order Java's iterator emits them (steps in the module docstring)."""
        open_bins: list[_Bin[Item]] = []
        packed: list[list[Item]] = []
        for item in items:
            item_weight = weight(item)
            target = next((b for b in open_bins if b.weight + item_weight <= self._target_weight), None)
            if target is not None:
                target.weight += item_weight
                target.items.append(item)
                continue
            open_bins.append(_Bin(item_weight, [item]))
            if len(open_bins) > self._lookback:
                packed.append(self._close_one(open_bins).items)
        packed.extend(b.items for b in open_bins)
        return packed

    def _close_one(self, open_bins: list[_Bin[Item]]) -> _Bin[Item]:
        """Remove and return the bin to emit: the heaviest (first of equals) or the oldest."""
        if self._largest_bin_first:
            heaviest = max(open_bins, key=lambda b: b.weight)  # max keeps the first of equals, as Collections.max
            open_bins.remove(heaviest)
            return heaviest
        return open_bins.pop(0)
