"""Hugging Face Trainer integration: ``Trainer(..., callbacks=[LineageCallback()])``.

Importing this module imports transformers and torch; ``import lineage`` never does.
"""

from __future__ import annotations

from lineage._require import require

require("transformers", "transformers")
require("accelerate", "transformers")

from lineage.transformers._callback import LineageCallback  # noqa: E402

__all__ = ["LineageCallback"]
