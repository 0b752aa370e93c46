"""What ``tuner status`` shows, and whether a campaign exists: a study read as plain trial
records and modelled by the rules of `lineage.trials`.

- `read_study`: a study's trials as `lineage.trials.TrialRecord` values (plain SQL on SQLite
  and PostgreSQL, Optuna elsewhere), without importing Optuna, SQLAlchemy or MLflow where
  SQL applies;
- `collect`: a campaign's status as a dict (what ``tuner status --format json`` writes);
- `study_exists`: whether a campaign's study is there (`tuner resume`); a storage error is
  raised, not taken for "no campaign".

The CLI formats what these return.
"""

from __future__ import annotations

from lineage.trials import chain_attempts
from tuner.status._model import collect, study_exists
from tuner.status._read import NoStudy, StudyData, read_study, timestamp

__all__ = [
    "NoStudy",
    "StudyData",
    "chain_attempts",
    "collect",
    "read_study",
    "study_exists",
    "timestamp",
]
