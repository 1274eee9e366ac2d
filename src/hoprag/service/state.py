"""What every route of the service shares: its configuration, the state loaded once per app, and the
error every route raises (an HTTP status, what was wrong, the fix).

:mod:`hoprag.service.app` builds the app from these; :mod:`hoprag.service.api` and
:mod:`hoprag.service.views` read them, so the routes never import the app that mounts them.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hoprag.errors import ConfigError, HopragError
from hoprag.pipeline.spec import EngineSpec
from hoprag.service.tokens import TokenTable

__all__ = ["ServiceConfig", "ServiceError", "ServiceState", "split_fix"]


class ServiceConfig(BaseModel):
    """What ``hoprag serve`` starts with."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    index_dir: Union[Path, str] = Field(description="index directory, or a postgresql://…?index=NAME URL")
    store: Optional[str] = Field(None, description="run store URL (default $HOPRAG_STORE or .hoprag/hoprag.db)")
    tokens: Optional[Path] = Field(None, description="tokens.yaml: every request then needs one of its tokens; "
                                   "without it every caller is local and may write")
    clearance: Optional[str] = Field(None, description="clearance of the callers of a server without tokens "
                                     "(default $HOPRAG_CLEARANCE, else the lowest level: public); refused with tokens")
    host: Optional[str] = Field(None, description="the address the server is bound to: a Host name it answers to")
    allow_hosts: tuple[str, ...] = Field((), description="Host names the server answers to besides the loopback "
                                         "names (hoprag.service.guard)")

    @field_validator("allow_hosts")
    @classmethod
    def _host_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        # a Host header holds a name and maybe a port: '*' or a URL would match no request, silently
        # (a ConfigError passes through pydantic as itself: the message and its fix as written)
        for name in names:
            if not re.fullmatch(r"([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*",
                                name.strip()):
                raise ConfigError(f"--allow-host {name[:100]!r} is not a host name (a name or an address, "
                                  "a port allowed; no scheme, path or wildcard). Fix: give the name a browser "
                                  "or proxy uses to reach the server, e.g. --allow-host hoprag.internal.example")
        return names
    acl_levels: Optional[str] = Field(None, description="clearance levels, lowest first "
                                      "(default $HOPRAG_ACL_LEVELS, else public,internal,confidential,restricted)")
    unlabelled: Optional[str] = Field(None, description="level of documents without an acl class")
    engine: EngineSpec = Field(
        default_factory=EngineSpec,
        description="the engine questions are answered with (hoprag.pipeline.spec); a request chooses the engine, "
        "mode, k and whether the models answer. A model call's timeout is 20 s unless the spec sets one",
    )
    run_id: Optional[str] = Field(None, description="run that feedback is recorded under")
    thresholds: Optional[Path] = None
    cases: Optional[Path] = Field(None, description="cases.jsonl: lets the run browser show evaluation reports")
    request_timeout: float = Field(30.0, gt=0)
    max_body_bytes: int = Field(64 * 1024, ge=1024)
    threads: int = Field(16, ge=1, le=256, description="threads answering questions (in each worker process)")


class ServiceError(HopragError):
    """An error with an HTTP status; ``error`` says what was wrong, ``fix`` what to do."""

    def __init__(self, status: int, error: str, fix: str) -> None:
        super().__init__(f"{error}. Fix: {fix}")
        self.status = status
        self.error = error
        self.fix = fix


def split_fix(message: str) -> tuple[str, str]:
    """A hoprag message ``what. Fix: how`` as (what, how)."""
    head, sep, tail = message.partition(". Fix: ")
    return (head, tail) if sep else (message, "correct the request as the message says")


@dataclass
class ServiceState:
    """Everything the routes share (one per app); who a request's caller is: :mod:`hoprag.service.access`."""

    config: ServiceConfig
    index: Any
    policy: Any
    pool: Any
    store: Any
    tokens: TokenTable | None
    executor: ThreadPoolExecutor
    thresholds: Any
    cases: Any

    def fresh_executor(self) -> ThreadPoolExecutor:
        """Answering threads of their own, for a forked worker process (threads do not cross a fork)."""
        return ThreadPoolExecutor(self.config.threads, thread_name_prefix="hoprag-serve")
