"""The compatibility seam maps the Spark provider's private API onto public names, and fails loudly without it.

These tests also run against the oldest and the newest provider release the pin allows
(test_spark_provider_releases.py), so each private name used is exercised on both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_iceberg_provider.hooks.spark_submit_compat import (
    IncompatibleSparkProviderError,
    SubmitHookSeam,
    SubmitOperatorSeam,
    missing_private_names,
    provider_release,
)


@pytest.fixture
def spark_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN_CLUSTER",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )


def test_the_installed_release_has_every_private_name_used() -> None:
    assert missing_private_names() == []
    expected = os.environ.get("AIP_EXPECTED_SPARK_PROVIDER")
    if expected:  # run by test_spark_provider_releases.py: the release under test is the one imported
        assert provider_release() == expected
        import airflow.providers.apache.spark as provider

        assert provider.__version__ == expected


def test_a_plain_seam_builds_spark_submit_hooks_command(spark_connections: None) -> None:
    base = SparkSubmitHook(conn_id="spark_local", conf={"spark.x": "1"}, py_files="a.zip", name="job")
    seam = SubmitHookSeam.from_hook(base)
    assert seam.build_command("read.py") == base._build_spark_submit_command("read.py")
    assert seam.conn_id == "spark_local"
    assert seam.spark_conf == {"spark.x": "1"}


def test_a_hook_missing_a_private_attribute_is_named_in_the_error(spark_connections: None) -> None:
    base = SparkSubmitHook(conn_id="spark_local")
    del base._is_yarn
    with pytest.raises(IncompatibleSparkProviderError, match=r"apache-airflow-providers-apache-spark .* lacks "):
        SubmitHookSeam.from_hook(base)


class _Recording(SubmitHookSeam):
    """A seam whose extension points record what they were given and change the command and the log."""

    def reset_job_state(self) -> None:
        self.seen: list[str] = []

    def common_arguments(self, build):  # type: ignore[no-untyped-def]
        self.spark_conf = {**self.spark_conf, "spark.added": "yes"}
        return build()

    def masked_command(self, masked: str) -> str:
        return masked.replace("hidden-value", "***")

    def output_lines(self, lines):  # type: ignore[no-untyped-def]
        for line in lines:
            self.seen.append(str(line).strip())
            yield line


def test_the_extension_points_are_called_by_spark_submit_hook(spark_connections: None) -> None:
    hook = _Recording.from_hook(SparkSubmitHook(conn_id="spark_local", application_args=["hidden-value"]))
    command = hook.build_command("read.py")
    assert "spark.added=yes" in command
    assert "hidden-value" not in hook._mask_cmd(command)
    hook._process_spark_submit_log(iter(["INFO one\n", "INFO two\n"]))
    assert hook.seen == ["INFO one", "INFO two"]


def test_settings_read_and_write_through_their_public_names(spark_connections: None, tmp_path) -> None:
    hook = SubmitHookSeam.from_hook(SparkSubmitHook(conn_id="spark_yarn_cluster"))
    assert hook.is_yarn and not hook.is_kubernetes
    assert hook.deploy_mode == "cluster"
    hook.deploy_mode = "client"
    assert hook.deploy_mode == "client"
    properties = tmp_path / "job.conf"
    properties.write_text("spark.a=b\n")
    hook.properties_file = str(properties)
    command = hook.build_command("read.py")
    assert command[command.index("--properties-file") + 1] == str(properties)
    hook.driver_env_vars = {"A": "1"}
    assert hook.driver_env_vars == {"A": "1"}
    hook.submit_env = {"B": "2"}
    assert hook.submit_env == {"B": "2"}
    assert hook.submit_process is None
    hook.submit_process = subprocess.Popen(["true"])
    assert hook.submit_process.wait() == 0


class _JobOperator(SubmitOperatorSeam):
    def job_hook(self, hook: SparkSubmitHook) -> SparkSubmitHook:
        return _Recording.from_hook(hook)


def test_the_operators_hook_factory_goes_through_job_hook(spark_connections: None) -> None:
    operator = _JobOperator(task_id="t", application="read.py", conn_id="spark_local")
    assert isinstance(operator, SparkSubmitOperator)
    assert operator.submitted_hook is None
    hook = operator._get_hook()
    assert isinstance(hook, _Recording)
    operator.submitted_hook = hook
    assert operator._hook is hook


def test_no_other_module_uses_the_providers_private_names() -> None:
    from pathlib import Path

    from airflow_iceberg_provider.hooks import spark_submit_compat

    names = (
        *spark_submit_compat.PRIVATE_HOOK_METHODS,
        *spark_submit_compat.PRIVATE_HOOK_ATTRIBUTES,
        *spark_submit_compat.PRIVATE_OPERATOR_METHODS,
        "_submit_sp",
        "_hook",
    )
    pattern = re.compile(r"\.(" + "|".join(names) + r")\b")
    package = Path(spark_submit_compat.__file__).parents[1]
    users = [
        f"{path.relative_to(package.parent)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "spark_submit_compat.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert users == []
