"""Moved to `tuner.search` (``tuner/search/_space.py``); this name forwards until the config
side (``tuner/cli/_cmd_validate.py``, ``tests/config``) imports it from there."""

from tuner.search._space import (  # noqa: F401
    distribution,
    distributions,
    is_active,
    sample_params,
    sampling_order,
    validate_params,
)
