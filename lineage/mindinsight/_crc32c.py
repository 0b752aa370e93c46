"""CRC-32C (Castagnoli), as MindSpore's summary writer checksums each record.

A C implementation is used when one is installed (``google-crc32c`` or ``crc32c``); the
pure-Python fallback reads about 10 MB/s, enough for lineage and scalar files.
"""

from __future__ import annotations

from collections.abc import Callable

_POLY = 0x82F63B78  # CRC-32C, reflected


def _table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def _crc32c_python(data: bytes) -> int:
    table = _TABLE
    crc = 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _pick() -> Callable[[bytes], int]:
    try:
        import google_crc32c

        return lambda data: int(google_crc32c.value(data))
    except ImportError:
        pass
    try:
        import crc32c as _c

        return lambda data: int(_c.crc32c(data))
    except ImportError:
        return _crc32c_python


crc32c: Callable[[bytes], int] = _pick()


def masked_crc32c(data: bytes) -> int:
    """The checksum as stored in a record: rotated right by 15 bits plus a constant, so that
    a CRC of data that itself holds CRCs does not degenerate (the TFRecord convention)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
