"""docs/guide.md: its first DAG is a working DAG file (imported as Airflow would, its tasks' job arguments built and
their templates rendered), and its artefact table names every setting it tells the reader to set."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from airflow_iceberg_provider.settings import ENVIRONMENT_VARIABLES

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def first_dag_source() -> str:
    """The first Python code block of the guide."""
    found = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert found, "docs/guide.md has no python code block"
    return found[1]


def test_the_guide_starts_with_the_first_dag_before_anything_else() -> None:
    headings = [line for line in GUIDE.read_text().splitlines() if line.startswith("## ")]
    assert headings[0] == "## Your first DAG: ingest, read, compact, maintain"
    assert GUIDE.read_text().index("```python") < GUIDE.read_text().index("## 1. Install")


@pytest.mark.airflow
def test_the_first_dag_imports_and_its_tasks_build_their_jobs(tmp_path: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    (tmp_path / "iceberg_first_pipeline.py").write_text(first_dag_source())
    bag = DagBag(dag_folder=str(tmp_path))
    assert bag.import_errors == {}
    dag = bag.dags["iceberg_first_pipeline"]
    assert [task.task_id for task in dag.topological_sort()] == [
        "ingest",
        "check",
        "compact",
        "expire_snapshots",
        "remove_orphan_files",
    ]
    jobs = {task.task_id: task.job for task in dag.tasks}
    assert jobs == {
        "ingest": "ingest",
        "check": "read",
        "compact": "compact",
        "expire_snapshots": "maintain",
        "remove_orphan_files": "maintain",
    }
    assert {task.table for task in dag.tasks} == {"analytics.events"}
    assert {task.iceberg_conn_id for task in dag.tasks} == {"lake"}


def test_the_first_dags_filters_render_to_what_the_jobs_parse() -> None:
    """The templated filter, rendered for a run's data interval as Airflow renders it, parses as a row filter."""
    import pendulum
    from jinja2 import Template
    from pyiceberg.expressions.parser import parse

    source = first_dag_source()
    template = re.search(r'where="([^"]+)"', source)
    assert template
    start = pendulum.datetime(2026, 1, 2, tz="UTC")
    rendered = Template(template[1]).render(data_interval_start=start, data_interval_end=start.add(days=1))
    assert rendered == "ts >= '2026-01-02T00:00:00+00:00' AND ts < '2026-01-03T00:00:00+00:00'"
    parse(rendered)
    assert datetime.fromisoformat("2026-01-02T00:00:00+00:00")


def test_the_artefact_table_names_the_settings_it_relies_on() -> None:
    text = GUIDE.read_text()
    table = text[text.index("### Where everything goes") : text.index("## 1. Install")]
    for artefact in ("task logs", "compaction reports", "lineage", "read exports"):
        assert artefact in table, artefact
    for setting in ("ICEBERG_PROVIDER_REPORT_ROOT", "ICEBERG_PROVIDER_OUTPUT_ROOT", "ICEBERG_PROVIDER_ICEBERG_CONN_ID"):
        assert setting in table and setting in ENVIRONMENT_VARIABLES, setting
