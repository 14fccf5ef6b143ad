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
  (`loads`), before anything recursive walks it. The document's depth is read off its text
  (`text_depth`), not by walking what the parser built: a trace of 100,000 spans is millions of
  nodes, and a walk in Python cost as much as a third of loading it.

`MAX_DEPTH` leaves room for the records around a value (a cassette puts tool arguments eight
levels down, each paused sub-run two more), and stays under every limit above, so whatever was
accepted can always be stored, serialized and read back.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "VALUE_DEPTH", "bounded", "loads", "text_depth", "too_deep"]

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


_NOT_ESCAPES = bytes(set(range(256)) - set(b'"[]{}\\/bfnrtu'))
_NOT_SYNTAX = bytes(set(range(256)) - set(b'"[]{}'))
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 and -1 as signed bytes
_STRING = re.compile(rb'"[^"]*"')


def text_depth(text: str | bytes) -> int:
    r"""How deep the JSON document ``text`` nests, read off its text (``text`` must be JSON).

    The brackets outside strings are what nests. First everything goes but brackets, quotes,
    backslashes and the characters an escape can have after its backslash (``"\/bfnrtu``):
    each escape stays whole, and what is left is a fraction of a text that is mostly words.
    Then escapes are dropped (``\\``, then ``\"``), so every quote left opens or closes a
    string; then everything but quotes and brackets; then two quotes in a row (an empty
    string, or a string with no bracket: dropping them leaves every other character inside or
    outside a string as it was); the few strings left, those with brackets in them, go with a
    regular expression. What remains is brackets, and the depth is the highest running count.
    All of it runs over bytes in C, a small part of what parsing costs.

    >>> text_depth('{"a": [1, "]]"]}'), text_depth('"[[["'), text_depth('[[], {"b": [{}]}]')
    (2, 0, 4)
    >>> text_depth(r'["\\n\"[", ["\\"]]')
    2
    """
    if isinstance(text, bytes):  # as json.loads reads bytes (UTF-8, -16 or -32)
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    data = text.encode("utf-8", "surrogatepass").translate(None, _NOT_ESCAPES)
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    syntax = data.translate(None, _NOT_SYNTAX).replace(b'""', b"")
    if b'"' in syntax:
        syntax = _STRING.sub(b"", syntax)
    return max(accumulate(array("b", syntax.translate(_STEPS))), default=0)


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """Parse a JSON document; `ValueError` if it is not JSON or nests deeper than ``limit``.

    Every reader of a JSON document from outside calls this and turns the `ValueError` into its
    own typed error (`StateFormatError`, `CassetteError`, `TraceLoadError`, ...).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {limit} levels") from None
    if text_depth(text) > limit:
        raise ValueError(f"nested deeper than {limit} levels")
    return value


def bounded(value: Any) -> Any:
    """``value`` if it nests at most `VALUE_DEPTH` levels, else `ValueError` (a record's check)."""
    if too_deep(value, VALUE_DEPTH):
        raise ValueError(f"a JSON value may nest at most {VALUE_DEPTH} levels")
    return value
