"""Compatibility layers for users arriving from other tuning tools.

``tuner.compat.mindinsight``: MindInsight's ``mindoptimizer`` configs and ``HyperConfig``.
"""
