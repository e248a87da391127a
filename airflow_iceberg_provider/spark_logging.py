"""Spark's own logging for the provider's jobs: WARN unless asked, so a task's log holds the job's lines, not Spark's.

The one switch is Spark's own ``spark.log.level`` conf (Spark 3.5+): given (e.g. ``conf={"spark.log.level":
"INFO"}``), nothing here applies. Without it:
1. ``spark.log.level=WARN`` is added, which Spark applies as its SparkContext starts (the job does the same for a
   spark-submit that does not pass it, such as a plain ``SparkSubmitOperator``);
2. when the driver is spark-submit's own process (local or client deploy mode), the driver JVM also starts with a
   log4j2 configuration at WARN (``-Dlog4j2.configurationFile``), which silences the INFO lines Spark prints before
   its SparkContext applies the level. A driver option naming its own log4j configuration is left alone. The file
   lives in this user's private folder and is checked (owner, mode, content) before each use
   (``private_files``): the JVM would load whatever appenders it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from airflow_iceberg_provider.private_files import PROVIDER_FOLDER, private_directory, private_file

SPARK_LOG_LEVEL_CONF = "spark.log.level"
DEFAULT_SPARK_LOG_LEVEL = "WARN"
DRIVER_JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"
LOG4J2_FILE_NAME = "spark-log4j2-warn.properties"
# Spark's log4j2-defaults.properties at WARN: same console format, on stderr.
LOG4J2_PROPERTIES = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def log4j2_configuration() -> Path:
    """The WARN log4j2 configuration as a file the driver JVM can read, in this user's private folder (the one of
    the engine zip): reused when it is this user's, writable by no one else and unchanged, else written anew
    (``private_files``), so no other local user chooses the driver's log appenders."""
    return private_file(private_directory(PROVIDER_FOLDER), LOG4J2_FILE_NAME, LOG4J2_PROPERTIES.encode())


def quiet_spark_conf(conf: Mapping[str, str] | None, driver_is_local: bool) -> dict[str, str]:
    """``conf`` with Spark's logging at WARN (module doc), unless it sets ``spark.log.level`` itself."""
    quiet = dict(conf or {})
    if SPARK_LOG_LEVEL_CONF in quiet:
        return quiet
    quiet[SPARK_LOG_LEVEL_CONF] = DEFAULT_SPARK_LOG_LEVEL
    options = str(quiet.get(DRIVER_JAVA_OPTIONS_CONF, ""))
    if driver_is_local and "log4j" not in options:
        quiet[DRIVER_JAVA_OPTIONS_CONF] = f"{options} -Dlog4j2.configurationFile=file:{log4j2_configuration()}".strip()
    return quiet
