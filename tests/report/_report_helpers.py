"""Checks shared by the report tests (and the campaign test that looks at its report)."""

from __future__ import annotations

from pathlib import Path


def check_png(path: Path) -> None:
    """A real picture: decodes, a few KB at least, more than one colour."""
    import matplotlib.image

    assert path.stat().st_size > 8_000, path
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 300, pixels.shape
    assert float(pixels[..., :3].std()) > 0.02, f"{path} is nearly one colour"
