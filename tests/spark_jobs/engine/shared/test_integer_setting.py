"""One integer parser: the default when unset, the value when an integer, else an error naming the setting."""

from __future__ import annotations

import pytest

from spark_jobs.engine.shared.errors import UserInputError
from spark_jobs.engine.shared.integer_setting import parse_integer_setting


def test_unset_gives_the_default_and_integers_parse() -> None:
    assert parse_integer_setting(None, 7, name="x") == 7
    assert parse_integer_setting("-12", 7, name="x") == -12
    assert parse_integer_setting(" 3 ", 7, name="x") == 3


def test_a_malformed_value_names_the_setting_what_was_expected_and_the_value() -> None:
    with pytest.raises(UserInputError, match=r"^table property a\.b must be an integer, got '1\.5'$"):
        parse_integer_setting("1.5", 7, name="table property a.b")
    with pytest.raises(ValueError, match=r"^SOME_VAR must be an integer number of bytes, got 'lots'$") as raised:
        parse_integer_setting("lots", 7, name="SOME_VAR", expected="an integer number of bytes", error=ValueError)
    assert not isinstance(raised.value, UserInputError)
