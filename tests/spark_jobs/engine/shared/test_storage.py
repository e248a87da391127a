"""Files outside a table on a real S3 (SeaweedFS): listing as Spark lists, and failures as one line without secrets."""

from __future__ import annotations

import pytest

from spark_jobs.engine.shared.storage import (
    StorageAccessError,
    StorageUnavailableError,
    file_io_properties,
    list_files,
)
from tests.support.object_store import SeaweedFS
from tests.support.services import free_port

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def source_files(seaweedfs: SeaweedFS) -> str:
    filesystem = seaweedfs.filesystem()
    for name in ("a/1.csv", "a/2.csv", "a/_SUCCESS", "a/.hidden/3.csv", "a/sub/4.csv", "a/5.json"):
        with filesystem.open_output_stream(f"landing/storage_test/{name}") as stream:
            stream.write(b"x\n")
    return "s3://landing/storage_test"


def test_a_directory_lists_its_visible_files_recursively(seaweedfs: SeaweedFS, source_files: str) -> None:
    found = list_files(source_files + "/a/", seaweedfs.s3_properties())
    assert [f.uri for f in found] == [
        f"{source_files}/a/1.csv",
        f"{source_files}/a/2.csv",
        f"{source_files}/a/5.json",
        f"{source_files}/a/sub/4.csv",
    ]
    assert all(f.size == 2 for f in found)


def test_a_glob_matches_within_one_path_component_and_s3a_is_s3(seaweedfs: SeaweedFS, source_files: str) -> None:
    found = list_files(source_files.replace("s3://", "s3a://") + "/a/*.csv", seaweedfs.s3_properties())
    assert [f.uri.rsplit("/", 1)[-1] for f in found] == ["1.csv", "2.csv"]
    single = list_files(source_files + "/a/5.json", seaweedfs.s3_properties())
    assert [f.path for f in single] == ["landing/storage_test/a/5.json"]


def test_wrong_keys_are_bad_input_naming_bucket_and_endpoint_never_the_secret(
    seaweedfs: SeaweedFS, source_files: str
) -> None:
    wrong = {**seaweedfs.s3_properties(), "s3.secret-access-key": "not-the-secret-123"}
    with pytest.raises(StorageAccessError) as raised:
        list_files(source_files + "/a/", wrong)
    message = str(raised.value)
    assert "access denied" in message and "'landing'" in message and seaweedfs.s3_endpoint in message
    assert "not-the-secret-123" not in message and seaweedfs.secret_key not in message
    assert "\n" not in message


def test_a_missing_bucket_or_path_is_bad_input(seaweedfs: SeaweedFS) -> None:
    with pytest.raises(StorageAccessError, match="bucket does not exist"):
        list_files("s3://no-such-bucket/x/", seaweedfs.s3_properties())
    with pytest.raises(StorageAccessError, match="does not exist"):
        list_files("s3://landing/storage_test/missing/", seaweedfs.s3_properties())


def test_an_unreachable_endpoint_is_retryable() -> None:
    properties = {
        "s3.endpoint": f"http://127.0.0.1:{free_port()}",
        "s3.region": "us-east-1",
        "s3.access-key-id": "k",
        "s3.secret-access-key": "s",
        "s3.connect-timeout": "2",
    }
    with pytest.raises(StorageUnavailableError, match="unavailable") as raised:
        list_files("s3://landing/x/", properties)
    assert properties["s3.endpoint"] in str(raised.value)


def test_file_io_properties_keep_storage_settings_only() -> None:
    properties = {
        "s3.endpoint": "http://e",
        "credential": "id:secret",
        "token": "t",
        "auth.manager": object(),
        "warehouse": "s3://w/",
    }
    assert file_io_properties(properties) == {
        "s3.endpoint": "http://e",
        "warehouse": "s3://w/",
        "s3.retry-strategy-impl": "spark_jobs.engine.shared.storage.PatientS3RetryStrategy",
    }
