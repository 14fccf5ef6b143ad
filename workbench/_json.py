"""How deep JSON may nest: one rule for every JSON the workbench reads, and every value it keeps.

Nesting is where JSON from outside breaks things that have no other limit: Python's parser and
every recursive reader raise `RecursionError` past a thousand levels or so, pydantic's JSON
parser refuses more than 200 and its serializer more than about 250, and SQLite's JSON
functions more than 1,000. A value the workbench accepted once (run metadata 300 levels deep)
could then not be stored, nor written back by ``to_json``.

So the rule has two numbers, one inside the other:

- a JSON *value* the workbench keeps (tool arguments, metadata, settings, answers, attributes:
  `workbench.messages.JsonValue`) nests at most `VALUE_DEPTH` levels; records check it when
  they are validated, so it holds for a value made in Python as for one read from a file;
- a JSON *document* it reads (a state, a session, a cassette, a store row, a hook's answer, an
  edited message list, a trace) nests at most `MAX_DEPTH` levels, checked as it is read
  (`loads`), before anything recursive walks it.

`MAX_DEPTH` leaves room for the records around a value (a cassette puts tool arguments eight
levels down, each paused sub-run two more), and stays under every limit above, so whatever was
accepted can always be stored, serialized and read back.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "VALUE_DEPTH", "bounded", "loads", "too_deep"]

VALUE_DEPTH = 64
"""How deep a JSON value kept in a record may nest (a scalar is depth 0, ``[1]`` depth 1)."""

MAX_DEPTH = 128
"""How deep a JSON document read from outside may nest."""


def too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON: dicts, lists, tuples, scalars) nests deeper than ``limit``.

    A loop with its own stack, not recursion: the value may be as deep as the parser allowed.

    >>> too_deep({"a": [1]}, 2), too_deep({"a": [[1]]}, 2)
    (False, True)
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list | tuple))
    return False


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """Parse a JSON document; `ValueError` if it is not JSON or nests deeper than ``limit``.

    Every reader of a JSON document from outside calls this and turns the `ValueError` into its
    own typed error (`StateFormatError`, `CassetteError`, `TraceLoadError`, ...).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {limit} levels") from None
    if too_deep(value, limit):
        raise ValueError(f"nested deeper than {limit} levels")
    return value


def bounded(value: Any) -> Any:
    """``value`` if it nests at most `VALUE_DEPTH` levels, else `ValueError` (a record's check)."""
    if too_deep(value, VALUE_DEPTH):
        raise ValueError(f"a JSON value may nest at most {VALUE_DEPTH} levels")
    return value
