"""The run store: runs, traces, metrics, feedback and baselines behind one SQLAlchemy Core interface."""

from hoprag.store.errors import StoreError

try:
    import sqlalchemy as _sqlalchemy  # noqa: F401  (the store's one required extra)
except ImportError:
    raise StoreError("the run store needs SQLAlchemy, which is not installed. "
                     "Fix: pip install 'hoprag[gates]' (add 'hoprag[postgres]' for a PostgreSQL store)") from None

from hoprag.store.records import (COMPLETE, FAILED, INCOMPLETE, RUN_STATUSES, RUNNING, UNKNOWN, BaselineInfo,
                                  FeedbackEvent, RemovedRun, RunInfo)
from hoprag.store.run_store import RunStore
from hoprag.store.url import ENV_VAR, resolve_store_url

__all__ = ["COMPLETE", "ENV_VAR", "FAILED", "INCOMPLETE", "RUNNING", "RUN_STATUSES", "UNKNOWN", "BaselineInfo",
           "FeedbackEvent", "RemovedRun", "RunInfo", "RunStore", "StoreError", "resolve_store_url"]
