"""Which catalog properties are credentials, and every secret string in them (URIs included)."""

from __future__ import annotations

import pytest

from airflow_iceberg_provider.credentials import is_credential_key, mask_text, secret_values


@pytest.mark.parametrize(
    "key",
    [
        "s3.secret-access-key",
        "adls.account-key",
        "adls.account_key",
        "s3.session-token",
        "gcs.oauth2.token",
        "credential",
        "token",
        "password",
        "jdbc.password",
        "adls.sas-token.myaccount",
        "rest.private-key",
        "snowflake.private_key",
        "client.secret",
    ],
)
def test_credential_keys(key: str) -> None:
    assert is_credential_key(key)


@pytest.mark.parametrize("key", ["uri", "warehouse", "type", "s3.endpoint", "s3.region", "s3.access-key-id"])
def test_ordinary_keys(key: str) -> None:
    assert not is_credential_key(key)


def test_secrets_of_keys_userinfo_and_query_strings() -> None:
    properties = {
        "type": "sql",
        "uri": "postgresql+psycopg2://cat:pw%40userinfo@db:5432/lake?sslmode=require&password=pw-in-query",
        "adls.account-key": "account-key-value",
        "s3.session-token": "session-token-value",
        "adls.sas-token.acct": "sv=2022-11-02&sig=sas-signature",
        "rest.uri": "https://catalog.example.com/api?sig=signature-in-uri",
        "token-refresh-enabled": "true",
        "warehouse": "s3://lake/",
    }
    secrets = secret_values(properties)
    for expected in (
        "pw%40userinfo",
        "pw@userinfo",
        "pw-in-query",
        "account-key-value",
        "session-token-value",
        "sv=2022-11-02&sig=sas-signature",
        "signature-in-uri",
    ):
        assert expected in secrets
    assert not secrets & {"true", "sql", "s3://lake/", "require"}


def test_mask_text_replaces_longest_secrets_first() -> None:
    text = "--conf X=abc-secret-long --conf Y=abc"
    assert mask_text(text, {"abc", "abc-secret-long"}) == "--conf X=****** --conf Y=******"
