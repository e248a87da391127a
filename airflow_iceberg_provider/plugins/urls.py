"""Browser URLs of the plugin's routes (no FastAPI import: operators build links with it on workers)."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

URL_PREFIX = "/iceberg"


def plugin_url(path: str) -> str:
    """A browser URL of the plugin's ``path`` (``reports/...``), relative to the Airflow UI's origin.

    The path of ``[api] base_url`` comes first, so the link works when Airflow is served under a sub-path; the host
    is left out, so the link stays on the origin the user opened the UI at (where their session cookie is).
    """
    from airflow.configuration import conf

    base_path = urlsplit(conf.get("api", "base_url", fallback="") or "").path.rstrip("/")
    return f"{base_path}{URL_PREFIX}/{quote(path.lstrip('/'), safe='/')}"
