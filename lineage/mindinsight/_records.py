"""The record framing of MindSpore summary files (``*_MS``, ``*_lineage``).

Each record is ``length`` (8 bytes, little-endian), the masked CRC-32C of those 8 bytes
(4 bytes), ``length`` bytes of a serialized protobuf event, then the masked CRC-32C of the
event (4 bytes). The same layout as TensorFlow's TFRecord files.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from lineage._errors import LineageError
from lineage.mindinsight._crc32c import masked_crc32c

__all__ = ["RecordError", "iter_records"]

_HEADER = 12
_FOOTER = 4


class RecordError(LineageError):
    """A summary file is corrupt or truncated. ``path`` and ``offset`` (of the record that
    broke) say where; the message names both."""

    def __init__(self, path: str | os.PathLike[str], offset: int, reason: str) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self.reason = reason
        super().__init__(f"{self.path}: {reason} (record at byte {offset})")


def iter_records(path: str | os.PathLike[str], *, verify: bool = True) -> Iterator[bytes]:
    """Yield the payload of every record of the file at ``path``, in order.

    Raises :class:`RecordError` at the first record whose header or payload fails its CRC,
    whose length runs past the end of the file, or that is cut short; records before it have
    been yielded. ``OSError`` from reading propagates.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        offset = 0
        while offset < size:
            header = f.read(_HEADER)
            if len(header) < _HEADER:
                raise RecordError(
                    path, offset, f"truncated record header ({len(header)} of {_HEADER} bytes)"
                )
            raw_len = header[:8]
            (length,) = struct.unpack("<Q", raw_len)
            (len_crc,) = struct.unpack("<I", header[8:])
            if verify and masked_crc32c(raw_len) != len_crc:
                raise RecordError(path, offset, "bad CRC of the record length")
            end = offset + _HEADER + length + _FOOTER
            if end > size:
                raise RecordError(
                    path,
                    offset,
                    f"truncated record (needs {length + _FOOTER} bytes after the header, "
                    f"{size - offset - _HEADER} left)",
                )
            payload = f.read(length)
            (data_crc,) = struct.unpack("<I", f.read(_FOOTER))
            if verify and masked_crc32c(payload) != data_crc:
                raise RecordError(path, offset, "bad CRC of the record data")
            yield payload
            offset = end
