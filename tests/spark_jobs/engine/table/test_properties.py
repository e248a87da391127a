"""Integer table properties: the table's value, the default when unset, a named error when malformed."""

from __future__ import annotations

import pytest

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.table.properties import int_property


def test_the_property_or_the_default() -> None:
    assert int_property({"read.split.target-size": "1024"}, "read.split.target-size", 5) == 1024
    assert int_property({}, "read.split.target-size", 5) == 5


def test_a_malformed_property_is_bad_input_naming_the_property_and_the_unit() -> None:
    with pytest.raises(UserInputError, match=r"table property x\.y must be an integer number of bytes, got '1 MiB'"):
        int_property({"x.y": "1 MiB"}, "x.y", 5, expected="an integer number of bytes")
