"""Table and namespace names: control characters refused everywhere; a new table's names checked against the limits
of the storage that will hold it (bytes, not characters) before the namespace or any file exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.names import check_name_parts, check_new_table_name


@pytest.mark.parametrize("bad", ["\x01", "\n", "\t", "\x7f", "\u2028", "\x9b"], ids=repr)
@pytest.mark.parametrize("where", ["namespace", "table"])
def test_a_control_character_in_any_part_is_refused(bad: str, where: str) -> None:
    parts = (f"ns{bad}", "t") if where == "namespace" else ("ns", f"t{bad}")
    with pytest.raises(UserInputError, match=f"U\\+{ord(bad):04X}") as raised:
        check_name_parts(parts)
    assert raised.value.argument == "table"
    assert f"the {where} name {(parts[0] if where == 'namespace' else parts[1])!r}" in str(raised.value)
    assert bad not in str(raised.value)  # shown escaped: the line stays one line


def test_printable_names_of_any_script_are_accepted() -> None:
    check_name_parts(("zone_été", "ventes-2024 (eu)"))


def _catalog(tmp_path: Path, warehouse: str) -> SqlCatalog:
    return SqlCatalog("names", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=warehouse)


def test_a_table_name_longer_than_the_file_system_takes_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = _catalog(tmp_path, f"file://{warehouse}")
    with pytest.raises(UserInputError, match="300 bytes as a folder, longer than the 255 bytes") as raised:
        check_new_table_name(catalog, "ns." + "t" * 300)
    assert raised.value.argument == "table" and len(str(raised.value)) < 280
    check_new_table_name(catalog, "ns." + "t" * 255)
    assert catalog.list_namespaces() == [] and list(warehouse.iterdir()) == []


def test_lengths_are_bytes_not_characters(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, f"file://{tmp_path}")
    check_new_table_name(catalog, "ns." + "é" * 127)  # 254 bytes
    with pytest.raises(UserInputError, match="256 bytes"):
        check_new_table_name(catalog, "ns." + "é" * 128)


def test_the_namespace_folder_counts_its_db_suffix(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, f"file://{tmp_path}")
    with pytest.raises(UserInputError, match="namespace"):
        check_new_table_name(catalog, "n" * 253 + ".t")


def test_a_location_too_deep_for_the_table_s_files_is_refused(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, f"file://{tmp_path}")
    deep = "/".join(["d" * 200] * 20)  # 4,019 characters: no room left under PATH_MAX for metadata/snap-....avro
    catalog.create_namespace("ns", {"location": f"file://{tmp_path}/{deep}"})
    with pytest.raises(UserInputError, match="leaves too little room"):
        check_new_table_name(catalog, "ns.t")


def test_an_object_store_key_is_at_most_1024_bytes(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, "s3://warehouse/lake")
    check_new_table_name(catalog, "ns." + "t" * 700)
    with pytest.raises(UserInputError, match="object store takes paths of at most"):
        check_new_table_name(catalog, "ns." + "t" * 900)


def test_a_catalog_that_chooses_locations_itself_gets_the_common_limit(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, "lakehouse")  # a REST catalog's warehouse is a name, not a location
    with pytest.raises(UserInputError, match="longer than the 255 bytes"):
        check_new_table_name(catalog, "ns." + "t" * 256)
