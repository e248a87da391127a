"""spark-submit for a ``spark_jobs`` entry point: SparkSubmitHook, plus the job's result and error line captured.

SparkSubmitHook streams the merged stdout/stderr of spark-submit into the task log line by line; this hook reads the
same lines on the way (nothing is read twice or buffered whole) into a ``JobOutput``. In client deploy modes (local,
standalone client, YARN client, Kubernetes client) the driver's output is spark-submit's output, so the result is
available; in cluster deploy modes the driver prints on the cluster and ``job_output.result`` stays ``None``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_iceberg_provider.job_output import JobOutput


class SparkJobSubmitHook(SparkSubmitHook):
    """SparkSubmitHook that also captures the job's final JSON line, its ``error:`` line and its exit code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.job_output = JobOutput()

    @classmethod
    def from_hook(cls, hook: SparkSubmitHook) -> SparkJobSubmitHook:
        """This hook with every setting of ``hook`` (as SparkSubmitOperator built it, whatever its version)."""
        job_hook = cls.__new__(cls)
        job_hook.__dict__.update(hook.__dict__)
        job_hook.job_output = JobOutput()
        return job_hook

    @property
    def runs_driver_locally(self) -> bool:
        """Whether the driver is spark-submit's own process (local or client deploy mode), so its output is ours."""
        return self._connection.get("deploy_mode") != "cluster"

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
