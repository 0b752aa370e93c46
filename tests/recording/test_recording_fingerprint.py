"""Content fingerprints of dataset files and folders."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lineage import UsageError
from lineage._fingerprint import dataset_name, fingerprint


def test_file_fingerprint_is_sha256_of_contents(tmp_path: Path) -> None:
    f = tmp_path / "train.csv"
    data = b"a,b\n" + b"1,2\n" * 600_000  # > 1 MiB: read in several chunks
    f.write_bytes(data)
    fp = fingerprint(f)
    assert fp.sha256 == hashlib.sha256(data).hexdigest()
    assert (fp.size, fp.files, fp.path) == (len(data), 1, str(f.resolve()))


def test_folder_fingerprint_tracks_contents_names_and_membership(tmp_path: Path) -> None:
    d = tmp_path / "ds"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("alpha")
    (d / "sub" / "b.txt").write_text("beta")
    first = fingerprint(d)
    assert (first.files, first.size) == (2, 9)
    # Same contents elsewhere: same fingerprint (location and mtimes do not count).
    copy = tmp_path / "copy"
    (copy / "sub").mkdir(parents=True)
    (copy / "sub" / "b.txt").write_text("beta")
    (copy / "a.txt").write_text("alpha")
    assert fingerprint(copy).sha256 == first.sha256
    (d / "sub" / "b.txt").write_text("betA")
    edited = fingerprint(d)
    assert edited.sha256 != first.sha256
    (d / "sub" / "b.txt").rename(d / "sub" / "c.txt")
    assert fingerprint(d).sha256 != edited.sha256
    (d / "new.txt").write_text("")
    assert fingerprint(d).files == 3


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="must exist"):
        fingerprint(tmp_path / "nope")


def test_dataset_name_is_tag_safe() -> None:
    assert dataset_name("/data/cifar-10.tar.gz") == "cifar-10"
    assert dataset_name("/data/my data set") == "my_data_set"
