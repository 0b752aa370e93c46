"""MindInsight compatibility: mindoptimizer configs and ``HyperConfig`` scripts.

- ``convert_file`` / ``convert_config``: a mindoptimizer config as a commented campaign
  (``tuner convert mindinsight CONFIG -o campaign.yaml``).
- ``is_mindoptimizer_config`` / ``mindoptimizer_message``: recognize one given to
  ``tuner validate`` or ``tuner run`` and say how to convert it.
- ``HyperConfig``: ``from tuner.compat.mindinsight import HyperConfig`` in place of
  ``from mindinsight.optimizer import HyperConfig``; the script then runs under ``tuner run``.
"""

from __future__ import annotations

from tuner.compat.mindinsight._check import check_config
from tuner.compat.mindinsight._convert import convert_config, convert_file
from tuner.compat.mindinsight._hyper_config import AttributeDict, HyperConfig, HyperConfigError
from tuner.config import is_mindoptimizer_config, mindoptimizer_message

__all__ = [
    "AttributeDict",
    "HyperConfig",
    "HyperConfigError",
    "check_config",
    "convert_config",
    "convert_file",
    "is_mindoptimizer_config",
    "mindoptimizer_message",
]
