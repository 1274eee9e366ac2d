"""The model flags every answering command shares (``ask``, ``run``, ``ablate``, ``serve``), defined once.

They are part of the engine option group of :mod:`hoprag.cli_engine`.

``llm_settings`` turns them into one :class:`~hoprag.llm.settings.LLMSettings` and refuses a flag
the chosen backends cannot use (``--base-url``/``--api-key`` without an ``openai:`` model,
``--n-ctx`` without a ``llamacpp:`` one, timeouts and budgets with no model at all) instead of
ignoring it. A value that came from an environment variable is not an error: the environment is
shared by many commands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from hoprag.llm.settings import LLMSettings

# The library's defaults (hoprag.llm.base.DEFAULT_TIMEOUT, hoprag.llm.guard.DEFAULT_BUDGET), repeated
# so that starting the CLI does not import the LLM layer; a test keeps them equal.
DEFAULT_TIMEOUT = 60.0
DEFAULT_BUDGET = 30.0

LLM_OPT = typer.Option(
    "offline", "--llm", envvar="HOPRAG_LLM", help="backend for every role: offline | openai:MODEL | llamacpp:PATH.gguf"
)
PLANNER_OPT = typer.Option(None, "--planner-llm", help="backend for planning (default: --llm)")
SYNTH_OPT = typer.Option(None, "--synth-llm", help="backend for synthesis (default: --llm)")
JUDGE_OPT = typer.Option(None, "--judge-llm", help="backend for the sufficiency judge (default: --llm)")
BASE_URL_OPT = typer.Option(
    None, "--base-url", envvar="HOPRAG_BASE_URL", help="OpenAI-compatible server URL (openai:MODEL only)"
)
API_KEY_OPT = typer.Option(
    None, "--api-key", envvar="HOPRAG_API_KEY", show_default=False,
    help="API key for openai:MODEL (default: $HOPRAG_API_KEY, then $OPENAI_API_KEY; a local server needs none)",
)
LLM_TIMEOUT_OPT = typer.Option(
    DEFAULT_TIMEOUT, "--llm-timeout", min=0.01, metavar="SECONDS",
    help="read timeout of one model call (connecting has its own 2 s limit); cut to what --llm-budget leaves",
)
LLM_RETRIES_OPT = typer.Option(
    3, "--llm-retries", min=0, max=20, metavar="N", help="retries of a transient model failure (429, 5xx, timeout)"
)
N_CTX_OPT = typer.Option(
    None, "--n-ctx", min=64, metavar="TOKENS", help="context size of a local llamacpp:PATH.gguf model (default 2048)"
)
LLM_BUDGET_OPT = typer.Option(
    DEFAULT_BUDGET, "--llm-budget", min=0.0, metavar="SECONDS",
    help="wall-clock seconds all model calls of one question may take together; when spent, the offline "
    "roles answer at once (0 = no budget)",
)
STRICT_LLM_OPT = typer.Option(
    False, "--strict-llm", help="a model call that would fall back to the offline role is an error (non-zero exit)"
)

# Flags that configure a backend, and the parameter names typer gives them.
_FLAG_OF = {
    "base_url": "--base-url",
    "api_key": "--api-key",
    "n_ctx": "--n-ctx",
    "llm_timeout": "--llm-timeout",
    "llm_retries": "--llm-retries",
    "llm_budget": "--llm-budget",
}


def _from_command_line(ctx: Any, name: str) -> bool:
    """True when the user typed the flag (not a default, not an environment variable)."""
    if ctx is None:
        return True
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _kind(spec: str | None) -> str:
    from hoprag.llm.settings import backend_kind

    return backend_kind(spec)


def model_specs(ctx: Any, engine: str, specs: dict[str, str | None]) -> dict[str, str | None]:
    """The model specs to use: a model named only by ``HOPRAG_LLM`` is dropped for ``--engine single``
    (with a note), one given on the command line is kept so the engine refuses it."""
    if engine != "single" or _kind(specs.get("llm")) == "offline" or _from_command_line(ctx, "llm"):
        return specs
    from rich.console import Console

    Console(stderr=True).print(f"[dim]note: --engine single uses no model; HOPRAG_LLM={specs['llm']} is not used[/]")
    return {**specs, "llm": "offline"}


def llm_settings(
    ctx: Any,
    specs: Sequence[str | None],
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    llm_timeout: float = DEFAULT_TIMEOUT,
    llm_retries: int = 3,
    n_ctx: int | None = None,
    llm_budget: float = DEFAULT_BUDGET,
    strict_llm: bool = False,
    base: LLMSettings | None = None,
) -> LLMSettings:
    """The settings the flags ask for over ``base`` (an engine config's, else the defaults); a flag no
    given backend can use is a ConfigError naming it."""
    from hoprag.errors import ConfigError
    from hoprag.llm.settings import LLMSettings

    kinds = {_kind(s) for s in specs}
    models = kinds - {"offline"}
    given = {name: value for name, value in (("base_url", base_url), ("api_key", api_key), ("n_ctx", n_ctx))
             if value is not None and _from_command_line(ctx, name)}
    typed = [name for name in ("llm_timeout", "llm_retries", "llm_budget") if _from_command_line(ctx, name)] if ctx else []
    shown = ", ".join(s for s in specs if s) or "offline"
    if "openai" not in kinds:
        for name in ("base_url", "api_key"):
            if name in given:
                raise ConfigError(
                    f"{_FLAG_OF[name]} applies only to openai:MODEL backends, and none is used ({shown}); "
                    f"drop {_FLAG_OF[name]}, or choose e.g. --llm openai:MODEL"
                )
    if "n_ctx" in given and "llamacpp" not in kinds:
        raise ConfigError(
            f"--n-ctx sets the context of a local llamacpp:PATH.gguf model, and none is used ({shown}); "
            "drop --n-ctx (a server's context is set where the server is started)"
        )
    if typed and not models:
        flags = ", ".join(_FLAG_OF[name] for name in typed)
        raise ConfigError(f"{flags} would be ignored: no role uses a model ({shown}); drop it, or pass --llm MODEL")
    chosen = {
        "base_url": base_url if "openai" in kinds else None,
        "api_key": api_key if "openai" in kinds else None,
        "timeout": llm_timeout,
        "retries": llm_retries,
        "n_ctx": n_ctx if "llamacpp" in kinds else None,
        "budget": llm_budget,
        "strict": strict_llm,
    }
    # what the flags do not set (connect timeout, circuit breaker) is the engine config's
    return LLMSettings(**{**(base.model_dump() if base is not None else {}), **chosen})
