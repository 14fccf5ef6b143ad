"""`RunFilter`: which runs a run list shows, as a person asks for them.

One filter for every list of runs: `wb.runs`, the `RunsBrowser`, ``workbench runs`` and the
listings of a trace backend (Jaeger, Phoenix). It is user configuration, so it validates what it
is given and says clearly what it cannot read: a status that does not exist, a time it cannot
place, a metadata value that is not JSON.

Times are read the way people write them: a `datetime` (naive means local time), epoch seconds,
an ISO date or date-time (``"2026-11-27"``, ``"2026-11-27T09:30"``), or a span back from now
(``"90s"``, ``"30m"``, ``"2h"``, ``"7d"``, ``"2w"``, a `timedelta`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from pydantic import Field, field_validator

from workbench._record import Record
from workbench.messages import JsonValue
from workbench.state import ExecutionStatus

__all__ = ["INTERRUPTED", "STATUSES", "Choices", "RunFilter", "TimeSpec", "when"]

TimeSpec = datetime | timedelta | float | int | str
"""What ``since=`` and ``until=`` accept (see the module's docstring)."""

_AGO = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
INTERRUPTED = "interrupted"
"""The status a run list shows for a run stored as running (or pending) whose process has ended
(a kernel restarted with a run stepped by hand, a script killed): it will not go on by itself.
Never stored: decided as the list is read (`workbench._processes`), so no reader rewrites a row
that a live process may still be writing."""
STATUSES = (*(s.value for s in ExecutionStatus), INTERRUPTED)
"""Every status a run list shows and filters on."""


def when(spec: TimeSpec, *, now: float | None = None) -> float:
    """Epoch seconds for a time as `RunFilter` reads it (a span is taken back from ``now``).

    >>> when(timedelta(hours=2), now=10_000.0)
    2800.0
    >>> when("30m", now=10_000.0)
    8200.0
    """
    now = time.time() if now is None else now
    if isinstance(spec, bool):
        raise ValueError(f"{spec!r} is not a time")
    if isinstance(spec, int | float):
        return float(spec)
    if isinstance(spec, timedelta):
        return now - spec.total_seconds()
    if isinstance(spec, datetime):
        return spec.timestamp()
    if match := _AGO.fullmatch(spec):
        return now - float(match[1]) * _UNIT[match[2]]
    try:
        return datetime.fromisoformat(spec.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"{spec!r} is not a time: give a datetime, epoch seconds, an ISO date such as "
            "'2026-11-27T09:30', or a span back from now such as '90s', '30m', '2h', '7d', '2w'"
        ) from None


def _names(value: Any) -> tuple[str, ...]:
    """One name or several, as a tuple (None and '' mean no filter)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"{value!r} is neither a name nor a list of names")


class RunFilter(Record):
    """Which runs to list; every field left at its default filters nothing.

    - ``status``: one status or several (``"failed"``, ``["failed", "aborted"]``); a run whose
      process ended while it was running is ``"interrupted"`` (`INTERRUPTED`), not "running".
    - ``agent``: runs of these agents; ``tool``: runs that called any of these tools.
    - ``errors``: True for runs with at least one error, False for runs without.
    - ``since`` / ``until``: when the run started (see the module's docstring for the forms).
    - ``metadata``: runs whose metadata has each of these keys with that exact value.
    - ``text``: runs whose messages contain this text (case-insensitive for ASCII letters).
    - ``rollup``: one row per run tree: a root with its sub-runs' steps, errors, tools and count
      rolled up into it. Then ``status``, ``since`` and ``until`` ask about the root, and the others
      about any run of the tree (a tree that called ``tool`` anywhere matches).

    >>> RunFilter(status="failed", since="2h").status
    ('failed',)
    """

    status: tuple[str, ...] = ()
    agent: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    errors: bool | None = None
    since: float | None = None
    until: float | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    text: str = ""
    rollup: bool = False

    @field_validator("status", "agent", "tool", mode="before")
    @classmethod
    def _as_names(cls, value: Any) -> tuple[str, ...]:
        return _names(value)

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in value if s not in STATUSES]
        if unknown:
            raise ValueError(f"unknown status {unknown[0]!r}: one of {', '.join(STATUSES)}")
        return value

    @field_validator("since", "until", mode="before")
    @classmethod
    def _as_time(cls, value: Any) -> float | None:
        return None if value is None else when(value)

    @field_validator("text", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> str:
        return "" if value is None else value

    @property
    def active(self) -> bool:
        """Whether the filter leaves any run out."""
        return self.model_dump(exclude={"rollup"}) != RunFilter().model_dump(exclude={"rollup"})


class Choices(NamedTuple):
    """What a list's runs can be filtered to: the agents and tools it has seen (bounded)."""

    agents: tuple[str, ...]
    tools: tuple[str, ...]
