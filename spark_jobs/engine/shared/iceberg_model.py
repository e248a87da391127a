"""pyiceberg's metadata model, completed where format v3 outgrew it: the ``variant`` type, and the schemas as Java
wrote them.

pyiceberg 0.12 models every type of format v3 but ``variant`` (a table with one fails to load with "Unsupported
field type: 'variant'"), and it writes a schema from its model, not as it was read: ``geometry(OGC:CRS84)`` comes
out as ``geometry``, a timestamp default with six fraction digits. ``register`` (called once per process by the
``spark_jobs`` package and by the Airflow side's catalog hook, before either parses any metadata) builds on
pyiceberg's public classes, never a copy of them:

1. ``VariantType`` is a primitive type of pyiceberg's model whose JSON is ``"variant"``. pyiceberg resolves a
   field's type name through ``IcebergType.handle_primitive_type`` (looked up at each call) and a list's element or
   a map's key and value in their constructors; wrapping those three teaches every parser of schemas the name
   (metadata files, REST responses, shipped read schemas), at any depth. The same wrapper reads the geo types as
   the spec and Java write them, ``geometry(C)`` and ``geography(C, A)`` with bare parameters (pyiceberg parses
   only quoted ones).
2. Default values of the nanosecond timestamp types, which pyiceberg's JSON single-value conversions lack (such a
   table fails to load): registered with its ``from_json`` / ``to_json`` as nanoseconds from the epoch, written as
   Java writes them (ISO-8601, the fraction without trailing zeros, ``+00:00`` for timestamptz_ns).
3. pyiceberg's metadata file parser is wrapped to remember, for format v3, the text of every schema it parsed, by
   table uuid and schema id (a schema never changes once added; at most ``_TABLES_REMEMBERED`` tables per
   process). ``schema_text`` gives it back to the v3 metadata writer (``commit.format_v3``), which writes those
   schemas exactly as they were read, so a commit of ours leaves what Java wrote byte for byte.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, Literal

from pydantic import Field
from pyiceberg.conversions import from_json, to_json
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil
from pyiceberg.types import (
    DEFAULT_GEOGRAPHY_ALGORITHM,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    TimestampNanoType,
    TimestamptzNanoType,
)

_TABLES_REMEMBERED = 256
_schema_texts: OrderedDict[str, dict[int, str]] = OrderedDict()
_lock = threading.Lock()
_registered = False


class VariantType(PrimitiveType):
    """Iceberg's ``variant`` (format v3): semi-structured values in the Parquet Variant encoding."""

    root: Literal["variant"] = Field(default="variant")

    def minimum_format_version(self) -> Literal[3]:
        """Variant columns need format version 3."""
        return 3


def is_variant(iceberg_type: IcebergType) -> bool:
    """True for the ``variant`` type."""
    return isinstance(iceberg_type, VariantType)


def register() -> None:
    """Complete pyiceberg's model (module doc); idempotent, safe to call from any thread."""
    global _registered  # noqa: PLW0603 - one registration per process
    with _lock:
        if _registered:
            return
        _register_variant_type()
        _register_nanosecond_defaults()
        _remember_schema_texts_on_parse()
        _registered = True


def schema_text(table_uuid: str, schema_id: int) -> str | None:
    """The JSON text of schema ``schema_id`` of table ``table_uuid`` as its metadata file held it, if parsed here."""
    with _lock:
        return _schema_texts.get(table_uuid, {}).get(schema_id)


def _register_variant_type() -> None:
    handle_type_name: Callable[[Any, Any], IcebergType] = IcebergType.handle_primitive_type  # type: ignore[assignment]

    def handle_primitive_type(cls: type, value: Any, handler: Any) -> IcebergType:
        if value == "variant":
            return VariantType()
        geo_type = _geo_type_named(value) if isinstance(value, str) else None
        if geo_type is not None:
            return geo_type
        return handle_type_name(value, handler)

    IcebergType.handle_primitive_type = classmethod(handle_primitive_type)  # type: ignore[assignment,method-assign]
    _resolve_type_names_in(ListType, ("element", "element_type"))
    _resolve_type_names_in(MapType, ("key", "key_type", "value", "value_type"))


_GEO_TYPE_NAME = re.compile(r"(geometry|geography)\(\s*([^,'\"()]+?)\s*(?:,\s*([^,'\"()]+?)\s*)?\)")


def _geo_type_named(name: str) -> IcebergType | None:
    """``geometry(C)`` / ``geography(C[, A])`` with bare parameters, as the spec and Java write them; else None."""
    match = _GEO_TYPE_NAME.fullmatch(name.strip())
    if match is None:
        return None
    kind, crs, algorithm = match.groups()
    if kind == "geometry":
        return GeometryType(crs) if algorithm is None else None
    return GeographyType(crs, algorithm or DEFAULT_GEOGRAPHY_ALGORITHM)


