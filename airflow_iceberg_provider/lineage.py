"""OpenLineage datasets for Iceberg tables and the files jobs read or write, named as the OpenLineage spec names them.

Needs the OpenLineage provider (optional: without it ``operator_lineage`` returns ``None``). A table is a dataset
named by its storage, so it joins with what Spark, Trino or any engine reading the same files reports:
1. namespace = the scheme and authority of the table's location (``s3://bucket``, ``gs://bucket``,
   ``hdfs://namenode:8020``; ``file`` for local paths), name = the location's path (within the bucket for object
   stores, absolute for ``file``);
2. the table's identifier in its catalog goes in the ``symlinks`` facet (type ``TABLE``; namespace: the catalog's URI
   without credentials, or the Glue catalog's ARN) and the ``catalog`` facet (framework ``iceberg``, catalog type,
   name, URI and warehouse);
3. the ``schema`` facet lists the table's columns with Iceberg's type names (nested fields under their parent), and
   the ``version`` facet is the snapshot id the job read or committed (left out when it is not known yet: an output
   on start);
4. as an input or output of a job that has run, the table carries Iceberg's facets built from the job's result line
   (``lineage_facets``: ``icebergScanReport``, ``icebergCommitReport``, ``icebergMaintenanceReport``).
Files (an ingest's source, a read's export) are datasets named the same way from their URI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ICEBERG_FRAMEWORK = "iceberg"
_OBJECT_STORE_SCHEMES = {"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "oss"}


@dataclass(frozen=True)
class TableVersion:
    """The operator's table as a lineage dataset, at ``snapshot_id`` (``None``: not known yet), with the facets it
    carries as this job's input or output (``lineage_facets``)."""

    snapshot_id: int | None = None
    io_facets: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Files:
    """Files at ``uri`` (a folder or a file) as a lineage dataset."""

    uri: str


LineageItem = TableVersion | Files
# (inputs, outputs) an operator reports.
LineageDatasets = tuple[list[LineageItem], list[LineageItem]]


@dataclass(frozen=True)
class TableDescription:
    """What lineage reports about a table: where it lives, its identifier in its catalog, and its columns."""

    identifier: str
    catalog_name: str
    catalog_properties: Mapping[str, str]
    location: str
    schema: Any  # pyiceberg Schema
    current_snapshot_id: int | None
    metadata: Any = None  # pyiceberg TableMetadata: the schema of any snapshot

    def schema_of(self, snapshot_id: int | None) -> Any:
        """The schema ``snapshot_id`` was written with (the current one when not known)."""
        snapshot = self.metadata.snapshot_by_id(snapshot_id) if self.metadata is not None and snapshot_id else None
        if snapshot is not None and snapshot.schema_id is not None:
            for schema in self.metadata.schemas:
                if schema.schema_id == snapshot.schema_id:
                    return schema
        return self.schema


def storage_name(uri: str) -> tuple[str, str]:
    """The OpenLineage (namespace, name) of a storage location: ``s3://bucket/a/b`` -> ``("s3://bucket", "a/b")``."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in ("", "file"):
        path = parts.path if scheme else uri
        return "file", "/" + path.lstrip("/")
    if scheme in _OBJECT_STORE_SCHEMES:
        return f"{scheme}://{parts.netloc}", parts.path.strip("/")
    return f"{scheme}://{parts.netloc}", parts.path or "/"


def without_credentials(uri: str) -> str:
    """``uri`` with its user, password and query (which may carry them) removed."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc and not parts.query:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))


def symlink_identity(description: TableDescription) -> tuple[str, str]:
    """The table's (namespace, name) in its catalog: Glue's ARN form, else the catalog URI and ``namespace.table``."""
    properties = description.catalog_properties
    namespace, _, table = description.identifier.rpartition(".")
    if properties.get("type") == "glue" and properties.get("glue.region") and properties.get("glue.id"):
        return f"arn:aws:glue:{properties['glue.region']}:{properties['glue.id']}", f"table/{namespace}/{table}"
    uri = properties.get("uri")
    catalog_namespace = without_credentials(uri) if uri else f"{ICEBERG_FRAMEWORK}://{description.catalog_name}"
    return catalog_namespace, description.identifier


def schema_fields(struct: Any) -> list[Any]:
    """OpenLineage schema fields for the fields of an Iceberg struct (nested types recurse)."""
    from openlineage.client.facet_v2 import schema_dataset

    return [
        schema_dataset.SchemaDatasetFacetFields(
            name=field.name, type=_type_name(field.field_type), description=field.doc, fields=_children(field)
        )
        for field in struct.fields
    ]


