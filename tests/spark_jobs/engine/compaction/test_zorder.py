"""Z-order byte forms and interleavings against values worked out by hand from Java's ZOrderByteUtils rules."""

from __future__ import annotations

import datetime
import uuid

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from spark_jobs.engine.compaction.zorder import check_zorder_type, interleave_bits, ordered_bytes, zorder_values
from spark_jobs.engine.shared.errors import UserInputError


def _hex(matrix: np.ndarray) -> list[str]:
    return [bytes(row).hex() for row in matrix]


def _round_robin(forms: list[str], output_bytes: int) -> str:
    """Java's interleaving written out on bit strings: one bit of each column that still has bytes, in turn."""
    bits = [bin(int(form, 16))[2:].zfill(len(form) * 4) for form in forms]
    out = ""
    position = 0
    while len(out) < output_bytes * 8:
        for column in bits:
            if position < len(column) and len(out) < output_bytes * 8:
                out += column[position]
        position += 1
    return f"{int(out, 2):0{output_bytes * 2}x}"


@pytest.mark.parametrize(
    ("values", "arrow_type", "iceberg_type", "expected"),
    [
        (
            [0, 1, -1, None],
            pa.int32(),
            IntegerType(),
            ["8000000000000000", "8000000000000001", "7fffffffffffffff", "0" * 16],
        ),
        ([2**63 - 1, -(2**63)], pa.int64(), LongType(), ["ffffffffffffffff", "0000000000000000"]),
        # 1.0 = 0x3ff0...: sign bit flipped; -1.0 = 0xbff0...: every bit flipped; NaN canonical 0x7ff8... flipped
        (
            [1.0, -1.0, 0.0, -0.0, float("nan")],
            pa.float64(),
            DoubleType(),
            ["bff0000000000000", "400fffffffffffff", "8000000000000000", "7fffffffffffffff", "fff8000000000000"],
        ),
        # floats widen to double first: 0.5f = 0x3fe0000000000000
        ([0.5, -2.0, None], pa.float32(), FloatType(), ["bfe0000000000000", "3fffffffffffffff", "0" * 16]),
        ([True, False, None], pa.bool_(), BooleanType(), ["8100000000000000", "0" * 16, "0" * 16]),
        # days since the epoch as a long (here, unlike Spark 3.5's null cast): 1970-01-02 is day 1
        (
            [datetime.date(1970, 1, 2), datetime.date(1969, 12, 31)],
            pa.date32(),
            DateType(),
            ["8000000000000001", "7fffffffffffffff"],
        ),
        # with zone: whole seconds, floored (Spark's cast): 1.5 s -> 1, -0.5 s -> -1
        (
            [1_500_000, -500_000],
            pa.timestamp("us", tz="UTC"),
            TimestamptzType(),
            ["8000000000000001", "7fffffffffffffff"],
        ),
        # without zone: microseconds
        ([1_500_000, -500_000], pa.timestamp("us"), TimestampType(), ["800000000016e360", "7ffffffffff85ee0"]),
    ],
)
def test_fixed_width_byte_forms(values, arrow_type, iceberg_type, expected):
    array = pa.array(values).cast(arrow_type) if pa.types.is_timestamp(arrow_type) else pa.array(values, arrow_type)
    assert _hex(ordered_bytes(array, iceberg_type, 8)) == expected


def test_string_forms_are_cut_at_a_character_boundary_and_zero_padded():
    values = pa.array(["ab", "abcdefghij", "aaaaaaa\u00e9", "aaaaaa\u00e9", "", None])
    assert _hex(ordered_bytes(values, StringType(), 8)) == [
        "6162000000000000",
        "6162636465666768",
        "6161616161616100",  # the 2-byte é would straddle byte 8: left out, as Java's encoder does
        "616161616161c3a9",  # here it fits exactly
        "0000000000000000",
        "0000000000000000",
    ]
    assert _hex(ordered_bytes(pa.array(["\u20ac!"]), StringType(), 2)) == ["0000"]  # 3-byte euro sign does not fit


