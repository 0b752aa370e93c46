"""Names shared by the converter and ``HyperConfig``: MindInsight's own, and the two
environment variables a converted campaign sets for its trials."""

from __future__ import annotations

#: Set by mindoptimizer itself: a JSON object {params, summary_dir, custom_lineage_data}.
MINDINSIGHT_ENV = "MINDINSIGHT_HYPER_CONFIG"
#: Set by a converted campaign's ``env``: mindoptimizer's ``summary_base_dir``.
SUMMARY_BASE_DIR_ENV = "MINDINSIGHT_SUMMARY_BASE_DIR"
#: Set by a converted campaign's ``env``: the parameters recorded as user-defined lineage
#: (comma-separated), i.e. what ``HyperConfig.custom_lineage_data`` holds.
USER_DEFINED_ENV = "MINDINSIGHT_USER_DEFINED"

#: Hyperparameters ``SummaryCollector`` records itself (MindInsight's system-defined ones).
SYSTEM_PARAMS = ("learning_rate", "batch_size", "epoch")
#: The one system-defined target.
SYSTEM_TARGETS = ("loss",)
