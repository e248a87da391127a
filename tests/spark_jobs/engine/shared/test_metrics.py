"""Scan counters: merged field by field, reported as a plain dict."""

from __future__ import annotations

from dataclasses import fields

from spark_jobs.engine.shared.metrics import ScanMetrics


def test_merge_adds_every_counter() -> None:
    names = [f.name for f in fields(ScanMetrics)]
    left = ScanMetrics(**{name: index for index, name in enumerate(names)})
    right = ScanMetrics(**{name: 100 for name in names})
    assert left.merge(right) is left
    assert left.as_dict() == {name: index + 100 for index, name in enumerate(names)}
    assert right.as_dict() == dict.fromkeys(names, 100)


def test_as_dict_is_plain_integers() -> None:
    counters = ScanMetrics(rows_out=3).as_dict()
    assert counters["rows_out"] == 3 and all(type(value) is int for value in counters.values())
