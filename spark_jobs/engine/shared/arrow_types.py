"""The Arrow types the engine reads and writes Iceberg columns as: pyiceberg's, with format v3's new types.

pyiceberg's ``schema_to_pyarrow`` gives every type but ``variant`` (which its model lacks, ``iceberg_model``), and
geometry and geography as plain binary unless ``geoarrow-pyarrow`` is installed. ``schema_to_arrow`` is pyiceberg's
converter with three types of its own, the same in every process:

1. ``variant``: ``struct<metadata: binary, value: binary>``, both required, the ``metadata`` field tagged
   ``variant: true`` (how Spark marks a variant in Arrow); always the unshredded encoding.
2. ``geometry`` and ``geography``: ``WkbType``, the GeoArrow WKB extension type (``geoarrow.wkb``) over binary,
   carrying the CRS (and ``"edges": "spherical"`` etc. for geography). pyarrow writes it as Parquet's ``GEOMETRY``
   and ``GEOGRAPHY`` logical types with their geospatial statistics; Spark adapters map it to Spark's own types.
3. Everything else as pyiceberg converts it.

Spark hands the same types over in its own Arrow forms (``spark_geo_form``: a struct of ``srid`` and ``wkb``
marked ``geometry`` or ``geography``; a variant as a struct of ``value`` and ``metadata``); the writers bring them
to the forms above (``write.column_forms``). A CRS and Spark's SRIDs are matched by ``srid_of_crs``.
"""

from __future__ import annotations

import json
from typing import overload

import pyarrow as pa
from pyiceberg.io.pyarrow import _ConvertToArrowSchema
from pyiceberg.schema import Schema, visit
from pyiceberg.types import GeographyType, GeometryType, IcebergType, PrimitiveType

from spark_jobs.engine.shared.iceberg_model import is_variant

VARIANT_MARK = {b"variant": b"true"}
VARIANT_ARROW_TYPE = pa.struct(
    [pa.field("metadata", pa.binary(), nullable=False, metadata=VARIANT_MARK), pa.field("value", pa.binary(), False)]
)
WKB_EXTENSION_NAME = "geoarrow.wkb"
GEOGRAPHY_DEFAULT_EDGES = "spherical"


class WkbType(pa.ExtensionType):
    """GeoArrow's WKB type: well-known binary geometries with their CRS and, for geography, edge interpolation."""

    def __init__(self, crs: str, edges: str | None = None) -> None:
        self.crs = crs
        self.edges = edges
        super().__init__(pa.binary(), WKB_EXTENSION_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        """GeoArrow's JSON metadata: the CRS, and the edges of a geography."""
        metadata: dict[str, str] = {"crs": self.crs}
        if self.edges is not None:
            metadata["edges"] = self.edges
        return json.dumps(metadata).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> WkbType:
        """The type back from its metadata."""
        metadata = json.loads(serialized or b"{}")
        return cls(metadata.get("crs", "OGC:CRS84"), metadata.get("edges"))

    @property
    def is_geography(self) -> bool:
        """True for a geography (edges other than planar)."""
        return self.edges is not None


class _ConvertToArrow(_ConvertToArrowSchema):
    """pyiceberg's converter, with the engine's variant and WKB types."""

    def primitive(self, primitive: PrimitiveType) -> pa.DataType:
        if is_variant(primitive):
            return VARIANT_ARROW_TYPE
        return super().primitive(primitive)

    def visit_geometry(self, geometry_type: GeometryType) -> pa.DataType:
        return WkbType(geometry_type.crs)

    def visit_geography(self, geography_type: GeographyType) -> pa.DataType:
        return WkbType(geography_type.crs, geography_type.algorithm)


@overload
def schema_to_arrow(
    schema: Schema, metadata: dict[bytes, bytes] | None = None, include_field_ids: bool = True
) -> pa.Schema: ...


@overload
def schema_to_arrow(
    schema: IcebergType, metadata: dict[bytes, bytes] | None = None, include_field_ids: bool = True
) -> pa.DataType: ...


def schema_to_arrow(
    schema: Schema | IcebergType, metadata: dict[bytes, bytes] | None = None, include_field_ids: bool = True
) -> pa.Schema | pa.DataType:
    """The Arrow schema (or type) of an Iceberg schema (or type), as the module doc says."""
    return visit(schema, _ConvertToArrow(metadata or {}, include_field_ids))


def srid_of_crs(crs: str) -> int | None:
    """The SRID of an Iceberg CRS: OGC:CRS84 is 4326, ``EPSG:n`` and ``srid:n`` are n; None for other forms."""
    if crs.upper() == "OGC:CRS84":
        return 4326
    authority, _, code = crs.partition(":")
    if authority.upper() in ("EPSG", "SRID") and code.isdigit():
        return int(code)
    return None


def spark_geo_form(arrow_type: pa.DataType) -> tuple[str, int | None] | None:
    """(``"geometry"`` or ``"geography"``, the SRID its metadata names or None) for Spark 4.1+'s Arrow form of its
    geo types (a struct of ``srid`` and ``wkb``, the ``wkb`` field marked); None for any other type."""
    if not pa.types.is_struct(arrow_type) or {field.name for field in arrow_type} != {"srid", "wkb"}:
        return None
    marks = arrow_type.field("wkb").metadata or {}
    for kind in ("geometry", "geography"):
        if marks.get(kind.encode()) == b"true":
            srid = marks.get(b"srid", b"")
            return kind, int(srid) if srid.lstrip(b"-").isdigit() else None
    return None


def is_variant_arrow(arrow_type: pa.DataType) -> bool:
    """True for the engine's Arrow type of a variant (or any struct marked as one)."""
    return pa.types.is_struct(arrow_type) and any(
        field.name == "metadata" and field.metadata is not None and field.metadata.get(b"variant") == b"true"
        for field in arrow_type
    )


def is_variant_struct(arrow_type: pa.DataType) -> bool:
    """True for a struct of exactly a ``metadata`` and a ``value`` binary, marked as a variant or not: how Spark 4
    hands a variant over, and how a read on Spark 3.5 (which has no variant type) gives one back."""
    if not pa.types.is_struct(arrow_type) or {field.name for field in arrow_type} != {"metadata", "value"}:
        return False
    return all(pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type) for field in arrow_type)
