"""Config-driven tuning campaigns: Optuna asks, trials run as processes on device slots."""

from __future__ import annotations

from tuner._errors import BudgetExhausted, ConfigError, TunerError

__all__ = ["BudgetExhausted", "ConfigError", "TunerError"]
