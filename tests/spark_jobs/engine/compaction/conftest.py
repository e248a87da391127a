"""Fixtures of the rewrite tests: a small-files table built with the project's writers and committer."""

import pytest
from pyiceberg.table import Table

from tests.support.rewrite_tables import build_events


@pytest.fixture
def events(sql_catalog) -> Table:
    """Format v2, partitioned by category: 12 one-file appends of 20 rows, alternating 'a' and 'b' (ids 0..239)."""
    return build_events(sql_catalog)
