"""Data files a manifest names, read through Arrow's dataset scanner with their recorded size: no HEAD request.

pyarrow's ``FileSystem.open_input_file(path)`` asks an object store for the file's size before the first read (one
HEAD request per file). A manifest already records it (``file_size_in_bytes``), and a dataset fragment made with
``file_size`` hands it to Arrow's file source, whose reads then start at once. Only the scanner's own reads gain:
``Fragment.open()`` still opens by path (it HEADs), so index structures the engine reads itself need a stream.

1. ``sized_fragment(io, path, size)``: a Parquet fragment on the FileIO's pyarrow file system, for an object store
   path of a pyarrow FileIO; None otherwise (a local file costs no request; another FileIO has no Arrow file system).
   Data files and the delete files of merge-on-read (position and equality deletes) are read so.
2. ``read_fragment_footer(fragment, path, size)``: the footer, read by Arrow (one ranged read of the file's last
   64 KiB, as the engine's own footer read), with its Thrift bytes re-serialized by Arrow (byte-identical to the
   file's) for the page index stage. A recorded size that disagrees with the object fails loudly: the footer is not
   where the size says, so ``CorruptFileError`` names the file and the recorded size.
3. ``FragmentRowGroups``: ``read_row_groups`` over the fragment (pre-buffered, coalesced ranged reads), so the
   decoding code reads a run of row groups the same way as through ``pq.ParquetFile``.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyiceberg.io import FileIO

from spark_jobs.engine.shared.errors import CorruptFileError

# Arrow's Parquet reader reads this many bytes from the end of a file first (its default footer read size).
ARROW_FOOTER_READ_BYTES = 64 * 1024
_TRAILER_SIZE = 8  # 4-byte footer length + magic
_LOCAL_SCHEMES = frozenset({"", "file"})


def sized_fragment(
    io: FileIO, path: str, size: int, *, dictionary_columns: Sequence[str] = ()
) -> ds.ParquetFileFragment | None:
    """A Parquet fragment of ``path`` that Arrow opens with ``size`` (no HEAD request), or None (see module doc).

    ``dictionary_columns``: top-level columns read as dictionaries (those the file has; others are ignored).
    """
    from pyiceberg.io.pyarrow import PyArrowFileIO

    if not isinstance(io, PyArrowFileIO) or urlparse(path).scheme.lower() in _LOCAL_SCHEMES or size <= 0:
        return None
    scheme, netloc, file_path = PyArrowFileIO.parse_location(path, io.properties)
    file_format = ds.ParquetFileFormat(
        read_options=ds.ParquetReadOptions(dictionary_columns=set(dictionary_columns)),
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True),
    )
    return file_format.make_fragment(file_path, io.fs_by_scheme(scheme, netloc), file_size=size)


def read_fragment_footer(fragment: ds.ParquetFileFragment, path: str, size: int) -> tuple[pq.FileMetaData, bytes, int]:
    """The footer of a sized fragment: (metadata, Thrift bytes, bytes read from storage)."""
    try:
        fragment.ensure_complete_metadata()
        metadata = fragment.metadata
    except pa.ArrowInvalid as error:
        raise CorruptFileError(
            f"{path}: no valid Parquet footer where its recorded size of {size} bytes puts it (is the manifest's "
            f"file_size_in_bytes right?): {error}"
        ) from error
    sink = pa.BufferOutputStream()
    metadata.write_metadata_file(sink)
    serialized = sink.getvalue().to_pybytes()  # PAR1, the Thrift FileMetaData, its length, PAR1
    footer_bytes = serialized[4:-_TRAILER_SIZE]
    footer_read = len(footer_bytes) + _TRAILER_SIZE
    return metadata, footer_bytes, min(size, max(ARROW_FOOTER_READ_BYTES, footer_read))


class FragmentRowGroups:
    """``pq.ParquetFile``'s ``metadata`` and ``read_row_groups``, read through a sized fragment."""

    def __init__(self, fragment: ds.ParquetFileFragment, metadata: pq.FileMetaData) -> None:
        self.fragment = fragment
        self.metadata = metadata

    def read_row_groups(self, row_groups: Sequence[int], columns: list[str], use_threads: bool = True) -> pa.Table:
        """The named top-level columns of these row groups (each once, however often named), one chunk per row
        group where they fit."""
        run = self.fragment.subset(row_group_ids=list(row_groups))
        rows = max((self.metadata.row_group(index).num_rows for index in row_groups), default=1)
        return run.to_table(columns=list(dict.fromkeys(columns)), use_threads=use_threads, batch_size=max(rows, 1))
