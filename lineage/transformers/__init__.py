"""Hugging Face Trainer integration: ``Trainer(..., callbacks=[LineageCallback()])``, and
``trainer.train(resume_from_checkpoint=resume_path())`` to continue a trial from its checkpoint.

Importing this module imports transformers and torch; ``import lineage`` never does.
"""

from __future__ import annotations

from lineage._require import require

require("transformers", "transformers")
require("accelerate", "transformers")

from lineage.transformers._callback import LineageCallback, resume_path  # noqa: E402

__all__ = ["LineageCallback", "resume_path"]
