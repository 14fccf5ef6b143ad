"""What an id may be: the run, execution, session and snapshot ids, and trace and span ids.

Ids do not stay inside the workbench: `workbench export RUN` names its file after the run,
the store keys its rows by them, a backend's URL holds a trace id, the views put them in HTML.
Ours are made safe (``run_<16 hex digits>``, W3C trace ids), but an id read from a state file, a
session file, a store or a trace was written by someone else, and ``../x`` as a run id once made
`export` write outside the working directory. So a record field that holds an id has one of the
types below, and the record's validation (what every file, store row and constructor call goes
through) refuses anything else with a message saying which id and why. Copies of a record
(``model_copy``) carry ids already checked.

Tool call ids are not among them: a model makes those up in its own shapes (``call_…``,
``toolu_…``, ``functions.add:0``), and they never become a path or a URL.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from workbench.traceids import valid_span_id, valid_trace_id

__all__ = ["Id", "SpanId", "TraceId", "checked_id"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def checked_id(value: str, what: str = "id") -> str:
    """``value`` if it is a usable id, else `ValueError` saying why.

    A usable id is 1 to 128 letters, digits, ``_``, ``-`` and ``.``, starting with a letter or
    digit: a file name on every system (no separator, no ``..`` of its own, no leading ``-``
    an option parser would read), a URL path segment and an HTML attribute as it stands.

    >>> checked_id("run_0af7651916cd43dd")
    'run_0af7651916cd43dd'
    """
    if not _ID.fullmatch(value):
        shown = value if len(value) <= 80 else value[:80] + "…"
        raise ValueError(
            f"{shown!r} is not a valid {what}: ids are 1-128 letters, digits, '_', '-' and '.', "
            "starting with a letter or digit"
        )
    return value


def _trace_id(value: str) -> str:
    if not valid_trace_id(value):
        raise ValueError(f"{value[:80]!r} is not a trace id (32 lowercase hex digits, not 0)")
    return value


def _span_id(value: str) -> str:
    if not valid_span_id(value):
        raise ValueError(f"{value[:80]!r} is not a span id (16 lowercase hex digits, not 0)")
    return value


Id = Annotated[str, AfterValidator(checked_id)]
"""A run, execution, session or snapshot id (`checked_id`)."""
TraceId = Annotated[str, AfterValidator(_trace_id)]
"""A W3C trace id: 32 lowercase hex digits, not all zero."""
SpanId = Annotated[str, AfterValidator(_span_id)]
"""A W3C span id: 16 lowercase hex digits, not all zero."""
