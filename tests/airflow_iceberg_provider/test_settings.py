"""Provider settings: every variable's documented default, and the environment's value when set."""

from __future__ import annotations

from airflow_iceberg_provider.settings import ENVIRONMENT_VARIABLES, ProviderSettings


def test_defaults_apply_when_variables_are_unset_or_empty(monkeypatch) -> None:
    for name in ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ICEBERG_PROVIDER_NAMESPACE", "")
    settings = ProviderSettings.from_environment()
    assert settings == ProviderSettings(
        catalog="demo",
        namespace="demo",
        spark_conn_id="spark_default",
        iceberg_conn_id="iceberg_default",
        output_root="/tmp/iceberg-provider-output",
        report_root="/tmp/iceberg-provider-output/reports",
    )


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
