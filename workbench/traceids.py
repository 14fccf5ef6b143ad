"""Trace and span ids in the W3C format, made before any span is: a run's trace id from its start.

The loop can give a run its trace id when the run is created, with or without telemetry; the
span writer then opens the run span under that id, and a stored run pushed later lands in the
backend under the id the notebook showed. These ids are random (``secrets``), never zero.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["new_span_id", "new_trace_id", "valid_span_id", "valid_trace_id"]

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def new_trace_id() -> str:
    """A random trace id: 32 lowercase hex digits, not all zero."""
    while True:
        value = secrets.randbits(128)
        if value:
            return format(value, "032x")


def new_span_id() -> str:
    """A random span id: 16 lowercase hex digits, not all zero."""
    while True:
        value = secrets.randbits(64)
        if value:
            return format(value, "016x")


def valid_trace_id(text: str) -> bool:
    """True for 32 lowercase hex digits, not all zero (W3C Trace Context).

    >>> valid_trace_id("0af7651916cd43dd8448eb211c80319c"), valid_trace_id("00" * 16)
    (True, False)
    """
    return _TRACE_ID.fullmatch(text) is not None and int(text, 16) != 0


def valid_span_id(text: str) -> bool:
    """True for 16 lowercase hex digits, not all zero."""
    return _SPAN_ID.fullmatch(text) is not None and int(text, 16) != 0
