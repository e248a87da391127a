"""spark-submit for a ``spark_jobs`` entry point: SparkSubmitHook, plus the job's result and error line captured.

Built on ``spark_submit_compat.SubmitHookSeam``, the one module that touches the Spark provider's private API.

SparkSubmitHook streams the merged stdout/stderr of spark-submit into the task log line by line; this hook reads the
same lines on the way (nothing is read twice or buffered whole) into a ``JobOutput``. In client deploy modes (local,
standalone client, YARN client, Kubernetes client) the driver's output is spark-submit's output, so the result is
available; in cluster deploy modes the driver prints on the cluster and ``job_output.result`` stays ``None``.

``job_env`` (the catalog's ``PYICEBERG_CATALOG__*`` variables) reaches the driver without touching argv where the
driver is spark-submit's own process (every client deploy mode, YARN and Kubernetes included: SparkSubmitHook would
also copy ``env_vars`` into ``spark.yarn.appMasterEnv.*`` / ``spark.kubernetes.driverEnv.*`` confs). In YARN or
Kubernetes cluster deploy mode, where the driver starts on the cluster, it travels as those confs, written to a
private properties file (mode 0600, removed when spark-submit ends) instead of the command line: the file starts
with the caller's ``properties_file`` or, without one, the ``spark-defaults.conf`` spark-submit would have read.
``secrets`` (the catalog's secret strings) are masked in the logged command and in error messages, whatever their
property names.

Spark's own logging is at WARN unless the submission sets ``spark.log.level`` (``spark_logging``). A Spark
connection whose extra names a ``class-data-archive`` has the driver JVM map (or, once, write) that class-data
archive (``jvm_class_archive``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from airflow_iceberg_provider.credentials import mask_text
from airflow_iceberg_provider.hooks.spark_submit_compat import SubmitHookSeam
from airflow_iceberg_provider.job_output import JobOutput
from airflow_iceberg_provider.jvm_class_archive import CONNECTION_EXTRA, class_archive_conf, publish_class_archive
from airflow_iceberg_provider.links import spark_link_in
from airflow_iceberg_provider.spark_logging import quiet_spark_conf

# Called with (link class, URL) when the output announces a link (the Spark UI, a YARN tracking page).
LinkListener = Callable[[type, str], None]


class SparkJobSubmitHook(SubmitHookSeam):
    """SparkSubmitHook that also captures the job's final JSON line, its ``error:`` line and its exit code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reset_job_state()

    def reset_job_state(self) -> None:
        """No output read yet, no catalog environment, no secrets, no link listener."""
        self.job_output = JobOutput()
        self.job_env: dict[str, str] = {}
        self.secrets: set[str] = set()
        self._job_properties_file: str | None = None
        # The class-data archive this run's driver JVM writes (partial file) and where it goes on success.
        self._class_archive_pending: tuple[Path, str] | None = None
        self.on_link: LinkListener | None = None

    @property
    def runs_driver_locally(self) -> bool:
        """Whether the driver is spark-submit's own process (local or client deploy mode), so its output is ours."""
        return self.deploy_mode != "cluster"

    def class_data_archive(self) -> str | None:
        """The class-data archive the Spark connection's extra names for the driver JVM, if any."""
        try:
            extra = self.get_connection(self.conn_id).extra_dejson
        except Exception:  # no such connection: SparkSubmitHook runs on its defaults, and so does this
            return None
        value = extra.get(CONNECTION_EXTRA)
        return str(value) if value else None

    def common_arguments(self, build: Callable[[], list[str]]) -> list[str]:
        """SparkSubmitHook's arguments with quiet logging, the class-data archive and the job's environment."""
        self.spark_conf = quiet_spark_conf(self.spark_conf, self.runs_driver_locally)
        archive = self.class_data_archive()
        self.spark_conf, partial = class_archive_conf(self.spark_conf, self.runs_driver_locally, archive)
        if partial is not None and archive is not None:
            self._class_archive_pending = (partial, archive)
        if not self.job_env:
            return build()
        if self.runs_driver_locally:
            arguments = build()
            # submit() starts spark-submit with os.environ updated by the submit environment.
            self.submit_env = {**(self.submit_env or {}), **self.job_env}
            return arguments
        if not (self.is_yarn or self.is_kubernetes):
            # Standalone cluster mode has no driver environment; SparkSubmitHook says so for env_vars.
            user_env_vars = self.driver_env_vars
            self.driver_env_vars = {**(user_env_vars or {}), **self.job_env}
            try:
                return build()
            finally:
                self.driver_env_vars = user_env_vars
        prefix = "spark.yarn.appMasterEnv." if self.is_yarn else "spark.kubernetes.driverEnv."
        user_properties_file = self.properties_file
        self.remove_job_properties_file()
        self._job_properties_file = _private_properties_file(
            user_properties_file or _spark_defaults_file(), {prefix + k: v for k, v in self.job_env.items()}
        )
        self.properties_file = self._job_properties_file
        try:
            return build()
        finally:
            self.properties_file = user_properties_file

    def submit(self, application: str = "", **kwargs: Any) -> str | None:
        """spark-submit, then remove the private properties file (cluster deploy mode) whatever happened, and
        publish or delete the class-data archive the driver JVM wrote."""
        succeeded = False
        try:
            result = super().submit(application, **kwargs)
            succeeded = True
            return result
        finally:
            self.remove_job_properties_file()
            self._publish_class_archive(succeeded)

    def _publish_class_archive(self, succeeded: bool) -> None:
        pending, self._class_archive_pending = self._class_archive_pending, None
        if pending is not None:
            publish_class_archive(*pending, succeeded)

    def remove_job_properties_file(self) -> None:
        """Remove the private properties file of a cluster-mode submission, if one was written."""
        if self._job_properties_file is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._job_properties_file)
            self._job_properties_file = None

    def masked_command(self, masked: str) -> str:
        """The logged command with the catalog's secrets masked too, whatever their property names."""
        return mask_text(masked, self.secrets)

    def submit_environment(self) -> dict[str, str]:
        """The environment spark-submit starts with (after the command was built), for tests and diagnostics."""
        return {**os.environ, **(self.submit_env or {})}

    def output_lines(self, lines: Iterator[Any]) -> Iterator[Any]:
        """Each line on its way to the log, recorded into ``job_output``; links announced once per kind."""
        announced: set[type] = set()
        for line in lines:
            self.job_output.add_line(str(line))
            link = spark_link_in(str(line))
            if link is not None and self.on_link is not None and link[0] not in announced:
                announced.add(link[0])
                self.on_link(*link)
            yield line

    @property
    def exit_code(self) -> int | None:
        """spark-submit's exit code once it has finished (``None`` before)."""
        process = self.submit_process
        return None if process is None else process.returncode


def _spark_defaults_file() -> str | None:
    """The spark-defaults.conf spark-submit reads when no properties file is given (if there is one)."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        str(Path(os.environ["SPARK_HOME"]) / "conf") if os.environ.get("SPARK_HOME") else None
    )
    candidate = Path(conf_dir) / "spark-defaults.conf" if conf_dir else None
    return str(candidate) if candidate is not None and candidate.is_file() else None


def _private_properties_file(base: str | None, entries: dict[str, str]) -> str:
    """A new properties file readable by this user only: ``base``'s lines, then ``entries`` (Java escaping)."""
    descriptor, path = tempfile.mkstemp(prefix="iceberg-job-", suffix=".conf")
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        if base is not None:
            stream.write(Path(base).read_text(encoding="utf-8").rstrip("\n") + "\n")
        for key, value in entries.items():
            stream.write(f"{_escape(key, key=True)}={_escape(value)}\n")
    return path


def _escape(text: str, *, key: bool = False) -> str:
    """``text`` for a Java properties file (``java.util.Properties.load``)."""
    escaped = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        escaped = escaped.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
    elif escaped.startswith((" ", "\f")):
        escaped = "\\" + escaped
    return escaped
