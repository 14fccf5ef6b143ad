"""A raised exception's traceback as a run keeps it: the user's frames first, redacted, bounded.

When a tool, a hook, a guard or a breakpoint predicate raises, the person debugging wants the
file, function and line of *their* code. Python's traceback of such an exception starts with the
frames of the machinery that called the code (the tool pipeline, asyncio, the worker thread);
those come first and say nothing new, so the leading run of them is left out, with a line saying
how many. Frames inside the user's code stay, even when they are the workbench's (a tool that
calls a workbench function that raises).

In a notebook the user's code lives in cells, which the kernel compiles from files with made-up
names (``/tmp/ipykernel_2786/2788880837.py``); a frame in one is named as IPython names it in its
own tracebacks (``Cell In[4]``), so the person finds the cell.

The text is kept in the run's records, the store, the spans and every view, so it is made once,
here: redacted (an exception message or a source line may quote a key), made valid UTF-8, and
bounded, with a note of what was cut. Redaction comes before the cut, so no half secret survives
at the edge of a cut.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import linecache
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from workbench.redact import redacted, unicode_text

__all__ = ["MAX_FRAMES", "MAX_TRACEBACK_CHARS", "Lines", "library_runs", "traceback_text"]

MAX_TRACEBACK_CHARS = 12_000
"""The most characters of a traceback a run keeps; the middle of a longer one is cut."""

MAX_FRAMES = 40
"""The most frames kept of each exception in a chain: the first 10 and the last 30."""

_MACHINERY = (
    str(Path(asyncio.__file__).parent) + os.sep,
    str(Path(concurrent.futures.__file__).parent) + os.sep,
    threading.__file__,
    str(Path(__file__).parent) + os.sep,
)
"""Where the frames that call user code live: asyncio, the thread pool, the workbench."""


def traceback_text(exc: BaseException, redact: Callable[[str], str] = redacted) -> str:
    """``exc``'s traceback, chained exceptions included, as a run keeps it.

    >>> def apply_discount(price, rate):
    ...     return price - rate
    >>> try:
    ...     apply_discount("9.99", 0.1)
    ... except TypeError as exc:
    ...     text = traceback_text(exc)
    >>> "in apply_discount" in text, text.splitlines()[-1]
    (True, "TypeError: unsupported operand type(s) for -: 'str' and 'float'")
    """
    text = "".join(_lines(traceback.TracebackException.from_exception(exc)))
    return _bounded(unicode_text(redact(text)))


def _lines(top: traceback.TracebackException) -> Iterator[str]:
    """Python's layout (causes first, most recent call last), leading machinery frames left out."""
    chain: list[tuple[traceback.TracebackException, str | None]] = []
    current: traceback.TracebackException | None = top
    link: str | None = None
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, _CAUSE
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, _CONTEXT
        else:
            current = None
    for exc, link in reversed(chain):
        yield from _one(exc)
        if link is not None:
            yield link


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _one(exc: traceback.TracebackException) -> Iterator[str]:
    frames = list(exc.stack)
    if frames:
        skipped = _leading_machinery(frames)
        calling = "frame that calls" if skipped == 1 else "frames that call"
        note = f"; {skipped} {calling} your code left out" if skipped else ""
        yield f"Traceback (most recent call last{note}):\n"
        kept = _in_cells(frames[skipped:])
        if len(kept) > MAX_FRAMES:
            head, tail = kept[:10], kept[-(MAX_FRAMES - 10) :]
            yield from traceback.StackSummary.from_list(head).format()
            yield f"  ... {len(kept) - MAX_FRAMES} frames left out ...\n"
            kept = tail
        yield from traceback.StackSummary.from_list(kept).format()
    yield from exc.format_exception_only()


def _in_cells(frames: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """The frames, those in a notebook cell named as IPython names it (``Cell In[4]``).

    Nothing changes outside IPython (it is looked up, never imported: most runs have none).
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return frames
    renamed = []
    for frame in frames:
        cell = shell.compile.format_code_name(frame.filename)
        if cell is None:
            renamed.append(frame)
            continue
        renamed.append(
            traceback.FrameSummary(
                " ".join(cell),
                frame.lineno,
                frame.name,
                lookup_line=False,
                line=linecache.getline(frame.filename, frame.lineno or 0),
                end_lineno=frame.end_lineno,
                colno=frame.colno,
                end_colno=frame.end_colno,
            )
        )
    return renamed


def _leading_machinery(frames: list[traceback.FrameSummary]) -> int:
    """How many of the outer frames only call the user's code (0 when no user frame follows)."""
    for index, frame in enumerate(frames):
        if not frame.filename.startswith(_MACHINERY):
            return index
    return 0


def _bounded(text: str) -> str:
    """The text, or its start and end with a note of how much of the middle was cut.

    The end holds the exception and the frame where it was raised, so it keeps the larger part.
    """
    if len(text) <= MAX_TRACEBACK_CHARS:
        return text
    head = MAX_TRACEBACK_CHARS // 4
    tail = MAX_TRACEBACK_CHARS - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... {cut:,} characters of the traceback left out ...\n{text[-tail:]}"


_FILE = re.compile(r'\s+File "([^"]+)", line')
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)")
_STANDARD = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\]([^/\\]+)")
"""A frame's file in an installed package, or in Python's own library: its top-level name."""

FOLD_AT = 3
"""The fewest library frames in a row that `library_runs` folds: one or two read faster as is."""


class Lines(NamedTuple):
    """Consecutive lines of a traceback; ``packages`` names the libraries of a folded run."""

    lines: list[str]
    frames: int = 0
    packages: tuple[str, ...] = ()


def library_runs(text: str) -> list[Lines]:
    """A traceback's lines, with each run of `FOLD_AT` or more frames of library code apart.

    A traceback recorded by another framework (pydantic-ai's, a LangChain tool's) holds every
    frame of that framework between the agent's entry and the user's function: sixty lines of
    ``site-packages`` above the one frame of the person's code, which a view showing the top
    of the traceback hides. The views fold these runs (``packages`` names what is in them) and
    keep every other line, the user's frames and the exception, in view. Nothing is dropped.
    """
    pieces: list[Lines] = []
    plain: list[str] = []
    run: list[list[str]] = []  # library frames in a row: each its file line and the lines below

    def flush_run() -> None:
        if len(run) >= FOLD_AT:
            if plain:
                pieces.append(Lines(plain[:]))
                plain.clear()
            names = [_library(frame[0]) or "" for frame in run]
            pieces.append(Lines([line for f in run for line in f], len(run), _unique(names)))
        else:
            plain.extend(line for frame in run for line in frame)
        run.clear()

    for line in text.rstrip("\n").split("\n"):
        if _FILE.match(line):
            if _library(line) is None:
                flush_run()
                plain.append(line)
            else:
                run.append([line])
        elif run and line.startswith("    "):  # the source line and carets of a library frame
            run[-1].append(line)
        else:
            flush_run()
            plain.append(line)
    flush_run()
    if plain:
        pieces.append(Lines(plain))
    return pieces


def _library(file_line: str) -> str | None:
    """The library a frame's file line is in, or None for the user's code (or a cell)."""
    match = _FILE.match(file_line)
    if match is None:
        return None
    found = _INSTALLED.search(match.group(1)) or _STANDARD.search(match.group(1))
    return found.group(1).removesuffix(".py") if found else None


def _unique(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))
