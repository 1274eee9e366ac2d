"""Where the run store lives: ``--store`` beats ``HOPRAG_STORE`` beats ``.hoprag/hoprag.db``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_PATH", "ENV_VAR", "redact", "resolve_store_url"]

ENV_VAR = "HOPRAG_STORE"
DEFAULT_PATH = Path(".hoprag") / "hoprag.db"


def resolve_store_url(url: str | os.PathLike[str] | None = None) -> str:
    """A SQLAlchemy URL for ``url``, the environment or the default SQLite file.

    ``postgresql://`` and ``postgres://`` use psycopg 3; a value without ``://`` is a SQLite path.
    """
    raw = os.fspath(url) if url is not None else os.environ.get(ENV_VAR) or ""
    raw = raw.strip()
    if not raw:
        return f"sqlite:///{DEFAULT_PATH.as_posix()}"
    for prefix in ("postgresql://", "postgres://"):
        if raw.startswith(prefix):
            return "postgresql+psycopg://" + raw[len(prefix):]
    if "://" not in raw:
        return f"sqlite:///{Path(raw).as_posix()}"
    return raw


def redact(url: str) -> str:
    """The URL with any password (and secret query parameter) hidden, for messages."""
    from hoprag.security.boundary import shown

    try:
        from sqlalchemy.engine import make_url

        return shown(make_url(url).render_as_string(hide_password=True), "url")
    except Exception:  # an unparsable URL has nothing we can safely show but its scheme
        return url.split("://", 1)[0] + "://…"
