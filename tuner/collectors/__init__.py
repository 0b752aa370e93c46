"""Collectors: how metric values get from a trial to the controller (trial API, plain-mlflow
run metrics, stdout patterns)."""

from __future__ import annotations

from tuner.collectors._api import TrialApiCollector
from tuner.collectors._base import Collector
from tuner.collectors._mlflow import MlflowRunCollector
from tuner.collectors._stdout import StdoutCollector

__all__ = ["Collector", "MlflowRunCollector", "StdoutCollector", "TrialApiCollector"]
