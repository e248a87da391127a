"""Provider settings: every variable's documented default, and the environment's value when set."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest

from airflow_iceberg_provider.settings import ENVIRONMENT_VARIABLES, ProviderSettings


def test_defaults_apply_when_variables_are_unset_or_empty(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ICEBERG_PROVIDER_NAMESPACE", "")
    settings = ProviderSettings.from_environment()
    private = tmp_path / f"iceberg-provider-output-{os.getuid()}"
    assert settings == ProviderSettings(
        catalog="demo",
        namespace="demo",
        spark_conn_id="spark_default",
        iceberg_conn_id="iceberg_default",
        output_root=str(private),
        report_root=f"{private}/reports",
    )
    assert stat.S_IMODE(private.stat().st_mode) == 0o700 and private.stat().st_uid == os.getuid()


@pytest.mark.parametrize("plant", ["world-writable", "other-owner"])
def test_a_default_output_root_another_user_made_first_is_refused(monkeypatch, tmp_path, plant) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("ICEBERG_PROVIDER_OUTPUT_ROOT", raising=False)
    planted = tmp_path / f"iceberg-provider-output-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777 if plant == "world-writable" else 0o700)
    if plant == "other-owner":
        os.chown(planted, 65534, 65534)  # uid nobody: another local user
    with pytest.raises(PermissionError, match="is not a private directory of this user"):
        ProviderSettings.from_environment()
    monkeypatch.setenv("ICEBERG_PROVIDER_OUTPUT_ROOT", str(tmp_path / "chosen"))  # a root set by hand is used as is
    assert ProviderSettings.from_environment().output_root == str(tmp_path / "chosen")


def test_each_variable_sets_its_setting(monkeypatch) -> None:
    values = {name: f"value-of-{name.lower()}" for name in ENVIRONMENT_VARIABLES}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    settings = ProviderSettings.from_environment()
    assert sorted(vars(settings).values()) == sorted(values.values())
    assert settings.catalog == values["ICEBERG_PROVIDER_CATALOG"]


def test_the_report_root_follows_the_output_root_unless_set(monkeypatch) -> None:
    monkeypatch.delenv("ICEBERG_PROVIDER_REPORT_ROOT", raising=False)
    monkeypatch.setenv("ICEBERG_PROVIDER_OUTPUT_ROOT", "s3://bucket/out/")
    assert ProviderSettings.from_environment().report_root == "s3://bucket/out/reports"
    monkeypatch.setenv("ICEBERG_PROVIDER_REPORT_ROOT", "s3://reports/iceberg")
    assert ProviderSettings.from_environment().report_root == "s3://reports/iceberg"
