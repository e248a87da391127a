"""Which FileIO settings the HEAD-less ranged reader honours, and how it maps them (no object store needed)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from spark_jobs.engine.shared.object_ranges import SizedObjectFile, object_store_for, store_settings

KEYS = {"s3.access-key-id": "AKID", "s3.secret-access-key": "SECRET"}


def test_keys_endpoint_and_client_settings_map_to_obstore(monkeypatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    properties = {
        **KEYS,
        "s3.session-token": "TOKEN",
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.force-virtual-addressing": "true",
        "s3.connect-timeout": "2.5",
        "s3.request-timeout": "30",
        "s3.proxy-uri": "http://proxy:3128",
    }
    settings = store_settings(properties, "bucket")
    assert settings == {
        "bucket": "bucket",
        "config": {
            "region": "us-east-1",
            "endpoint": "http://127.0.0.1:9000",
            "skip_signature": False,
            "virtual_hosted_style_request": True,
        },
        "client_options": {
            "allow_http": True,
            "proxy_url": "http://proxy:3128",
            "connect_timeout": timedelta(seconds=2.5),
            "timeout": timedelta(seconds=30),
        },
        "credentials": {"access_key_id": "AKID", "secret_access_key": "SECRET", "token": "TOKEN"},
    }


def test_client_keys_region_and_anonymous_access() -> None:
    settings = store_settings(
        {"client.access-key-id": "A", "client.secret-access-key": "S", "client.region": "eu-west-1"}, "b"
    )
    assert settings is not None
    assert settings["config"] == {"region": "eu-west-1", "skip_signature": False, "virtual_hosted_style_request": False}
    assert settings["credentials"] == {"access_key_id": "A", "secret_access_key": "S", "token": None}
    anonymous = store_settings({"s3.anonymous": "true", "s3.region": "us-west-2"}, "b")
    assert anonymous is not None and anonymous["config"]["skip_signature"] is True
    assert anonymous["credentials"] is None


@pytest.mark.parametrize(
    "extra",
    [
        {"s3.role-arn": "arn:aws:iam::1:role/r"},
        {"client.profile-name": "dev"},
        {"s3.signer.uri": "https://catalog"},
        {"s3.resolve-region": "true"},
    ],
)
def test_settings_only_pyarrow_honours_keep_pyarrow(extra: dict[str, str]) -> None:
    assert store_settings({**KEYS, "s3.region": "us-east-1", **extra}, "b") is None


def test_no_credentials_or_no_region_keep_pyarrow(monkeypatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    assert store_settings({"s3.region": "us-east-1"}, "b") is None  # the SDK's chain (profile, instance role)
    assert store_settings(KEYS, "b") is None  # pyarrow resolves the bucket's region
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET")
    settings = store_settings({"s3.region": "us-east-1"}, "b")
    assert settings is not None and settings["credentials"]["access_key_id"] == "ENVKEY"


def test_only_s3_paths_of_a_pyarrow_file_io_get_a_store() -> None:
    io = PyArrowFileIO({**KEYS, "s3.endpoint": "http://127.0.0.1:1"})
    found = object_store_for(io, "s3a://bucket/warehouse/t/data/f.parquet")
    assert found is not None and found[1] == "warehouse/t/data/f.parquet"
    assert object_store_for(io, "s3://bucket/other.parquet")[0] is found[0]  # one store per bucket and settings
    assert object_store_for(io, "gs://bucket/f.parquet") is None
    assert object_store_for(io, "/tmp/f.parquet") is None
    assert SizedObjectFile.open(io, "s3://bucket/f.parquet", 0) is None


def test_seek_and_read_stay_within_the_recorded_size() -> None:
    reads: list[tuple[int, int]] = []

    class Recording(SizedObjectFile):
        def get(self, offset: int, length: int) -> bytes:
            reads.append((offset, length))
            return bytes(length)

    file = Recording(store=None, key="k", size=100, path="s3://b/k", endpoint=None)
    assert file.seek(-10, 2) == 90 and len(file.read(64)) == 10 and file.tell() == 100
    assert file.read() == b"" and file.read_at(5, 98) == bytes(2)
    file.seek(0)
    assert len(file.read()) == 100
    assert reads == [(90, 10), (98, 2), (0, 100)]


def test_without_obstore_installed_reads_keep_pyarrow(monkeypatch) -> None:
    import sys

    from spark_jobs.engine.shared.object_ranges import clear_stores

    clear_stores()
    monkeypatch.setitem(sys.modules, "obstore.store", None)  # import fails, as on an executor without it
    io = PyArrowFileIO({**KEYS, "s3.endpoint": "http://127.0.0.1:1"})
    assert object_store_for(io, "s3://bucket/f.parquet") is None
    assert SizedObjectFile.open(io, "s3://bucket/f.parquet", 100) is None
