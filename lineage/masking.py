"""Secret masking, public for every tool that prints or records what a user typed.

``tuner`` (and any other caller) masks storage URIs, argv, environments and output tails
with these functions, so that one rule set decides what a secret looks like.
"""

from __future__ import annotations

from lineage._secrets import (
    MASK,
    is_secret_name,
    mask_argv,
    mask_mapping,
    mask_nested,
    mask_uri,
    mask_value,
    scrub_text,
    secret_values,
)

__all__ = [
    "MASK",
    "is_secret_name",
    "mask_argv",
    "mask_mapping",
    "mask_nested",
    "mask_uri",
    "mask_value",
    "scrub_text",
    "secret_values",
]
