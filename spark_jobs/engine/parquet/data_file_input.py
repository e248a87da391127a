"""One data file's storage access during one read: its footer, and a stream opened only when a read needs one.

Opening a file by path costs an object store one HEAD request (pyarrow asks for the size), although the manifest
recorded it. So:

1. The footer comes from the process's cache when it holds this file version (no I/O at all).
2. Otherwise, a read that needs no index structure (no row filter) on an object store has Arrow read the footer
   through a fragment opened with the recorded size (``sized_fragment``: no HEAD), or takes that read when the read
   started it ahead (``footer_read_ahead``); the fragment is kept with the cached footer. A read with a row filter
   reads the footer itself through a stream, keeping the file's tail, where bloom filters and page indexes usually
   are (``footer_cache``).
3. The stream is opened on first use only (index reads, or decoding without a fragment). On S3, when obstore can
   honour the FileIO's settings, it is a ``SizedObjectFile`` (``shared/object_ranges``): ranged GETs with the recorded
   size, no HEAD; otherwise the FileIO opens the file by path. A footer that is not where the recorded size puts it
   fails with ``CorruptFileError`` naming both sizes.
4. Row groups decode through the footer's fragment when no stream was opened, else through ``pq.ParquetFile`` on
   the stream (with the cached metadata, so the footer is never parsed twice). A ``SizedObjectFile`` gives each
   reader a handle of its own (opening one costs no request), read without pre-buffering: Arrow then reads each
   column chunk within the call, so no Arrow thread touches the Python file after it returns.
"""

from __future__ import annotations

from types import TracebackType

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io import FileIO, InputStream

from spark_jobs.engine.parquet.footer_cache import FOOTER_CACHE, FooterCache, ParquetFooter, cached_footer, open_input
from spark_jobs.engine.parquet.footer_read_ahead import fragment_footer, take_footer_read_ahead
from spark_jobs.engine.parquet.sized_fragment import FragmentRowGroups, sized_fragment
from spark_jobs.engine.shared.errors import CorruptFileError
from spark_jobs.engine.shared.object_ranges import SizedObjectFile


class DataFileInput:
    """The footer, a lazily opened stream and a row group reader of one data file version (path, recorded size)."""

    def __init__(self, io: FileIO, path: str, size: int, *, cache: FooterCache = FOOTER_CACHE) -> None:
        self.io = io
        self.path = path
        self.size = size
        self.cache = cache
        self._stream: InputStream | None = None

    def footer(self, *, reads_index: bool) -> tuple[ParquetFooter, bool, int]:
        """(footer, was_cache_hit, bytes_read); ``reads_index``: the read will consult bloom filters or page indexes."""
        footer = self.cache.get(self.path, self.size)
        if footer is not None:
            return footer, True, 0
        read_ahead = None if reads_index else take_footer_read_ahead(self.path, self.size)
        if read_ahead is not None:  # read on an I/O thread already (footer_read_ahead): its bytes count here
            footer, bytes_read = read_ahead.result()
            self.cache.put(footer)
            return footer, False, bytes_read
        fragment = None if reads_index else sized_fragment(self.io, self.path, self.size)
        if fragment is None:
            stream = self.stream
            try:
                return cached_footer(stream, self.path, self.size, cache=self.cache)
            except CorruptFileError:
                if isinstance(stream, SizedObjectFile):
                    stream.check_recorded_size()  # names both sizes when they differ
                raise
        footer, bytes_read = fragment_footer(fragment, self.path, self.size)
        self.cache.put(footer)
        return footer, False, bytes_read

    @property
    def stream(self) -> InputStream:
        """The file opened for random access through the table's FileIO (on first use)."""
        if self._stream is None:
            self._stream = SizedObjectFile.open(self.io, self.path, self.size) or open_input(self.io, self.path)
        return self._stream

    @property
    def is_open(self) -> bool:
        """Whether the stream has been opened (a read of it then opens nothing)."""
        return self._stream is not None

    def decodes_on_arrow_threads(self, footer: ParquetFooter) -> bool:
        """Whether row groups may decode on Arrow's threads and several at once (an Arrow-native file or fragment)."""
        if self._stream is None and footer.fragment is not None:
            return True
        return isinstance(self.stream, (pa.NativeFile, SizedObjectFile))

    def row_groups(self, footer: ParquetFooter, *, pre_buffer: bool) -> pq.ParquetFile | FragmentRowGroups:
        """A reader of this file's row groups: through the footer's fragment unless a stream is open already."""
        if self._stream is None and footer.fragment is not None:
            return FragmentRowGroups(footer.fragment, footer.metadata)
        stream = self.stream
        if isinstance(stream, SizedObjectFile):
            return pq.ParquetFile(pa.PythonFile(stream.reopened(), mode="r"), metadata=footer.metadata)
        return pq.ParquetFile(stream, metadata=footer.metadata, pre_buffer=pre_buffer)

    def close(self) -> None:
        """Close the stream, when one was opened."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> DataFileInput:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
