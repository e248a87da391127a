"""Report paths below the report root: names made safe, checked before anything is opened, found back from a
location; local reads stay inside the root."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_iceberg_provider.report_store import (
    ReportNotFoundError,
    read_report,
    relative_report_path,
    report_parts,
    safe_name,
    task_report_path,
    write_report,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("manual__2026-01-01T00:00:00+00:00", "manual__2026-01-01T00_00_00_00_00"),
        ("scheduled__2026-01-01T00:00:00.123+00:00", "scheduled__2026-01-01T00_00_00.123_00_00"),
        ("group.compact", "group.compact"),
        ("..", "_."),
        (".hidden", "_hidden"),
        ("a/b", "a_b"),
        ("", "_"),
        ("ünï", "_n_"),
    ],
)
def test_a_safe_name_keeps_letters_digits_and_dot_dash_underscore(text: str, expected: str) -> None:
    assert safe_name(text) == expected
    report_parts(f"{expected}/run/task.html")  # every safe name is a valid part


def test_a_task_instance_has_one_report_path_and_each_map_index_its_own() -> None:
    run = "manual__2026-01-01T00:00:00+00:00"
    assert task_report_path("dag", run, "compact") == "dag/manual__2026-01-01T00_00_00_00_00/compact.html"
    assert task_report_path("dag", run, "compact", 3) == "dag/manual__2026-01-01T00_00_00_00_00/compact.3.html"


@pytest.mark.parametrize(
    "relative",
    [
        "dag/run",
        "dag/run/task.txt",
        "dag/run/.html",
        "dag/../run/task.html",
        "dag/run/../task.html",
        "/dag/run/t.html",
        "dag//t.html",
        "dag/run/t.html/",
        "s3://b/dag/run/t.html",
        "dag\\run\\t.html",
        "dag/run/t%2F.html",
    ],
)
def test_anything_but_safe_parts_ending_in_html_is_not_a_report_path(relative: str) -> None:
    with pytest.raises(ValueError, match="not a report path"):
        report_parts(relative)


@pytest.mark.parametrize(
    ("root", "location", "expected"),
    [
        ("/data/reports", "/data/reports/dag/run/task.html", "dag/run/task.html"),
        ("/data/reports/", "/data/reports/dag/run/task.html", "dag/run/task.html"),
        ("file:///data/reports", "/data/reports/dag/run/task.html", "dag/run/task.html"),
        ("/data/reports", "/data/other/dag/run/task.html", None),
        ("/data/reports", "/data/reports/task.html", None),
        ("/data/reports", "/data/reports/dag/../../x/run/t.html", None),
        ("s3://bucket/reports", "s3://bucket/reports/dag/run/task.html", "dag/run/task.html"),
        ("s3://bucket/reports", "s3://bucket/reports-old/dag/run/task.html", None),
        ("s3://bucket/reports", "/bucket/reports/dag/run/task.html", None),
    ],
)
def test_a_location_under_the_root_gives_its_report_path(root: str, location: str, expected: str | None) -> None:
    assert relative_report_path(root, location) == expected


def test_a_local_report_is_read_back_and_nothing_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    write_report(str(root / "dag/run/task.html"), "<p>report</p>", {})
    assert read_report(str(root), "dag/run/task.html", {}) == b"<p>report</p>"
    assert read_report(f"file://{root}", "dag/run/task.html", {}) == b"<p>report</p>"
    with pytest.raises(ReportNotFoundError):
        read_report(str(root), "dag/run/missing.html", {})
    (root / "dag/run/link.html").symlink_to(tmp_path / "outside.html")
    (tmp_path / "outside.html").write_text("outside")
    with pytest.raises(ReportNotFoundError):
        read_report(str(root), "dag/run/link.html", {})
    with pytest.raises(ValueError, match="not a report path"):
        read_report(str(root), "dag/../../outside.html", {})
