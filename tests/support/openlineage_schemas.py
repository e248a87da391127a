"""OpenLineage facets checked against their published JSON schemas (copies in tests/data/openlineage, and the
provider's own schema in its package)."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = REPO_ROOT / "tests" / "data" / "openlineage"
PACKAGE_SCHEMAS = REPO_ROOT / "airflow_iceberg_provider" / "lineage_schemas"
# facet key -> (schema file, definition)
FACET_SCHEMAS = {
    "icebergScanReport": (SCHEMAS / "IcebergScanReportInputDatasetFacet.json", "IcebergScanReportInputDatasetFacet"),
    "icebergCommitReport": (
        SCHEMAS / "IcebergCommitReportOutputDatasetFacet.json",
        "IcebergCommitReportOutputDatasetFacet",
    ),
    "icebergMaintenanceReport": (
        PACKAGE_SCHEMAS / "IcebergMaintenanceReportOutputDatasetFacet.json",
        "IcebergMaintenanceReportOutputDatasetFacet",
    ),
}


def schema_errors(key: str, facet: dict) -> list[str]:
    """What is wrong with the serialized facet ``facet`` stored under ``key``, by its schema (empty when valid)."""
    path, definition = FACET_SCHEMAS[key]
    documents = [json.loads(p.read_text()) for p in (*SCHEMAS.glob("*.json"), *PACKAGE_SCHEMAS.glob("*.json"))]
    registry = Registry().with_resources((doc["$id"], Resource.from_contents(doc)) for doc in documents)
    schema_id = json.loads(path.read_text())["$id"]
    validator = Draft202012Validator({"$ref": f"{schema_id}#/$defs/{definition}"}, registry=registry)
    return sorted(error.message for error in validator.iter_errors(facet))
