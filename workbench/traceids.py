"""Trace and span ids in the W3C format, made before any span is: a run's trace id from its start.

The loop can give a run its trace id when the run is created, with or without telemetry; the
span writer then opens the run span under that id, and a stored run pushed later lands in the
backend under the id the notebook showed. These ids are random (``secrets``), never zero.
"""

from __future__ import annotations

import hashlib
import re
import secrets

__all__ = [
    "new_span_id",
    "new_trace_id",
    "random_id",
    "tool_span_id",
    "valid_span_id",
    "valid_trace_id",
]

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def new_trace_id() -> str:
    """A random trace id: 32 lowercase hex digits, not all zero."""
    return format(random_id(128), "032x")


def new_span_id() -> str:
    """A random span id: 16 lowercase hex digits, not all zero."""
    return format(random_id(64), "016x")


def random_id(bits: int) -> int:
    """A random id of ``bits`` bits, not zero, from `secrets`.

    Not from the `random` module: a notebook that seeds it for a repeatable experiment gets the
    same numbers whatever the workbench does meanwhile, even a view drawing a run on its own
    thread.
    """
    while True:
        if value := secrets.randbits(bits):
            return value


def tool_span_id(trace_id: str, run_id: str, call_id: str) -> str:
    """The span id of a tool call's ``execute_tool`` span, worked out from what both sides know.

    A sub-agent's run starts while its parent's tool call is still under way, long before the
    parent's step record (and so its ``execute_tool`` span) is written. Both sides compute this id
    from the trace, the calling run and the call, so the sub-run's ``invoke_agent`` span can name
    its parent span in advance, live and when a stored run is pushed later.
    """
    digest = hashlib.sha256(f"{trace_id}:{run_id}:{call_id}".encode()).hexdigest()[:16]
    return digest if int(digest, 16) else "0000000000000001"


def valid_trace_id(text: str) -> bool:
    """True for 32 lowercase hex digits, not all zero (W3C Trace Context).

    >>> valid_trace_id("0af7651916cd43dd8448eb211c80319c"), valid_trace_id("00" * 16)
    (True, False)
    """
    return _TRACE_ID.fullmatch(text) is not None and int(text, 16) != 0


def valid_span_id(text: str) -> bool:
    """True for 16 lowercase hex digits, not all zero."""
    return _SPAN_ID.fullmatch(text) is not None and int(text, 16) != 0
