"""The seeds a randomized test runs (fixed CI seeds, or a range from an environment variable); a weighted draw."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

Choice = TypeVar("Choice")


def seeds_from_environment(variable: str, ci_seeds: list[int], *, range_separator: str) -> list[int]:
    """``N``: seeds 0..N-1; ``A<range_separator>B``: seeds A..B-1; ``variable`` unset or empty: ``ci_seeds``."""
    setting = os.environ.get(variable)
    if not setting:
        return ci_seeds
    first, _, last = setting.rpartition(range_separator)
    return list(range(int(first or 0), int(last)))


def draw_weighted(rng: random.Random, weighted: Sequence[tuple[Choice, int]]) -> Choice:
    """One of the ``(choice, weight)`` pairs' choices, drawn with ``rng`` in proportion to its weight."""
    return rng.choices([choice for choice, _ in weighted], weights=[weight for _, weight in weighted])[0]
