"""The one way hoprag reads a user's YAML: bounded in bytes, in nodes after aliases, and in what it echoes.

A YAML file is a graph: an alias (``*a``) reuses an anchored node (``&a``) without copying it, so
nine lines of nested aliases ("billion laughs") stand for a billion strings. PyYAML builds them
cheaply as shared objects, but whatever walks the result afterwards (validation, a digest, a
message quoting a value) pays for every copy: hundreds of MB and many seconds. :func:`parse_yaml`
therefore composes the document first, counts the nodes it stands for once every alias is
expanded, and refuses more than :data:`MAX_NODES` (and any alias that contains itself) before a
single Python object is built. Files above :data:`MAX_BYTES` are refused unread.

Every failure is an :class:`~hoprag.errors.InputError` naming the file, the line where PyYAML
knows it, what was wrong and the fix the caller gives; no message quotes more than
:data:`~hoprag.validation_messages.QUOTE_LIMIT` characters of the file. Thresholds, release
policies, price tables and token files are read here (``tests/gates/test_yaml_bomb.py`` fails a
reader that calls PyYAML itself).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hoprag.errors import InputError
from hoprag.files import check_file, read_text
from hoprag.validation_messages import QUOTE_LIMIT

__all__ = ["MAX_BYTES", "MAX_NODES", "parse_yaml", "read_yaml", "read_yaml_text"]

#: the largest YAML file read (configuration files are a few KB; a policy of thousands of rules fits)
MAX_BYTES = 4 * 1024 * 1024
#: nodes a document may stand for once its aliases are expanded (thresholds.yaml has about 100)
MAX_NODES = 200_000


class _TooLarge(Exception):
    pass


class _SelfReference(Exception):
    pass


def read_yaml_text(path: str | Path, *, what: str, fix: str) -> str:
    """The text of the YAML file at ``path``, refused above :data:`MAX_BYTES` before it is read."""
    path = check_file(path, what)
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # read_text says what is wrong with it
    if size > MAX_BYTES:
        raise InputError(f"{what} is {size:,} bytes; a YAML file hoprag reads holds at most {MAX_BYTES:,}",
                         source=str(path), fix=fix)
    text = read_text(path, what)
    if len(text) > MAX_BYTES:  # a FIFO or a file that grew while it was read
        raise InputError(f"{what} is longer than {MAX_BYTES:,} characters", source=str(path), fix=fix)
    return text


def read_yaml(path: str | Path, *, what: str, fix: str) -> Any:
    """The document in the YAML file at ``path`` (see :func:`parse_yaml`)."""
    return parse_yaml(read_yaml_text(path, what=what, fix=fix), source=str(path), what=what, fix=fix)


def parse_yaml(text: str, *, source: str, what: str, fix: str, max_nodes: int = MAX_NODES) -> Any:
    """The one document of ``text`` as plain Python values (YAML's safe types), or an InputError.

    The document is composed, its size with every alias expanded is counted, and only then built.
    """
    import yaml

    if len(text) > MAX_BYTES:
        raise InputError(f"{what} is longer than {MAX_BYTES:,} characters", source=source, fix=fix)
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader refuses control characters already
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node, max_nodes)
        return loader.construct_document(node)
    except _TooLarge:
        raise InputError(f"{what} stands for more than {max_nodes:,} values once its YAML aliases (*name) are "
                         "expanded (an alias bomb)",
                         source=source, fix=f"write the values out without nested aliases; {fix}") from None
    except _SelfReference:
        raise InputError(f"{what} has a YAML alias (*name) inside the value it names, which never ends",
                         source=source, fix=f"remove the self-reference; {fix}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(str(exc.problem or exc.context or "syntax error").split())[:QUOTE_LIMIT]
        raise InputError(f"{what} is not valid YAML ({problem})", source=source, line=line, fix=fix) from None
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:QUOTE_LIMIT] or "syntax error"
        raise InputError(f"{what} is not valid YAML ({first})", source=source, fix=fix) from None
    except RecursionError:
        raise InputError(f"{what} is YAML nested too deeply to read", source=source, fix=fix) from None
    except ValueError as exc:  # a value PyYAML cannot build: an integer of 5000 digits, a 13th month
        detail = " ".join(str(exc).split())[:120]
        raise InputError(f"{what} holds a YAML value that cannot be read ({detail})", source=source, fix=fix) from None
    finally:
        if loader is not None:
            loader.dispose()


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expanded_size(root: Any, limit: int) -> None:
    """Raise when ``root`` expands to more than ``limit`` nodes, or contains itself.

    Each node is visited once (its expanded size is kept), so the count costs the size of the file,
    not of its expansion; an explicit stack, so deep nesting cannot exhaust Python's.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the nodes on the path from the root to the one being counted
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > limit:
                raise _TooLarge
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _SelfReference
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
