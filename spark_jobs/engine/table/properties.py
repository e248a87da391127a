"""The table properties the engine reads beyond pyiceberg's own, and one way to read an integer property."""

from __future__ import annotations

from collections.abc import Mapping

from spark_jobs.engine.shared.integer_setting import Default, parse_integer_setting

# The table's name mapping (JSON), which gives field ids to data files written without them.
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


def int_property(
    properties: Mapping[str, str], key: str, default: Default, *, expected: str = "an integer"
) -> int | Default:
    """An integer table property, or ``default`` when unset; a malformed one is a ``UserInputError`` naming it."""
    return parse_integer_setting(properties.get(key), default, name=f"table property {key}", expected=expected)