def _resolve_type_names_in(model: type, arguments: tuple[str, ...]) -> None:
    """Wrap ``model``'s constructor so that a type name among ``arguments`` is resolved by the wrapped parser."""
    construct: Callable[..., None] = model.__init__  # type: ignore[misc]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - the constructor it replaces
        for name in arguments:
            if isinstance(kwargs.get(name), str):
                kwargs[name] = IcebergType.handle_primitive_type(kwargs[name], None)  # type: ignore[operator]
        construct(self, *args, **kwargs)

    model.__init__ = __init__  # type: ignore[misc]


def _register_nanosecond_defaults() -> None:
    from_json.register(TimestampNanoType)(lambda _, value: _nanos_from_iso(value, with_zone=False))
    from_json.register(TimestamptzNanoType)(lambda _, value: _nanos_from_iso(value, with_zone=True))
    to_json.register(TimestampNanoType)(lambda _, value: _iso_from_nanos(value, with_zone=False))
    to_json.register(TimestamptzNanoType)(lambda _, value: _iso_from_nanos(value, with_zone=True))


_ISO_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _nanos_from_iso(value: Any, *, with_zone: bool) -> int:
    """Nanoseconds from the epoch of an ISO-8601 timestamp with up to nine fraction digits (or an int as it is)."""
    if isinstance(value, int):
        return value
    match = _ISO_TIMESTAMP.fullmatch(str(value).strip())
    if match is None:
        raise ValueError(f"not an ISO-8601 timestamp with nanoseconds: {value!r}")
    whole, fraction, zone = match.groups()
    moment = dt.datetime.fromisoformat(whole + (zone or "+00:00").replace("Z", "+00:00"))
    if with_zone != (zone is not None):
        raise ValueError(f"timestamp {value!r} {'lacks' if with_zone else 'has'} a zone offset")
    seconds = (moment - _EPOCH) // dt.timedelta(seconds=1)
    return seconds * 1_000_000_000 + int((fraction or "0").ljust(9, "0"))


def _iso_from_nanos(nanos: int, *, with_zone: bool) -> str:
    """Java's ISO-8601 text of nanoseconds from the epoch."""
    seconds, fraction = divmod(nanos, 1_000_000_000)
    text = (_EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    if fraction:
        text += "." + f"{fraction:09d}".rstrip("0")
    return text + ("+00:00" if with_zone else "")


def _remember_schema_texts_on_parse() -> None:
    parse_raw = TableMetadataUtil.parse_raw

    def parse_raw_remembering_schemas(data: str) -> TableMetadata:
        metadata = parse_raw(data)
        if metadata.format_version >= 3:
            _remember(str(metadata.table_uuid), data if isinstance(data, str) else bytes(data).decode())
        return metadata

    TableMetadataUtil.parse_raw = staticmethod(parse_raw_remembering_schemas)  # type: ignore[method-assign]


def _remember(table_uuid: str, text: str) -> None:
    texts = dict(_schemas_in(text))
    with _lock:
        known = _schema_texts.setdefault(table_uuid, {})
        known.update(texts)
        _schema_texts.move_to_end(table_uuid)
        while len(_schema_texts) > _TABLES_REMEMBERED:
            _schema_texts.popitem(last=False)


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _schemas_in(text: str) -> Iterator[tuple[int, str]]:
    """(schema id, exact text) of each entry of the metadata's ``schemas`` list."""
    start = _skip_whitespace(text, 0)
    for key, value_start, _ in _members(text, start):
        if key != "schemas":
            continue
        for item_start, item_end in _items(text, value_start):
            schema_id = json.loads(text[item_start:item_end]).get("schema-id")
            if isinstance(schema_id, int):
                yield schema_id, text[item_start:item_end]


def _skip_whitespace(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _members(text: str, start: int) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) of each member of the JSON object at ``text[start]``."""
    if text[start] != "{":
        return
    index = _skip_whitespace(text, start + 1)
    while text[index] == '"':
        key, index = scanstring(text, index + 1)
        index = _skip_whitespace(text, index)
        index = _skip_whitespace(text, index + 1)  # past ':'
        _, end = _DECODER.raw_decode(text, index)
        yield key, index, end
        index = _skip_whitespace(text, end)
        if text[index] != ",":
            return
        index = _skip_whitespace(text, index + 1)


def _items(text: str, start: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each item of the JSON array at ``text[start]``."""
    if text[start] != "[":
        return
    index = _skip_whitespace(text, start + 1)
    if text[index] == "]":
        return
    while True:
        _, end = _DECODER.raw_decode(text, index)
        yield index, end
        index = _skip_whitespace(text, end)
        if text[index] != ",":
            return
        index = _skip_whitespace(text, index + 1)
