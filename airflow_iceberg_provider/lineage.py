"""OpenLineage datasets for Iceberg tables, when the OpenLineage provider is installed (optional import)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_iceberg_provider.assets import SCHEME


def table_lineage(catalog: str, inputs: Sequence[str], outputs: Sequence[str]) -> Any | None:
    """``OperatorLineage`` with one dataset per table (namespace ``iceberg://<catalog>``), or ``None`` without it."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.event_v2 import Dataset
    except ImportError:
        return None
    namespace = f"{SCHEME}://{catalog.lower()}"
    return OperatorLineage(
        inputs=[Dataset(namespace=namespace, name=table) for table in inputs],
        outputs=[Dataset(namespace=namespace, name=table) for table in outputs],
    )
