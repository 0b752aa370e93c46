"""PyTorch Lightning integration: ``Trainer(callbacks=[LineageCallback()])``, and
``trainer.fit(..., ckpt_path=resume_path())`` to continue a trial from its checkpoint.

Importing this module imports lightning and torch; ``import lineage`` never does.
"""

from __future__ import annotations

from lineage._require import require

require("lightning", "lightning")

from lineage.lightning._callback import (  # noqa: E402
    CHECKPOINT_FILE,
    LineageCallback,
    resume_path,
)

__all__ = ["CHECKPOINT_FILE", "LineageCallback", "resume_path"]
