"""The one clearance resolver: which clearance a caller has, read the same way by every entry point.

Every command with ``--clearance`` (``search``, ``ask``, ``run``, ``ablate``, ``pool``, ``serve``), the
library's engine builders (:func:`hoprag.pipeline.factory.make_engine`,
:func:`hoprag.evaluation.ablations.ablation_engines`) and the service's startup call
:func:`caller_clearance`. It reads, first match wins:

1. the argument (``--clearance`` / ``--acl-levels``, or the library's ``clearance=``);
2. the environment (``HOPRAG_CLEARANCE`` / ``HOPRAG_ACL_LEVELS``);
3. the entry point's default: unrestricted for the commands and the library (the operator who owns
   the index files), the lowest level for the service (callers without a token).

It fails closed. An empty value (a flag or a variable set to ``""``) is refused, never read as
"unset"; so is an unknown level, and a level list that does not name every ``acl`` class the
index's manifest records (a class the levels do not list would rank as the highest level: hidden,
but the order of the levels would be a guess). Each refusal is a :class:`~hoprag.errors.ConfigError`
naming the value, where it came from and the fix.

:func:`resolve_clearance` is the value-level half retrievers and engines use on what they are
handed (a level name or a :class:`~hoprag.security.acl.Clearance`); the policy itself lives in
:mod:`hoprag.security.acl`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hoprag.security.acl import DEFAULT_LEVELS, Clearance, ClearancePolicy, parse_levels
from hoprag.errors import ConfigError

__all__ = [
    "CLEARANCE_ENV",
    "COMMAND",
    "LEVELS_ENV",
    "LIBRARY",
    "Names",
    "Setting",
    "caller_clearance",
    "check_index_covered",
    "resolve_clearance",
]

CLEARANCE_ENV = "HOPRAG_CLEARANCE"
LEVELS_ENV = "HOPRAG_ACL_LEVELS"


@dataclass(frozen=True)
class Names:
    """How an entry point spells its two inputs, so a message names what the user actually typed."""

    clearance: str = "--clearance"
    levels: str = "--acl-levels"


#: the commands (``serve`` too)
COMMAND = Names()
#: the library's keyword arguments
LIBRARY = Names(clearance="clearance=", levels="acl_levels=")


@dataclass(frozen=True)
class Setting:
    """A value and where it came from: an argument (``--clearance``) or an environment variable."""

    value: str
    source: str
    from_env: bool

    @property
    def where(self) -> str:
        return f"the environment variable {self.source}" if self.from_env else self.source


def resolve_clearance(clearance: str | Clearance | None, policy: ClearancePolicy | None = None) -> Clearance | None:
    """What a retriever or engine was handed, checked: ``None`` stays ``None`` (no restriction), a
    :class:`Clearance` stays itself, a level name is parsed under ``policy`` (default levels)."""
    if clearance is None or isinstance(clearance, Clearance):
        return clearance
    policy = policy or ClearancePolicy()
    if not isinstance(clearance, str):
        raise ConfigError(f"clearance {clearance!r} is not a level name. "
                          f"Fix: give one of {', '.join(policy.levels)}, or None for no restriction")
    if not clearance.strip():
        raise ConfigError(f"clearance {clearance!r} is empty; an empty clearance is not a level and does not mean "
                          f"unrestricted. Fix: give one of {', '.join(policy.levels)}, or None for no restriction")
    return policy.clearance(clearance)


def caller_clearance(
    clearance: str | Clearance | None = None,
    acl_levels: str | None = None,
    *,
    index: Any = None,
    unlabelled: str | None = None,
    unset: Literal["unrestricted", "lowest"] = "unrestricted",
    names: Names = COMMAND,
    environ: Mapping[str, str] | None = None,
) -> Clearance | None:
    """The caller's clearance: the argument, else ``HOPRAG_CLEARANCE``, else ``unset`` (``None``: unrestricted).

    ``acl_levels`` (``"public,internal,restricted"``, lowest first), else ``HOPRAG_ACL_LEVELS``, else the
    default levels, order the classes; a :class:`Clearance` argument carries its own policy. With
    ``index`` (a loaded index: its ``manifest.acl_classes``), levels that do not list every class it
    holds are refused whenever a clearance is in force or levels were given. ``names`` spells the
    inputs in messages; ``environ`` defaults to the process environment.
    """
    env = os.environ if environ is None else environ
    if isinstance(clearance, Clearance):
        held, missing = _uncovered(clearance.policy, index)
        if missing:
            raise ConfigError(
                _uncovered_message(f"the levels {','.join(clearance.policy.levels)} of the {names.clearance} Clearance",
                                   missing, held, index)
                + f"Fix: build it under a ClearancePolicy whose levels list every class, lowest first, e.g. "
                f"levels=({', '.join(repr(n) for n in [*clearance.policy.levels, *missing])})"
            )
        return clearance
    if clearance is not None and not isinstance(clearance, str):
        raise ConfigError(f"{names.clearance} {clearance!r} is not a level name. "
                          f"Fix: give one of {', '.join(DEFAULT_LEVELS)}, or leave it out")
    level = _pick(clearance, names.clearance, CLEARANCE_ENV, env)
    levels = _pick(acl_levels, names.levels, LEVELS_ENV, env)
    policy = _policy(levels, unlabelled)
    if level is not None and not level.value.strip():
        raise ConfigError(_empty_clearance(level, policy, unset))
    if index is not None and (level is not None or levels is not None or unset == "lowest"):
        check_index_covered(policy, index, levels, names)
    if level is None:
        return None if unset == "unrestricted" else policy.clearance(policy.levels[0])
    return _parse(policy, level, levels, names)


def check_index_covered(policy: ClearancePolicy, index: Any, levels: Setting | None, names: Names = COMMAND) -> None:
    """Refuse ``policy`` when it does not list every ``acl`` class the index's manifest records.

    ``levels`` says where the levels came from (``None``: the default levels). An index without a
    manifest (a test double, an in-memory corpus) has nothing to check against.
    """
    held, missing = _uncovered(policy, index)
    if not missing:
        return
    wanted = ",".join([*policy.levels, *missing])
    if levels is None:
        source = f"the default levels {','.join(policy.levels)}"
        fix = f"list every class, lowest first, with {names.levels} or {LEVELS_ENV}, e.g. {LEVELS_ENV}={wanted}"
    elif levels.from_env:
        source = f"the levels '{levels.value}' from {levels.where}"
        fix = f"list every class, lowest first, e.g. {levels.source}={wanted}, or unset {levels.source} for the default levels"
    else:
        source = f"the levels '{levels.value}' from {levels.where}"
        fix = f"list every class, lowest first, e.g. {levels.source} {wanted}"
    raise ConfigError(_uncovered_message(source, missing, held, index) + f"Fix: {fix} (put each class where it ranks)")


def _uncovered(policy: ClearancePolicy, index: Any) -> tuple[list[str], list[str]]:
    """The classes the index's manifest records (no class left out: it gets the unlabelled level) and
    those of them ``policy`` does not list."""
    manifest = getattr(index, "manifest", None)
    classes: Iterable[str] = getattr(manifest, "acl_classes", None) or ()
    held = sorted({_norm(name) for name in classes} - {""})
    return held, [name for name in held if name not in policy.levels]


def _uncovered_message(source: str, missing: list[str], held: list[str], index: Any) -> str:
    where = getattr(index, "location", None) or "the index"
    return (f"{source} do not list the acl class{'es' if len(missing) > 1 else ''} {', '.join(missing)} that {where} "
            f"holds (its manifest's acl_classes: {', '.join(held)}); a class the levels do not name could only be "
            "guessed at (it would rank as the highest level), so these levels are refused. ")


def _norm(value: str) -> str:
    return str(value).strip().lower()


def _pick(value: str | None, name: str, variable: str, env: Mapping[str, str]) -> Setting | None:
    """The argument when given, else the environment variable when set (set to ``""`` counts as set)."""
    if value is not None:
        return Setting(value, name, False)
    if variable in env:
        return Setting(env[variable], variable, True)
    return None


def _policy(levels: Setting | None, unlabelled: str | None) -> ClearancePolicy:
    if levels is None:
        return ClearancePolicy(unlabelled=unlabelled)
    parts = [part.strip() for part in levels.value.split(",")]
    named = [part for part in parts if part]
    if not named:
        how = f"set {levels.source}=" if levels.from_env else f"pass {levels.source} "
        raise ConfigError(
            f"{levels.where} is {levels.value!r}, which names no clearance level. "
            f"Fix: {how}{','.join(DEFAULT_LEVELS)} (any levels, lowest first)"
            + (f", or unset {levels.source} for those default levels" if levels.from_env
               else f", or leave {levels.source} out for those default levels")
        )
    folded = [_norm(part) for part in named]
    twice = sorted({name for name in folded if folded.count(name) > 1})
    if twice:
        raise ConfigError(f"{levels.where} is {levels.value!r}, which names {', '.join(twice)} more than once. "
                          f"Fix: give each level once, lowest first, e.g. {','.join(dict.fromkeys(folded))}")
    return parse_levels(levels.value, unlabelled=unlabelled)


def _empty_clearance(level: Setting, policy: ClearancePolicy, unset: str) -> str:
    valid = ", ".join(policy.levels)
    otherwise = "unrestricted access as the index's owner" if unset == "unrestricted" else f"the lowest level, '{policy.levels[0]}'"
    if level.from_env:
        return (f"the environment variable {level.source} is set but empty; an empty clearance is not a level and "
                f"does not mean unrestricted. Fix: set {level.source} to one of {valid}, or unset it "
                f"(unset {level.source}) for {otherwise}")
    return (f"{level.source} {level.value!r} is empty; an empty clearance is not a level and does not mean unrestricted. "
            f"Fix: pass {level.source} with one of {valid}, or leave {level.source} out for {otherwise}")


def _parse(policy: ClearancePolicy, level: Setting, levels: Setting | None, names: Names) -> Clearance:
    name = _norm(level.value)
    if name not in policy.levels:
        under = "" if levels is None else f" (the levels from {levels.where})"
        how = f"set {level.source} to" if level.from_env else f"pass {level.source} with"
        raise ConfigError(
            f"unknown clearance '{level.value}' from {level.where}; valid (lowest first){under}: "
            f"{', '.join(policy.levels)}. Fix: {how} one of them (or {names.levels} / {LEVELS_ENV} to define "
            "other levels)"
        )
    return policy.clearance(name)
