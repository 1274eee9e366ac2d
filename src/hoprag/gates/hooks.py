"""The hook registry and the timed stage wrapper.

A check is ``fn(output, ctx) -> list[Metric]`` registered with ``@hook("stage")``. :class:`Stage`
(via :meth:`StageRunner.stage` or :meth:`StageRunner.run`) times the stage, emits its
``latency_ms``, then fans the output out to every hook of that stage. A hook that raises does not
stop the pipeline and is never silent: it emits ``hook_error`` = 1 with the hook and the reason,
which the default thresholds block on.

Adding a check::

    from hoprag.gates.hooks import hook, metric

    @hook("chunk")
    def tiny_chunks(chunks, ctx):
        return [metric(ctx, "tiny_count", sum(len(c.text) < 20 for c in chunks))]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from hoprag.metrics import Metric, canonical_stage

__all__ = ["REGISTRY", "EvalHook", "Stage", "StageContext", "StageRunner", "hook", "hooks_for", "metric", "unregister"]

Sink = Callable[[Metric], None]


class EvalHook(Protocol):
    """Reads a stage output, returns zero or more metrics."""

    def __call__(self, out: Any, ctx: dict[str, Any]) -> list[Metric]: ...


REGISTRY: dict[str, list[EvalHook]] = {}


def hook(stage: str) -> Callable[[EvalHook], EvalHook]:
    """Register ``fn`` to run after ``stage`` (a canonical stage name or a seed alias)."""
    name = canonical_stage(stage)

    def wrap(fn: EvalHook) -> EvalHook:
        hooks = REGISTRY.setdefault(name, [])
        if fn not in hooks:
            hooks.append(fn)
        return fn

    return wrap


def unregister(stage: str, fn: EvalHook) -> None:
    """Remove a hook (tests and plugins that register temporary checks)."""
    hooks = REGISTRY.get(canonical_stage(stage), [])
    if fn in hooks:
        hooks.remove(fn)


def hooks_for(stage: str) -> list[EvalHook]:
    """The hooks of ``stage``; the built-in checks register on first use."""
    from hoprag.gates.checks import register_builtin

    register_builtin()

    return list(REGISTRY.get(canonical_stage(stage), []))


def metric(ctx: dict[str, Any], name: str, value: float, **meta: Any) -> Metric:
    """A metric of the stage and run named in ``ctx``."""
    return Metric(run_id=ctx["run_id"], stage=ctx["stage"], name=name, value=float(value), meta=meta)


StageContext = dict[str, Any]


@dataclass
class Stage:
    """One timed stage of one run: ``with runner.stage("index") as st: st.output = build(...)``."""

    runner: StageRunner
    name: str
    ctx: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    latency_ms: float = 0.0

    def finish(self, output: Any) -> list[Metric]:
        """Record latency, run the hooks on ``output``, send every metric to the sink."""
        self.output = output
        ctx = {**self.runner.context, **self.ctx, "run_id": self.runner.run_id, "stage": self.name}
        emitted = [Metric(self.runner.run_id, self.name, "latency_ms", self.latency_ms)]
        for fn in hooks_for(self.name):
            try:
                emitted.extend(fn(output, ctx))
            except Exception as exc:  # a broken check must fail its gate, not the pipeline
                emitted.append(Metric(self.runner.run_id, self.name, "hook_error", 1.0,
                                      {"hook": getattr(fn, "__name__", repr(fn)),
                                       "error": f"{type(exc).__name__}: {exc}"[:500]}))
        label = ctx.get("label")
        if label:  # one stage run several times in a run (one per engine): names say which
            emitted = [Metric(m.run_id, m.stage, f"{label}/{m.name}", m.value, m.meta, m.ts) for m in emitted]
        for m in emitted:
            self.runner.emit(m)
        return emitted


class StageRunner:
    """Runs stages of one run, sending every metric to ``sink`` (a list's append, or a store)."""

    def __init__(self, run_id: str, sink: Sink, context: dict[str, Any] | None = None) -> None:
        self.run_id = run_id
        self.sink = sink
        self.context: dict[str, Any] = dict(context or {})
        self.emitted: list[Metric] = []

    def emit(self, m: Metric) -> None:
        self.emitted.append(m)
        self.sink(m)

    def run(self, name: str, fn: Callable[[Any], Any], data: Any, **ctx: Any) -> Any:
        """``fn(data)`` inside stage ``name``; returns its output."""
        with self.stage(name, **ctx) as st:
            st.output = fn(data)
        return st.output

    @contextmanager
    def stage(self, name: str, **ctx: Any) -> Iterator[Stage]:
        """Time the ``with`` body as stage ``name``; set ``.output`` inside it for the hooks."""
        st = Stage(self, canonical_stage(name), dict(ctx))
        start = time.perf_counter()
        try:
            yield st
        except Exception as exc:
            self.emit(Metric(self.run_id, st.name, "stage_error", 1.0, {"error": f"{type(exc).__name__}: {exc}"[:500]}))
            raise
        st.latency_ms = (time.perf_counter() - start) * 1000.0
        st.finish(st.output)

    def observe(self, name: str, output: Any, latency_ms: float = 0.0, **ctx: Any) -> list[Metric]:
        """Run the hooks of ``name`` on an output produced elsewhere (its latency measured there)."""
        st = Stage(self, canonical_stage(name), dict(ctx), latency_ms=latency_ms)
        return st.finish(output)
