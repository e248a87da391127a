"""OpenLineage datasets of an Iceberg table: one per table under the catalog's namespace, none without OpenLineage.

The test environment installs the OpenLineage provider (disabled, so nothing is emitted); its absence is simulated
by making its import fail, as on a deployment without it.
"""

from __future__ import annotations

import sys

from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import Dataset

from airflow_iceberg_provider.lineage import table_lineage
from airflow_iceberg_provider.operators.ingest import IcebergIngestOperator
from airflow_iceberg_provider.operators.read import IcebergReadOperator


def test_tables_become_datasets_in_the_catalogs_namespace() -> None:
    lineage = table_lineage("Lake", inputs=["sales.orders"], outputs=["sales.totals", "sales.audit"])
    assert isinstance(lineage, OperatorLineage)
    assert lineage.inputs == [Dataset(namespace="iceberg://lake", name="sales.orders")]
    assert [dataset.name for dataset in lineage.outputs] == ["sales.totals", "sales.audit"]
    assert {dataset.namespace for dataset in lineage.outputs} == {"iceberg://lake"}


def test_operators_report_their_table_as_input_or_output() -> None:
    read = IcebergReadOperator(task_id="read", catalog="lake", table="sales.orders", output_path="/tmp/out")
    ingest = IcebergIngestOperator(task_id="ingest", catalog="lake", table="sales.orders", source="/tmp/in")
    read_lineage = read.get_openlineage_facets_on_complete(None)
    ingest_lineage = ingest.get_openlineage_facets_on_complete(None)
    assert [d.name for d in read_lineage.inputs] == ["sales.orders"] and read_lineage.outputs == []
    assert ingest_lineage.inputs == [] and [d.name for d in ingest_lineage.outputs] == ["sales.orders"]


def test_no_lineage_and_no_failure_without_the_openlineage_provider(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "airflow.providers.openlineage.extractors", None)  # import raises ImportError
    assert table_lineage("lake", inputs=["sales.orders"], outputs=[]) is None
