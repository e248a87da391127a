"""OpenLineage datasets are optional: without the OpenLineage provider there are none, and nothing fails."""

from __future__ import annotations

import importlib.util

from airflow_iceberg_provider.lineage import table_lineage


def test_no_lineage_without_the_openlineage_provider() -> None:
    assert importlib.util.find_spec("airflow.providers.openlineage") is None
    assert table_lineage("lake", inputs=["sales.orders"], outputs=[]) is None
