"""Expected output files with Java's remainder rule, the writer's max file size and the input split size."""

import pytest

from spark_jobs.engine.compaction.options import RewriteOptions
from spark_jobs.engine.compaction.sizing import expected_output_files, input_split_size, write_max_file_size

MIB = 1024 * 1024
GIB = 1024 * MIB
# target 100, min 75, max 180: write max = 100 + 80 / 2 = 140; 1.1 x target = 110
SMALL = RewriteOptions(target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=180)


def test_write_max_file_size_is_halfway_between_target_and_max():
    assert write_max_file_size(SMALL) == 140
    defaults = RewriteOptions.resolve({})
    # (long) (512 MiB + (921.6 MiB - 512 MiB) * 0.5) = 742.4 MiB, truncated
    assert write_max_file_size(defaults) == int(512 * MIB + (int(512 * MIB * 1.8) - 512 * MIB) * 0.5)


@pytest.mark.parametrize(
    ("input_size", "expected"),
    [
        (0, 1),
        (99, 1),  # below the target: one file
        (100, 1),
        (190, 2),  # remainder 90 > min 75: keep the remainder file
        (205, 2),  # remainder 5: spread it, average 102 < 110
        (250, 3),  # remainder 50 <= 75 but average 125 >= 110: keep the remainder file
        (400, 4),  # no remainder
        (175, 2),  # remainder 75 is not > 75; average 175 >= 110: keep it
        (109, 1),  # remainder 9; average 109 < 110
        (110, 1),  # 1.1 * 100 is 110.00000000000001 in double arithmetic, in Java as here: 110 is below it
        (111, 2),  # remainder 11; average 111 is not below 110.00000000000001
    ],
)
def test_expected_output_files_follows_the_remainder_rule(input_size: int, expected: int):
    assert expected_output_files(input_size, SMALL) == expected


def test_java_documented_example_ten_point_one_gigabytes_make_ten_files():
    options = RewriteOptions.resolve({}, target_file_size_bytes=GIB)
    assert expected_output_files(int(10.1 * GIB), options) == 10
    assert expected_output_files(int(10.8 * GIB), options) == 11  # remainder 0.8 GiB > min 0.75 GiB


def test_the_average_bound_is_the_smaller_of_ten_percent_over_target_and_write_max():
    # target 100, max 110: write max 105 < 110, so the bound is 105
    narrow = RewriteOptions(target_file_size_bytes=100, min_file_size_bytes=75, max_file_size_bytes=110)
    assert expected_output_files(106, narrow) == 2  # average 106 >= 105: keep the remainder file
    assert expected_output_files(104, narrow) == 1


def test_input_split_size_is_input_per_output_plus_overhead_within_target_and_write_max():
    options = RewriteOptions.resolve({}, target_file_size_bytes=MIB)  # write max: 1 MiB + 0.4 MiB
    assert input_split_size(4 * MIB, options) == MIB + 5 * 1024
    assert input_split_size(MIB // 2, options) == MIB  # raised to the target
    # 2.7 MiB: remainder 0.7 MiB <= 0.75 MiB, average 1.35 MiB >= 1.1 MiB: 3 files of 0.9 MiB + overhead -> target
    assert input_split_size(int(2.7 * MIB), options) == MIB
    assert input_split_size(int(1.09 * MIB), options) == min(int(1.09 * MIB) + 5 * 1024, write_max_file_size(options))
