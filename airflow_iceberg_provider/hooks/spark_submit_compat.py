"""Every use of the Spark provider's private API, in one place.

The Spark provider (``apache-airflow-providers-apache-spark``) lets a subclass change SparkSubmitHook's command and
read its output only through private names. Those names can change in any release, so nothing else in this package
touches them; this module maps them onto public names, and says so loudly when a release lacks one:

1. ``PRIVATE_HOOK_METHODS`` / ``PRIVATE_HOOK_ATTRIBUTES`` / ``PRIVATE_OPERATOR_METHODS`` list every private name used.
   On import, ``missing_private_names()`` looks each method up on the installed release's classes; a missing one
   raises ``IncompatibleSparkProviderError`` naming the release and the names (a DAG fails to import, never a job
   half-built). ``SubmitHookSeam.from_hook`` checks the attributes on the hook SparkSubmitOperator built.
2. ``SubmitHookSeam`` subclasses SparkSubmitHook: its three private extension points (the common arguments, the
   masked command, the output lines) call public methods a subclass overrides (``common_arguments``,
   ``masked_command``, ``output_lines``); its properties read and write the private settings by their meaning
   (``spark_conf``, ``submit_env``, ``driver_env_vars``, ``properties_file``, ``deploy_mode``...).
3. ``SubmitOperatorSeam`` subclasses SparkSubmitOperator: its private hook factory calls ``job_hook`` and its
   private hook slot is ``submitted_hook``.

The tests of this module and of the hook built on it run against the oldest and the newest provider releases the
pin in pyproject.toml allows (``tests/airflow_iceberg_provider/hooks/test_spark_provider_releases.py``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Self

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

PROVIDER_DISTRIBUTION = "apache-airflow-providers-apache-spark"

# SparkSubmitHook's private methods this module overrides or calls.
PRIVATE_HOOK_METHODS = (
    "_build_spark_common_args",
    "_build_spark_submit_command",
    "_mask_cmd",
    "_process_spark_submit_log",
)
# SparkSubmitHook's private attributes set by its __init__ (``_submit_sp``, set by submit, is read with a default).
PRIVATE_HOOK_ATTRIBUTES = (
    "_conn_id",
    "_connection",
    "_conf",
    "_env",
    "_env_vars",
    "_properties_file",
    "_is_yarn",
    "_is_kubernetes",
)
# SparkSubmitOperator's private hook factory; its private ``_hook`` slot is set by its __init__.
PRIVATE_OPERATOR_METHODS = ("_get_hook",)


class IncompatibleSparkProviderError(ImportError):
    """The installed Spark provider release lacks a private name this package relies on."""


def provider_release() -> str:
    """The installed Spark provider's version (``unknown`` when its distribution metadata is missing)."""
    try:
        return version(PROVIDER_DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def missing_private_names() -> list[str]:
    """The private methods this module uses that the installed release's classes lack (empty when compatible)."""
    missing = [f"SparkSubmitHook.{name}" for name in PRIVATE_HOOK_METHODS if not hasattr(SparkSubmitHook, name)]
    missing += [
        f"SparkSubmitOperator.{name}" for name in PRIVATE_OPERATOR_METHODS if not hasattr(SparkSubmitOperator, name)
    ]
    return missing


def _incompatible(names: list[str]) -> IncompatibleSparkProviderError:
    return IncompatibleSparkProviderError(
        f"{PROVIDER_DISTRIBUTION} {provider_release()} lacks {', '.join(names)}, which airflow-iceberg-provider "
        "builds its spark-submit on; install a release within the pin of airflow-iceberg-provider's requirements"
    )


def _check_release() -> None:
    missing = missing_private_names()
    if missing:
        raise _incompatible(missing)


_check_release()


class SubmitHookSeam(SparkSubmitHook):
    """SparkSubmitHook with its private extension points and settings under public names."""

    @classmethod
    def from_hook(cls, hook: SparkSubmitHook) -> Self:
        """An instance of this class with every setting of ``hook`` (as SparkSubmitOperator built it).

        The settings are copied whole rather than passed to ``__init__`` again, so settings a release adds travel
        too; ``__init__`` of the subclass is not run: it sets its own state in ``reset_job_state``.
        """
        missing = [f"SparkSubmitHook.{name}" for name in PRIVATE_HOOK_ATTRIBUTES if not hasattr(hook, name)]
        if missing:
            raise _incompatible(missing)
        seam = cls.__new__(cls)
        seam.__dict__.update(hook.__dict__)
        seam.reset_job_state()
        return seam

    def reset_job_state(self) -> None:
        """Set the subclass's own attributes (called by ``from_hook`` instead of ``__init__``)."""

    # ---- extension points: a subclass overrides these ---------------------------------------------------------

    def common_arguments(self, build: Callable[[], list[str]]) -> list[str]:
        """spark-submit's arguments before the application; ``build`` builds them from the current settings."""
        return build()

    def masked_command(self, masked: str) -> str:
        """The command as logged, after SparkSubmitHook masked what it recognises as secret."""
        return masked

    def output_lines(self, lines: Iterator[Any]) -> Iterator[Any]:
        """spark-submit's output lines on their way to SparkSubmitHook's log processing."""
        return lines

    def _build_spark_common_args(self) -> list[str]:
        return self.common_arguments(super()._build_spark_common_args)

    def _mask_cmd(self, connection_cmd: str | list[str]) -> str:
        return self.masked_command(super()._mask_cmd(connection_cmd))

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self.output_lines(itr))

    def build_command(self, application: str) -> list[str]:
        """The whole spark-submit command for ``application``, as ``submit`` would run it."""
        return self._build_spark_submit_command(application)

    # ---- settings -----------------------------------------------------------------------------------------

    @property
    def conn_id(self) -> str:
        """The Spark connection's id."""
        return str(self._conn_id)

    @property
    def deploy_mode(self) -> str | None:
        """The resolved deploy mode (``client``, ``cluster`` or ``None`` for spark-submit's default)."""
        mode = self._connection.get("deploy_mode")
        return None if mode is None else str(mode)

    @deploy_mode.setter
    def deploy_mode(self, mode: str | None) -> None:
        self._connection = {**self._connection, "deploy_mode": mode}

    @property
    def is_yarn(self) -> bool:
        """Whether the master is YARN."""
        return bool(self._is_yarn)

    @property
    def is_kubernetes(self) -> bool:
        """Whether the master is Kubernetes."""
        return bool(self._is_kubernetes)

    @property
    def spark_conf(self) -> dict[str, Any]:
        """The ``--conf`` entries of the command."""
        return dict(self._conf or {})

    @spark_conf.setter
    def spark_conf(self, conf: dict[str, Any]) -> None:
        self._conf = conf

    @property
    def submit_env(self) -> dict[str, Any] | None:
        """The variables added to spark-submit's process environment (set while the command is built)."""
        env: dict[str, Any] | None = self._env
        return env

    @submit_env.setter
    def submit_env(self, env: dict[str, Any] | None) -> None:
        self._env = env

    @property
    def driver_env_vars(self) -> dict[str, Any] | None:
        """The caller's ``env_vars``: spark-submit's environment, or driver confs in YARN/Kubernetes cluster mode."""
        env_vars: dict[str, Any] | None = self._env_vars
        return env_vars

    @driver_env_vars.setter
    def driver_env_vars(self, env_vars: dict[str, Any] | None) -> None:
        self._env_vars = env_vars

    @property
    def properties_file(self) -> str | None:
        """The ``--properties-file`` of the command."""
        path: str | None = self._properties_file
        return path

    @properties_file.setter
    def properties_file(self, path: str | None) -> None:
        self._properties_file = path

    @property
    def submit_process(self) -> subprocess.Popen[Any] | None:
        """The spark-submit process once ``submit`` started it (``None`` before)."""
        process: subprocess.Popen[Any] | None = getattr(self, "_submit_sp", None)
        return process

    @submit_process.setter
    def submit_process(self, process: subprocess.Popen[Any] | None) -> None:
        self._submit_sp = process


class SubmitOperatorSeam(SparkSubmitOperator):
    """SparkSubmitOperator with its private hook factory and hook slot under public names."""

    def job_hook(self, hook: SparkSubmitHook) -> SparkSubmitHook:
        """The hook to submit with, given the one SparkSubmitOperator built from this operator's settings."""
        return hook

    def _get_hook(self) -> SparkSubmitHook:
        return self.job_hook(super()._get_hook())

    @property
    def submitted_hook(self) -> SparkSubmitHook | None:
        """The hook of the last (or running) submission; ``None`` before one, or after ``forget_hook``."""
        hook: SparkSubmitHook | None = self._hook
        return hook

    @submitted_hook.setter
    def submitted_hook(self, hook: SparkSubmitHook | None) -> None:
        self._hook = hook
