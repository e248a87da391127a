"""Spark's own logging at WARN for the provider's submissions, unless the submission sets spark.log.level."""

from __future__ import annotations

from pathlib import Path

from airflow_iceberg_provider.spark_logging import log4j2_configuration, quiet_spark_conf


def test_warn_by_default_and_a_log4j2_file_for_a_local_driver() -> None:
    conf = quiet_spark_conf({"spark.driver.extraJavaOptions": "-Dx=1"}, driver_is_local=True)
    assert conf["spark.log.level"] == "WARN"
    options = conf["spark.driver.extraJavaOptions"]
    assert options.startswith("-Dx=1 -Dlog4j2.configurationFile=file:")
    path = Path(options.split("file:", 1)[1])
    assert "rootLogger.level = warn" in path.read_text()
    assert path == log4j2_configuration()


def test_the_switch_and_a_cluster_driver_and_an_own_log4j_configuration_are_respected() -> None:
    assert quiet_spark_conf({"spark.log.level": "INFO"}, driver_is_local=True) == {"spark.log.level": "INFO"}
    assert quiet_spark_conf(None, driver_is_local=False) == {"spark.log.level": "WARN"}
    own = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"}
    assert (
        quiet_spark_conf(own, driver_is_local=True)["spark.driver.extraJavaOptions"]
        == own["spark.driver.extraJavaOptions"]
    )


def test_the_log4j2_file_is_this_user_s_private_file_even_when_another_user_planted_one(tmp_path, monkeypatch) -> None:
    import os
    import stat
    import tempfile

    from airflow_iceberg_provider.spark_logging import LOG4J2_PROPERTIES

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tmp_path.chmod(0o1777)
    nobody = 65534
    # Another user's world-writable folders where a fixed path would look: the old shared one and this user's name.
    for planted in (tmp_path / "airflow_iceberg_provider", tmp_path / f"airflow-iceberg-provider-{os.getuid()}"):
        planted.mkdir()
        (planted / "spark-log4j2-warn.properties").write_text(LOG4J2_PROPERTIES)  # the right content, not ours
        os.chown(planted / "spark-log4j2-warn.properties", nobody, nobody)
        os.chown(planted, nobody, nobody)
        planted.chmod(0o777)
    path = log4j2_configuration()
    assert path.read_text() == LOG4J2_PROPERTIES
    folder, file = path.parent.lstat(), path.lstat()
    assert folder.st_uid == os.getuid() and stat.S_IMODE(folder.st_mode) == 0o700
    assert file.st_uid == os.getuid() and stat.S_ISREG(file.st_mode) and not stat.S_IMODE(file.st_mode) & 0o022
    assert quiet_spark_conf(None, driver_is_local=True)["spark.driver.extraJavaOptions"].endswith(f"file:{path}")
