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
