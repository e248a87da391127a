"""The SeaweedFS fixture: a real S3 API and Iceberg REST catalog, on loopback only, keys never on its command line."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from tests.support.object_store import SeaweedFS, catalog_env
from tests.support.services import listening_addresses

pytestmark = pytest.mark.s3


def test_it_listens_on_loopback_only_and_keeps_keys_off_its_command_line(seaweedfs: SeaweedFS) -> None:
    pid = seaweedfs.managed.process.pid
    addresses = listening_addresses(pid)
    assert f"127.0.0.1:{seaweedfs.ports['s3.port']}" in addresses
    assert f"127.0.0.1:{seaweedfs.ports['s3.port.iceberg']}" in addresses
    assert {address.split(":")[0] for address in addresses} == {"127.0.0.1"}, addresses
    command_line = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    assert seaweedfs.secret_key not in command_line
    assert "-master.telemetry=false" in command_line.split("\0")


def test_the_rest_catalog_commits_tables_whose_files_are_on_s3(seaweedfs: SeaweedFS) -> None:
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("fixture_check", **seaweedfs.rest_catalog_properties())
    catalog.create_namespace_if_not_exists("fixture_check")
    table = catalog.create_table("fixture_check.t", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    reloaded = load_catalog("fixture_check", **seaweedfs.rest_catalog_properties()).load_table("fixture_check.t")
    assert sorted(reloaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert reloaded.metadata_location.startswith("s3://lakehouse/")
    data_file = reloaded.inspect.files().column("file_path")[0].as_py()
    assert seaweedfs.filesystem().get_file_info(data_file.removeprefix("s3://")).size > 0
    catalog.drop_table("fixture_check.t")


def test_the_rest_catalog_refuses_a_wrong_credential(seaweedfs: SeaweedFS) -> None:
    from pyiceberg.catalog import load_catalog

    properties = {**seaweedfs.rest_catalog_properties(), "credential": f"{seaweedfs.access_key}:wrong"}
    with pytest.raises(Exception, match=r"(?i)unauthori|credential|invalid|denied|401|403"):
        load_catalog("fixture_wrong", **properties).list_namespaces()


def test_catalog_env_follows_pyiceberg_naming() -> None:
    from pyiceberg.utils.config import Config

    env = catalog_env("named", {"type": "rest", "s3.access-key-id": "k", "s3.path-style-access": "true"})
    assert env == {
        "PYICEBERG_CATALOG__NAMED__TYPE": "rest",
        "PYICEBERG_CATALOG__NAMED__S3__ACCESS_KEY_ID": "k",
        "PYICEBERG_CATALOG__NAMED__S3__PATH_STYLE_ACCESS": "true",
    }
    saved = dict(os.environ)
    try:
        os.environ.update(env)
        assert Config().get_catalog_config("named") == {
            "type": "rest",
            "s3.access-key-id": "k",
            "s3.path-style-access": "true",
        }
    finally:
        os.environ.clear()
        os.environ.update(saved)
