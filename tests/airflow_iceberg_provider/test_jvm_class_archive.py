"""The driver JVM's class-data archive: mapped when it exists, written once by a successful run, opt-in only."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_iceberg_provider.hooks.spark_job import SparkJobSubmitHook
from airflow_iceberg_provider.jvm_class_archive import (
    DRIVER_JAVA_OPTIONS_CONF,
    class_archive_conf,
    publish_class_archive,
)

USER_OPTIONS = {DRIVER_JAVA_OPTIONS_CONF: "-Duser.timezone=UTC"}


def test_nothing_changes_without_an_archive_in_cluster_mode_or_with_the_submission_s_own_sharing(tmp_path) -> None:
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"archive")
    assert class_archive_conf(USER_OPTIONS, True, None) == (USER_OPTIONS, None)
    assert class_archive_conf(USER_OPTIONS, False, str(archive)) == (USER_OPTIONS, None)
    own = {DRIVER_JAVA_OPTIONS_CONF: "-Xshare:off"}
    assert class_archive_conf(own, True, str(archive)) == (own, None)


def test_an_existing_archive_is_mapped_after_the_submission_s_own_options(tmp_path) -> None:
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"archive")
    conf, partial = class_archive_conf({**USER_OPTIONS, "spark.ui.enabled": "false"}, True, str(archive))
    assert partial is None
    assert conf == {
        DRIVER_JAVA_OPTIONS_CONF: f"-Duser.timezone=UTC -XX:SharedArchiveFile={archive}",
        "spark.ui.enabled": "false",
    }


def test_a_missing_archive_is_written_beside_it_and_renamed_into_place_only_after_success(tmp_path) -> None:
    archive = tmp_path / "cache" / "driver.jsa"
    conf, partial = class_archive_conf(USER_OPTIONS, True, str(archive))
    assert partial is not None and partial.parent == archive.parent and partial.name.startswith(".driver.jsa.")
    options = conf[DRIVER_JAVA_OPTIONS_CONF]
    assert options.startswith(f"-Duser.timezone=UTC -XX:ArchiveClassesAtExit={partial} ")
    assert "-Xlog:cds=error" in options  # the dump's messages would otherwise follow the result line
    _, second = class_archive_conf(USER_OPTIONS, True, str(archive))
    assert second is not None and second != partial  # concurrent first runs write apart

    partial.write_bytes(b"dumped")
    publish_class_archive(partial, str(archive), succeeded=False)
    assert not partial.exists() and not archive.exists()

    partial.write_bytes(b"dumped")
    publish_class_archive(partial, str(archive), succeeded=True)
    assert archive.read_bytes() == b"dumped" and not partial.exists()
    publish_class_archive(second, str(archive), succeeded=True)  # a run whose JVM wrote nothing changes nothing
    assert archive.read_bytes() == b"dumped"


def test_an_archive_path_that_would_split_the_options_is_quoted_as_one_word(tmp_path) -> None:
    folder = tmp_path / "spark cache" / 'it\'s \\ "here"'
    conf, partial = class_archive_conf(USER_OPTIONS, True, str(folder / "driver.jsa"))
    assert partial is not None
    words = shlex.split(conf[DRIVER_JAVA_OPTIONS_CONF])  # Spark's launcher splits the value with the same rules
    assert words[:2] == ["-Duser.timezone=UTC", f"-XX:ArchiveClassesAtExit={partial}"]

    (folder / "driver.jsa").write_bytes(b"archive")
    conf, _ = class_archive_conf(USER_OPTIONS, True, str(folder / "driver.jsa"))
    assert shlex.split(conf[DRIVER_JAVA_OPTIONS_CONF]) == [
        "-Duser.timezone=UTC",
        f"-XX:SharedArchiveFile={folder / 'driver.jsa'}",
    ]


@pytest.fixture
def archive_connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    archive = tmp_path / "driver.jsa"
    connection = {"conn_type": "spark", "host": "local[2]", "extra": {"class-data-archive": str(archive)}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_ARCHIVED", json.dumps(connection))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_PLAIN", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return archive


def test_the_hook_takes_the_archive_from_the_spark_connection_s_extra(archive_connection: Path) -> None:
    plain = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_plain"))
    assert not any("Archive" in part for part in plain.build_command("read.py"))

    hook = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_archived"))
    command = hook.build_command("read.py")
    assert hook.build_command("read.py") == command  # building the command again adds nothing
    options = next(part for part in command if part.startswith(DRIVER_JAVA_OPTIONS_CONF))
    assert "-Dlog4j2.configurationFile=" in options and "-XX:ArchiveClassesAtExit=" in options
    assert hook._class_archive_pending is not None
    partial = hook._class_archive_pending[0]
    partial.write_bytes(b"dumped")
    hook._publish_class_archive(succeeded=True)
    assert archive_connection.read_bytes() == b"dumped"

    again = SparkJobSubmitHook.from_hook(SparkSubmitHook(conn_id="spark_archived"))
    assert f"-XX:SharedArchiveFile={archive_connection}" in " ".join(again.build_command("read.py"))


# A Python application that starts no SparkContext: spark-submit's JVM (the driver JVM in local and client modes)
# still starts, launches it, and writes or maps the archive; the test stays a few seconds long.
APP = """\
import json
print(json.dumps({"status": "ok", "rows": 3}))
"""


@pytest.mark.spark
def test_a_real_driver_jvm_writes_the_archive_once_and_maps_it_after(monkeypatch, tmp_path: Path) -> None:
    from tests.support.airflow_env import path_with_spark_submit

    monkeypatch.setenv("PATH", path_with_spark_submit())
    archive = tmp_path / "class cache" / "driver.jsa"  # a space: the options must keep the path one word
    connection = {"conn_type": "spark", "host": "local[1]", "extra": {"class-data-archive": str(archive)}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_ARCHIVED", json.dumps(connection))
    app = tmp_path / "app.py"
    app.write_text(APP)
    for run, option in enumerate(("-XX:ArchiveClassesAtExit=", "-XX:SharedArchiveFile=")):
        hook = SparkJobSubmitHook(conn_id="spark_archived", conf={"spark.ui.enabled": "false"})
        assert option in " ".join(hook.build_command(str(app)))
        hook.submit(str(app))
        assert hook.job_output.result == {"status": "ok", "rows": 3}, run
        assert list(hook.job_output.tail)[-1].startswith("{"), run  # nothing of the JVM's follows the result
        assert not any("Unable to use shared archive" in line for line in hook.job_output.tail), run
        assert archive.is_file() and archive.stat().st_size > 1_000_000, run
        assert [path.name for path in archive.parent.iterdir()] == ["driver.jsa"], run


@pytest.mark.parametrize("plant", ["world-writable-folder", "archive-of-another-user", "archive-writable-by-others"])
def test_an_archive_another_user_could_write_is_neither_mapped_nor_written(tmp_path, plant, caplog) -> None:
    import os

    folder = tmp_path / "cache"
    folder.mkdir()
    archive = folder / "driver.jsa"
    if plant == "world-writable-folder":
        folder.chmod(0o1777)  # like /tmp: anyone could put a driver.jsa there first
    else:
        archive.write_bytes(b"archive")
        if plant == "archive-of-another-user":
            os.chown(archive, 65534, 65534)
        else:
            archive.chmod(0o666)
    conf, partial = class_archive_conf(USER_OPTIONS, True, str(archive))
    assert (conf, partial) == (USER_OPTIONS, None)
    assert "is not used" in caplog.text and str(archive) in caplog.text