def test_binary_fixed_and_uuid_forms():
    assert _hex(ordered_bytes(pa.array([b"\x01\x02", b"\xff" * 10, None]), BinaryType(), 4)) == [
        "01020000",
        "ffffffff",
        "00000000",
    ]
    assert _hex(ordered_bytes(pa.array([b"\x09" * 3], pa.binary(3)), FixedType(3), 4)) == ["09090900"]
    value = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    # Spark reads a UUID as its text: the first 8 bytes are the ASCII of "12345678"
    assert _hex(ordered_bytes(pa.array([value.bytes], pa.binary(16)), UUIDType(), 8)) == ["3132333435363738"]


def test_two_columns_of_unequal_width_worked_by_hand():
    # int 1 -> 80 00 00 00 00 00 00 01; "a" with 1 byte -> 61 (0110 0001). Byte 0 of both interleaves to
    # 10 01 01 00 00 00 00 01 = 0x94 0x01, then the int alone contributes its remaining seven bytes.
    forms = [
        ordered_bytes(pa.array([1], pa.int32()), IntegerType(), 1),
        ordered_bytes(pa.array(["a"]), StringType(), 1),
    ]
    assert _hex(interleave_bits(forms, 9)) == ["940100000000000001"]
    assert _hex(interleave_bits(forms, 2)) == ["9401"]  # max-output-size 2


def test_two_ints_worked_by_hand():
    # 1 and 3: first bytes 0x80 and 0x80 interleave to 0xc000; last bytes 0x01 and 0x03 to 0x0007
    value = zorder_values([pa.array([1], pa.int32()), pa.array([3], pa.int32())], [IntegerType(), IntegerType()])
    assert value.to_pylist() == [bytes.fromhex("c000" + "0000" * 6 + "0007")]


@pytest.mark.parametrize(
    ("column", "iceberg_type"),
    [
        (pa.array([5, -7, None, 2**40], pa.int64()), LongType()),
        (pa.array([1.25, float("nan"), None, -3.5]), DoubleType()),
        (pa.array(["kiwi", None, "apple\u00e9\u00e9", "b"]), StringType()),
        (pa.array([True, None, False, True]), BooleanType()),
        (pa.array([datetime.date(2026, 1, 1), None, datetime.date(1900, 5, 5), datetime.date(1970, 1, 1)]), DateType()),
        (pa.array([0, 10**12, None, -(10**12)], pa.int64()).cast(pa.timestamp("us", tz="UTC")), TimestamptzType()),
    ],
)
def test_every_type_interleaved_with_a_long_matches_the_round_robin_by_hand(column, iceberg_type):
    other = pa.array([3, -1, 0, None], pa.int64())
    values = zorder_values([column, other], [iceberg_type, LongType()], var_length_contribution=5)
    first = _hex(ordered_bytes(column, iceberg_type, 5))
    second = _hex(ordered_bytes(other, LongType(), 5))
    for index, value in enumerate(values.to_pylist()):
        width = len(first[index]) // 2 + 8
        assert value.hex() == _round_robin([first[index], second[index]], width)


def test_byte_forms_keep_the_order_of_values():
    longs = pa.array(sorted([-(2**63), -5, -1, 0, 1, 7, 2**62]), pa.int64())
    doubles = pa.array([float("-inf"), -1e300, -2.5, -1e-300, 0.0, 1e-300, 3.0, 1e300, float("inf")])
    for column, iceberg_type in ((longs, LongType()), (doubles, DoubleType())):
        forms = _hex(ordered_bytes(column, iceberg_type, 8))
        assert forms == sorted(forms)


@pytest.mark.parametrize("iceberg_type", [DecimalType(10, 2), TimeType()])
def test_types_java_refuses_are_refused(iceberg_type):
    with pytest.raises(UserInputError, match="the type is unsupported"):
        check_zorder_type("ns.t", "c", iceberg_type)
