"""How to build an engine somewhere else: the index path and the engine's spec, picklable.

A Ray worker cannot share the engine of the process that started the run, so it is sent an
:class:`EngineRecipe` and builds its own engine from the index **path** (not the index's arrays
through the object store): on one machine every worker reads the same directory; on a cluster of
several machines the path must name the same index on every node (a shared filesystem, or a copy
at the same path). The recipe carries the index's ``artifact_id`` and the engine's config hash as
the driver saw them, so a worker that finds another index or builds another configuration there
refuses to answer instead of writing traces of a different run into the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from hoprag.errors import ConfigError
from hoprag.pipeline.engine import Engine
from hoprag.pipeline.spec import EngineSpec

__all__ = ["EngineRecipe"]


@dataclass(frozen=True)
class EngineRecipe:
    """The arguments of :func:`hoprag.pipeline.factory.make_engine` over the index at ``index_dir``."""

    index_dir: str
    spec: EngineSpec = field(default_factory=EngineSpec)
    #: the caller's clearance (not part of the spec), as the driver resolved it
    clearance: Any = None
    #: what the driver's engine and index were: a worker building something else refuses
    config_hash: str = ""
    artifact_id: str = ""

    @classmethod
    def over(cls, index: str | os.PathLike[str], **options: Any) -> EngineRecipe:
        """A recipe over ``index``: a directory (made absolute: workers start elsewhere) or a URL."""
        from hoprag.index.open import index_location

        return cls(index_dir=index_location(index), **options)

    def __call__(self) -> Engine:
        from hoprag.index.open import open_index
        from hoprag.index.pg_schema import display_url, is_pg_url
        from hoprag.pipeline.factory import make_engine

        index = open_index(self.index_dir)
        found = index.manifest.artifact_id
        if self.artifact_id and found != self.artifact_id:
            raise ConfigError(
                f"the index at {display_url(self.index_dir) if is_pg_url(self.index_dir) else self.index_dir} on this worker is artifact {found}, not {self.artifact_id} as where "
                "the run started; every node must see the same index (a shared filesystem, or the same copy)"
            )
        engine = make_engine(self.spec, index, clearance=self.clearance)
        built = getattr(engine, "config_hash", "")
        if self.config_hash and built != self.config_hash:
            raise ConfigError(
                f"this worker built engine config {built}, not {self.config_hash} as where the run started; "
                "install the same hoprag version on every node"
            )
        return engine

