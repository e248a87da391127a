"""The seeds a randomized test runs: its fixed CI seeds, or a range read from an environment variable."""

from __future__ import annotations

import os


def seeds_from_environment(variable: str, ci_seeds: list[int], *, range_separator: str) -> list[int]:
    """``N``: seeds 0..N-1; ``A<range_separator>B``: seeds A..B-1; ``variable`` unset or empty: ``ci_seeds``."""
    setting = os.environ.get(variable)
    if not setting:
        return ci_seeds
    first, _, last = setting.rpartition(range_separator)
    return list(range(int(first or 0), int(last)))
