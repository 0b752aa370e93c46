"""PyTorch Lightning integration: ``Trainer(callbacks=[LineageCallback()])``.

Importing this module imports lightning and torch; ``import lineage`` never does.
"""

from __future__ import annotations

from lineage._require import require

require("lightning", "lightning")

from lineage.lightning._callback import LineageCallback  # noqa: E402

__all__ = ["LineageCallback"]
