"""spark-submit for a ``spark_jobs`` entry point: SparkSubmitHook, plus the job's result and error line captured.

SparkSubmitHook streams the merged stdout/stderr of spark-submit into the task log line by line; this hook reads the
same lines on the way (nothing is read twice or buffered whole) into a ``JobOutput``. In client deploy modes (local,
standalone client, YARN client, Kubernetes client) the driver's output is spark-submit's output, so the result is
available; in cluster deploy modes the driver prints on the cluster and ``job_output.result`` stays ``None``.

``job_env`` (the catalog's ``PYICEBERG_CATALOG__*`` variables) reaches the driver without touching argv where the
driver is spark-submit's own process (every client deploy mode, YARN and Kubernetes included: SparkSubmitHook would
also copy ``env_vars`` into ``spark.yarn.appMasterEnv.*`` / ``spark.kubernetes.driverEnv.*`` confs). Only in YARN or
Kubernetes cluster deploy mode, where the driver starts on the cluster, does it travel as those confs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_iceberg_provider.job_output import JobOutput


class SparkJobSubmitHook(SparkSubmitHook):
    """SparkSubmitHook that also captures the job's final JSON line, its ``error:`` line and its exit code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.job_output = JobOutput()
        self.job_env: dict[str, str] = {}

    @classmethod
    def from_hook(cls, hook: SparkSubmitHook) -> SparkJobSubmitHook:
        """This hook with every setting of ``hook`` (as SparkSubmitOperator built it, whatever its version)."""
        job_hook = cls.__new__(cls)
        job_hook.__dict__.update(hook.__dict__)
        job_hook.job_output = JobOutput()
        job_hook.job_env = {}
        return job_hook

    @property
    def runs_driver_locally(self) -> bool:
        """Whether the driver is spark-submit's own process (local or client deploy mode), so its output is ours."""
        return self._connection.get("deploy_mode") != "cluster"

    def _build_spark_common_args(self) -> list[str]:
        if not self.job_env:
            return super()._build_spark_common_args()
        if self.runs_driver_locally:
            arguments = super()._build_spark_common_args()
            # submit() starts spark-submit with os.environ updated by self._env.
            self._env = {**(self._env or {}), **self.job_env}
            return arguments
        user_env_vars = self._env_vars
        self._env_vars = {**(user_env_vars or {}), **self.job_env}
        try:
            return super()._build_spark_common_args()
        finally:
            self._env_vars = user_env_vars

    def submit_environment(self) -> dict[str, str]:
        """The environment spark-submit starts with (after the command was built), for tests and diagnostics."""
        return {**os.environ, **(self._env or {})}

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self._recorded(itr))

    def _recorded(self, itr: Iterator[Any]) -> Iterator[Any]:
        for line in itr:
            self.job_output.add_line(str(line))
            yield line

    @property
    def exit_code(self) -> int | None:
        """spark-submit's exit code once it has finished (``None`` before)."""
        process = getattr(self, "_submit_sp", None)
        return None if process is None else process.returncode
