"""Every command's --seed is held to 0..2**32-1 by the option itself (hoprag.commands.seed_option):
numpy refuses a negative seed with a traceback, so a command that declares its own --seed fails here."""

from __future__ import annotations

import pytest
import typer.main

from hoprag.cli import app, main
from hoprag.commands import SEED_MAX

pytestmark = pytest.mark.unit


def _commands(group, prefix: str = ""):
    subcommands = getattr(group, "commands", None)
    if subcommands:
        for name, command in subcommands.items():
            yield from _commands(command, f"{prefix} {name}".strip())
    else:
        yield prefix, group


def test_every_seed_option_is_bounded() -> None:
    seeded = {}
    for name, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            if "--seed" in getattr(param, "opts", ()):
                seeded[name] = (getattr(param, "min", None), getattr(param, "max", None))
    assert {"compare", "split", "synth", "pool", "judge calibrate"} <= set(seeded), sorted(seeded)
    for name, bounds in seeded.items():
        assert bounds == (0, SEED_MAX), name


@pytest.mark.parametrize("seed", ["-5", str(SEED_MAX + 1)])
def test_a_seed_out_of_range_is_a_usage_error(seed: str, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--seed", seed])
    assert info.value.code == 2
    text = capsys.readouterr().err
    assert "--seed" in text and "Traceback" not in text
