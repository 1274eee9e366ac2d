"""The run store: runs, traces, metrics, feedback and baselines behind one SQLAlchemy Core interface."""

from hoprag.store.records import BaselineInfo, FeedbackEvent, RunInfo
from hoprag.store.run_store import RunStore, StoreError
from hoprag.store.url import ENV_VAR, resolve_store_url

__all__ = ["ENV_VAR", "BaselineInfo", "FeedbackEvent", "RunInfo", "RunStore", "StoreError", "resolve_store_url"]
