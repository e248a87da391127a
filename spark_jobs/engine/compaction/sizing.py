"""How many files a file group is rewritten into, and the sizes the writer aims at, as Iceberg Java computes them.

Java's ``SizeBasedFileRewritePlanner``:

1. ``write_max_file_size``: ``(long) (target + (max - target) * 0.5)``, the size a writer may grow a file to before
   rolling, so compression noise does not leave a tiny remainder file.
2. ``expected_output_files(input)``: computed on ``input * compression-factor`` (1.0 unless a sort or z-order rewrite
   sets it; at least 1 file). 1 when the input is below the target. Otherwise ceil(input / target) when the
   remainder ``input mod target`` exceeds the min file size (the remainder file is big enough to keep); else
   floor(input / target) when spreading the remainder keeps the average below ``min(1.1 * target,
   write_max_file_size)``; else ceil(input / target).
3. ``input_split_size(input)``: ``input / expected_output_files + 5 KiB`` of overhead, at least the target and at
   most ``write_max_file_size``.
"""

from __future__ import annotations

from spark_jobs.engine.compaction.options import RewriteOptions

SPLIT_OVERHEAD = 5 * 1024


def write_max_file_size(options: RewriteOptions) -> int:
    """The target plus half the distance to the max file size (truncated as Java's cast to long)."""
    target = options.target_file_size_bytes
    return int(target + (options.max_file_size_bytes - target) * 0.5)


def expected_output_files(input_size: int, options: RewriteOptions) -> int:
    """The number of files a group of ``input_size`` bytes should be written into (the remainder rule above)."""
    if options.compression_factor != 1.0:  # Java: (long) (inputSize * compressionFactor), shuffling rewrites only
        input_size = int(input_size * options.compression_factor)
    target = options.target_file_size_bytes
    if input_size < target:
        return 1  # also when the compression factor brings the size to 0: Java's max(1, ...)
    with_remainder = -(-input_size // target)
    without_remainder = input_size // target
    average_without_remainder = input_size // without_remainder
    if input_size % target > options.min_file_size_bytes:
        return with_remainder
    if average_without_remainder < min(1.1 * target, float(write_max_file_size(options))):
        return without_remainder
    return with_remainder


def input_split_size(input_size: int, options: RewriteOptions) -> int:
    """Bytes of input per write task, so each task writes about one output file."""
    estimated = input_size // expected_output_files(input_size, options) + SPLIT_OVERHEAD
    if estimated < options.target_file_size_bytes:
        return options.target_file_size_bytes
    return min(estimated, write_max_file_size(options))
