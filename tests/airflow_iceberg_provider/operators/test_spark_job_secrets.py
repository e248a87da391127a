"""No catalog secret on the spark-submit command line or in the task log, in every deploy mode.

The connection carries credentials of every kind the provider must recognise (names Airflow does not call
sensitive, a password in a URI's userinfo and in its query string, a SAS signature). For each deploy mode the
operator builds its real spark-submit command through SparkSubmitHook; in YARN and Kubernetes cluster mode the
driver's environment goes to a private properties file instead of argv. What cannot run here: a YARN or Kubernetes
cluster (the YARN cluster-mode submission is started for real and fails to reach one; the command, the file, what
is logged and the error are checked), and Kubernetes commands at all (see ``DEPLOY_MODES``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from airflow_iceberg_provider.operators.read import IcebergReadOperator
from tests.support.airflow_env import path_with_spark_submit

SECRETS = {
    "adls.account-key": "adls-account-key-5c1d",
    "s3.session-token": "s3-session-token-77ab",
    "gcs.oauth2.token": "gcs-oauth-token-e4f0",
    "s3.secret-access-key": "s3-secret-key-90aa",
    "adls.sas-token.lake": "sv=2022-11-02&sig=sas-sig-3b2c",
}
URI_PASSWORD = "uri-userinfo-pw-61d2"
QUERY_PASSWORD = "uri-query-pw-0c9e"
ALL_SECRETS = [*SECRETS.values(), URI_PASSWORD, QUERY_PASSWORD]

DEPLOY_MODES = {
    "local": {"host": "local[2]"},
    "standalone-client": {"host": "spark://127.0.0.1", "port": 7077, "extra": {"deploy-mode": "client"}},
    "yarn-client": {"host": "yarn", "extra": {"deploy-mode": "client"}},
    "yarn-cluster": {"host": "yarn", "extra": {"deploy-mode": "cluster"}},
    # SparkSubmitHook accepts Kubernetes masters only with apache-airflow-providers-cncf-kubernetes installed (the
    # test extra has it); the command is built, not submitted (no cluster here).
    "k8s-cluster": {"host": "k8s://https://127.0.0.1", "port": 6443, "extra": {"deploy-mode": "cluster"}},
}


@pytest.fixture
def secret_connection(monkeypatch: pytest.MonkeyPatch) -> str:
    """An ``iceberg`` connection whose extra carries every kind of credential."""
    extra = {
        "type": "sql",
        "uri": f"postgresql+psycopg2://lake:{URI_PASSWORD}@127.0.0.1:1/lake?password={QUERY_PASSWORD}",
        "warehouse": "s3://lake/",
        "catalog_name": "lake",
        **SECRETS,
    }
    monkeypatch.setenv("AIRFLOW_CONN_SECRET_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    return "secret_lake"


def _operator(monkeypatch, mode: str, connection: str) -> IcebergReadOperator:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_SPARK_{mode.upper().replace('-', '_')}", json.dumps({"conn_type": "spark", **DEPLOY_MODES[mode]})
    )
    operator = IcebergReadOperator(
        task_id="read",
        conn_id=f"spark_{mode.replace('-', '_')}",
        iceberg_conn_id=connection,
        table="ns.events",
        output_path="/tmp/out",
        application="/opt/jobs/read.py",
    )
    operator.prepare_submission(context={})
    return operator


def _assert_no_secret(text: str, where: str) -> None:
    leaked = [secret for secret in ALL_SECRETS if secret in text]
    assert not leaked, f"secrets in {where}: {leaked}"


@pytest.mark.parametrize("mode", list(DEPLOY_MODES))
def test_no_secret_on_the_command_line_or_in_the_logged_command(monkeypatch, secret_connection, mode, capfd) -> None:
    operator = _operator(monkeypatch, mode, secret_connection)
    hook = operator._get_hook()
    capfd.readouterr()
    command = hook.build_command(operator.application)
    try:
        _assert_no_secret(" ".join(command), f"the {mode} command line")
        output = capfd.readouterr()
        logged = [line for line in (output.out + output.err).splitlines() if "Spark-Submit cmd" in line]
        assert logged, "the hook did not log its command"
        _assert_no_secret("\n".join(logged), f"the logged {mode} command")
        if hook.runs_driver_locally:
            environment = hook.submit_environment()
            assert environment["PYICEBERG_CATALOG__LAKE__ADLS__ACCOUNT_KEY"] == SECRETS["adls.account-key"]
            assert "--properties-file" not in command
        else:
            properties_file = Path(command[command.index("--properties-file") + 1])
            assert stat.S_IMODE(properties_file.stat().st_mode) == 0o600
            text = properties_file.read_text()
            prefix = "spark.yarn.appMasterEnv." if "yarn" in mode else "spark.kubernetes.driverEnv."
            assert f"{prefix}PYICEBERG_CATALOG__LAKE__ADLS__ACCOUNT_KEY=adls-account-key-5c1d" in text
            assert f"{prefix}PYICEBERG_CATALOG__LAKE__URI=postgresql+psycopg2\\://" not in text  # values keep ':'
    finally:
        hook.remove_job_properties_file()


def test_every_secret_is_masked_in_the_task_log(secret_connection, monkeypatch) -> None:
    from airflow.sdk._shared.secrets_masker import redact

    _operator(monkeypatch, "local", secret_connection)
    line = "spark-submit printed " + " ".join(f"{key}={value}" for key, value in SECRETS.items())
    line += f" uri=postgresql://lake:{URI_PASSWORD}@db/lake?password={QUERY_PASSWORD}"
    _assert_no_secret(str(redact(line)), "a redacted task log line")


@pytest.mark.spark
def test_a_cluster_submission_leaves_no_secret_in_its_log_error_or_files(monkeypatch, secret_connection, capfd):
    """A real spark-submit to YARN, which cannot be reached here: it fails; nothing leaks and the file is removed."""
    monkeypatch.setenv("PATH", path_with_spark_submit())
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    operator = _operator(monkeypatch, "yarn-cluster", secret_connection)
    hook = operator._get_hook()
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("iceberg-job-*.conf"))
    capfd.readouterr()
    with pytest.raises(Exception) as raised:
        hook.submit(operator.application)
    output = capfd.readouterr()
    assert "Spark-Submit cmd" in output.out + output.err
    _assert_no_secret(str(raised.value), "the submit error")
    _assert_no_secret(output.out + output.err, "the hook's log and spark-submit's output")
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("iceberg-job-*.conf")) == before