def _type_name(field_type: Any) -> str:
    from pyiceberg.types import ListType, MapType

    if field_type.is_struct:
        return "struct"
    if isinstance(field_type, ListType):
        return "list"
    if isinstance(field_type, MapType):
        return "map"
    return str(field_type)


def _children(field: Any) -> list[Any]:
    """A nested field's children: a struct's fields, a list's ``_element``, a map's ``key`` and ``value``."""
    from pyiceberg.types import ListType, MapType, NestedField, StructType

    field_type = field.field_type
    if field_type.is_struct:
        return schema_fields(field_type)
    if isinstance(field_type, ListType):
        return schema_fields(StructType(NestedField(field_type.element_id, "_element", field_type.element_type)))
    if isinstance(field_type, MapType):
        key = NestedField(field_type.key_id, "key", field_type.key_type)
        value = NestedField(field_type.value_id, "value", field_type.value_type)
        return schema_fields(StructType(key, value))
    return []


def table_dataset(description: TableDescription, snapshot_id: int | None) -> Any:
    """The table as an OpenLineage dataset at ``snapshot_id``, with its identifier, catalog and schema facets."""
    from openlineage.client.event_v2 import Dataset
    from openlineage.client.facet_v2 import (
        catalog_dataset,
        dataset_version_dataset,
        schema_dataset,
        storage_dataset,
        symlinks_dataset,
    )

    namespace, name = storage_name(description.location)
    link_namespace, link_name = symlink_identity(description)
    properties = description.catalog_properties
    facets: dict[str, Any] = {
        "schema": schema_dataset.SchemaDatasetFacet(fields=schema_fields(description.schema)),
        "symlinks": symlinks_dataset.SymlinksDatasetFacet(
            identifiers=[symlinks_dataset.Identifier(namespace=link_namespace, name=link_name, type="TABLE")]
        ),
        "catalog": catalog_dataset.CatalogDatasetFacet(
            framework=ICEBERG_FRAMEWORK,
            type=properties.get("type", "rest"),
            name=description.catalog_name,
            metadataUri=without_credentials(properties["uri"]) if properties.get("uri") else None,
            warehouseUri=properties.get("warehouse"),
            source="airflow",
        ),
        "storage": storage_dataset.StorageDatasetFacet(storageLayer=ICEBERG_FRAMEWORK, fileFormat="parquet"),
    }
    if snapshot_id is not None:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(snapshot_id))
    return Dataset(namespace=namespace, name=name, facets=facets)


def files_dataset(uri: str) -> Any:
    """Files at ``uri`` as an OpenLineage dataset."""
    from openlineage.client.event_v2 import Dataset

    namespace, name = storage_name(uri)
    return Dataset(namespace=namespace, name=name)


def describe_table(catalog_hook: Any, identifier: str) -> TableDescription | None:
    """The table's location, schema and catalog through the hook; ``None`` when it does not exist (yet)."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        table = catalog_hook.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    properties = {**catalog_hook.storage_properties(), **catalog_hook.catalog.properties}
    return TableDescription(
        identifier=identifier,
        catalog_name=catalog_hook.catalog_name,
        catalog_properties={key: str(value) for key, value in properties.items() if _is_public(key)},
        location=table.metadata.location,
        schema=table.schema(),
        current_snapshot_id=table.metadata.current_snapshot_id,
        metadata=table.metadata,
    )


def _is_public(key: str) -> bool:
    """Catalog properties safe to report (no keys, secrets, tokens or credentials)."""
    lowered = key.lower()
    return not any(word in lowered for word in ("secret", "password", "token", "credential", "key"))


def operator_lineage(
    description: TableDescription | None, inputs: Sequence[LineageItem], outputs: Sequence[LineageItem]
) -> Any | None:
    """``OperatorLineage`` for the given inputs and outputs, or ``None`` without the OpenLineage provider.

    A table that does not exist yet (``description`` is ``None``: an ingest that creates it, on start) is left out.
    """
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
    except ImportError:
        return None

    from openlineage.client.event_v2 import InputDataset, OutputDataset

    def datasets(items: Sequence[LineageItem], side: type) -> list[Any]:
        found = []
        for item in items:
            if isinstance(item, Files):
                found.append(files_dataset(item.uri))
            elif description is not None:
                dataset = table_dataset(description, item.snapshot_id)
                if item.io_facets:
                    facets_argument = "inputFacets" if side is InputDataset else "outputFacets"
                    arguments = {"namespace": dataset.namespace, "name": dataset.name, "facets": dataset.facets}
                    dataset = side(**arguments, **{facets_argument: dict(item.io_facets)})
                found.append(dataset)
        return found

    return OperatorLineage(inputs=datasets(inputs, InputDataset), outputs=datasets(outputs, OutputDataset))
