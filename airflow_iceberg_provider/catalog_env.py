"""Catalog properties as pyiceberg's ``PYICEBERG_CATALOG__<NAME>__<KEY>`` environment variables, and back.

pyiceberg reads its environment (``pyiceberg.utils.config.Config._from_environment_variables``) this way:
1. lower-case the variable name and drop the ``pyiceberg_`` prefix;
2. split the rest on ``__`` at most twice: ``catalog``, the catalog name, the property key;
3. in each part, ``__`` becomes ``.`` and then ``_`` becomes ``-``.

So a property key ``s3.secret-access-key`` travels as ``S3__SECRET_ACCESS_KEY`` and a catalog name ``my-lake`` as
``MY_LAKE``. Names or keys with an underscore or an upper-case letter cannot survive the trip; they are refused with
the offending key named, rather than silently reaching the job as a different property.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ENV_PREFIX = "PYICEBERG_CATALOG__"
_CATALOG_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_PROPERTY_KEY = re.compile(r"^[a-z0-9]+([.-][a-z0-9]+)*$")


class CatalogEnvironmentError(ValueError):
    """A catalog name or property key that pyiceberg's environment parsing would change."""


def catalog_env_name(catalog_name: str, key: str) -> str:
    """The environment variable that carries property ``key`` of catalog ``catalog_name``."""
    if not _CATALOG_NAME.match(catalog_name.lower()):
        raise CatalogEnvironmentError(
            f"catalog name {catalog_name!r} cannot be passed through pyiceberg's environment: use letters, digits "
            "and single hyphens only (pyiceberg reads '_' in a variable name as '-')"
        )
    if not _PROPERTY_KEY.match(key):
        raise CatalogEnvironmentError(
            f"catalog property {key!r} of catalog {catalog_name!r} cannot be passed through pyiceberg's "
            "environment: keys must be lower-case letters and digits separated by single '.' or '-' (pyiceberg "
            "lower-cases variable names and reads '_' as '-'); set it in .pyiceberg.yaml on the cluster instead"
        )
    encoded_name = catalog_name.upper().replace("-", "_")
    encoded_key = key.upper().replace(".", "__").replace("-", "_")
    return f"{ENV_PREFIX}{encoded_name}__{encoded_key}"


def catalog_environment(catalog_name: str, properties: Mapping[str, Any]) -> dict[str, str]:
    """Every property of the catalog as an environment variable (values as strings; ``None`` values dropped)."""
    environment: dict[str, str] = {}
    for key, value in properties.items():
        if value is None:
            continue
        if isinstance(value, (dict, list)):
            raise CatalogEnvironmentError(
                f"catalog property {key!r} of catalog {catalog_name!r} is a {type(value).__name__}; pyiceberg "
                "catalog properties are strings"
            )
        environment[catalog_env_name(catalog_name, key)] = _as_text(value)
    return environment


def _as_text(value: Any) -> str:
    """A property value as pyiceberg expects it ("true"/"false" for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
