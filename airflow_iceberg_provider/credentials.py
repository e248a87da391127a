"""Which catalog properties carry credentials, and the secret strings inside them, to mask wherever they could show.

Airflow masks a value by the name it is registered under only when the name is in its own short list of sensitive
names (``adls.account-key`` is not). The provider decides for itself:

1. A property is a credential when its key, lower-cased with ``.``/``_`` read as ``-``, contains one of
   ``CREDENTIAL_KEY_PARTS`` (secret, password, token, credential, account-key, session, private-key, sas, ...),
   unless its value is a switch (true/false).
2. Its whole value is secret; so is a password in the userinfo of any value that is a URI
   (``postgresql://user:pw@host/db``), and the value of any query-string parameter whose name is a credential
   (``?password=...``, a SAS ``sig=...``). URL-encoded and decoded forms are both kept.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

CREDENTIAL_KEY_PARTS = (
    "secret",
    "password",
    "passwd",
    "pwd",
    "token",
    "credential",
    "account-key",
    "session",
    "private-key",
    "sas",
)
# Query-string parameters that carry a credential without saying so (an Azure SAS signature).
CREDENTIAL_QUERY_PARAMETERS = frozenset({"sig"})
# Values that are switches, not secrets (``token-refresh-enabled=true``): masking them would blank every "true".
_NOT_SECRETS = frozenset({"true", "false", "none", "null"})
# Shorter secrets are not masked: masking "ab" would blank every "ab" in the log and hide nothing worth hiding.
MIN_SECRET_LENGTH = 3


def is_credential_key(key: str) -> bool:
    """Whether a property or parameter named ``key`` carries a credential (module doc, step 1)."""
    normalized = key.lower().replace("_", "-").replace(".", "-")
    return any(part in normalized for part in CREDENTIAL_KEY_PARTS)


def secret_values(properties: Mapping[str, Any]) -> set[str]:
    """Every secret string in ``properties`` (module doc, step 2)."""
    secrets: set[str] = set()
    for key, value in properties.items():
        if value is None:
            continue
        text = str(value)
        if is_credential_key(key) and text.lower() not in _NOT_SECRETS:
            secrets.add(text)
        secrets.update(_secrets_in_uri(text))
    return {secret for secret in _with_encodings(secrets) if len(secret) >= MIN_SECRET_LENGTH}


def mask_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by ``******`` (longest secrets first)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, "******")
    return text


def _secrets_in_uri(text: str) -> set[str]:
    if "://" not in text:
        return set()
    try:
        parts = urllib.parse.urlsplit(text)
        found = {parts.password} if parts.password else set()
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=False)
    except ValueError:
        return set()
    found.update(
        value for name, value in query if is_credential_key(name) or name.lower() in CREDENTIAL_QUERY_PARAMETERS
    )
    return found


def _with_encodings(secrets: set[str]) -> set[str]:
    encoded = set(secrets)
    for secret in secrets:
        encoded.add(urllib.parse.unquote(secret))
        encoded.add(urllib.parse.quote(secret, safe=""))
    return encoded
