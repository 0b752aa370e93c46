"""Record framing and CRC-32C of MindSpore summary files, checked on real files."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from lineage.mindinsight import RecordError, find_runs, iter_records
from lineage.mindinsight._crc32c import _crc32c_python, crc32c, masked_crc32c


def test_crc32c_matches_the_published_check_values() -> None:
    # RFC 3720, B.4: CRC-32C of "123456789" and of 32 zero bytes.
    assert _crc32c_python(b"123456789") == 0xE3069283
    assert crc32c(b"123456789") == 0xE3069283
    assert _crc32c_python(bytes(32)) == 0x8A9136AA
    assert crc32c(b"") == 0


def _first_lineage(base: Path) -> Path:
    return find_runs(base)[0].lineage_files[0]


def test_every_record_of_real_files_passes_both_crcs(copy_base: Path) -> None:
    files = [f for run in find_runs(copy_base) for f in run.files]
    assert len(files) == 8 * 3  # train lineage + eval lineage + scalars, per training
    for path in files:
        data = path.read_bytes()
        payloads = list(iter_records(path))
        assert payloads
        # The framing accounts for every byte: length, 2 CRCs and the payload per record.
        assert sum(16 + len(p) for p in payloads) == len(data)
        (length,) = struct.unpack("<Q", data[:8])
        assert struct.unpack("<I", data[8:12])[0] == masked_crc32c(data[:8])
        assert struct.unpack("<I", data[12 + length : 16 + length])[0] == masked_crc32c(
            data[12 : 12 + length]
        )


def test_a_flipped_payload_byte_fails_the_data_crc(copy_base: Path) -> None:
    path = _first_lineage(copy_base)
    data = bytearray(path.read_bytes())
    (length,) = struct.unpack("<Q", data[:8])
    data[12 + length // 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(RecordError) as info:
        list(iter_records(path))
    assert info.value.path == str(path)
    assert info.value.offset == 0
    assert "bad CRC of the record data" in str(info.value)
    assert str(path) in str(info.value)


def test_a_damaged_length_fails_the_header_crc(copy_base: Path) -> None:
    path = _first_lineage(copy_base)
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(RecordError, match="bad CRC of the record length"):
        list(iter_records(path))


def test_a_cut_record_is_reported_as_truncated_after_the_whole_records(copy_base: Path) -> None:
    run = find_runs(copy_base)[0]
    path = run.summary_files[0]
    whole = list(iter_records(path))
    data = path.read_bytes()
    cut = sum(16 + len(p) for p in whole[:3]) + 20  # 20 bytes into the 4th record
    path.write_bytes(data[:cut])
    seen = []
    with pytest.raises(RecordError, match="truncated record") as info:
        for payload in iter_records(path):
            seen.append(payload)
    assert seen == whole[:3]
    assert info.value.offset == cut - 20


def test_a_cut_header_is_reported(tmp_path: Path, copy_base: Path) -> None:
    path = _first_lineage(copy_base)
    data = path.read_bytes()
    path.write_bytes(data + data[:5])
    with pytest.raises(RecordError, match=r"truncated record header \(5 of 12 bytes\)"):
        list(iter_records(path))


def test_an_empty_file_has_no_records(tmp_path: Path) -> None:
    path = tmp_path / "events.out.events.summary.1.0.host_MS"
    path.write_bytes(b"")
    assert list(iter_records(path)) == []
