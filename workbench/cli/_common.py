r"""What every verb shares: the store option, printing safely to a terminal, plain-text tables.

Everything a verb prints goes through `echo`. A run's content is untrusted text (model output,
tool results, names a server chose), and a terminal obeys escape sequences: printed raw, an answer
could set the window title, clear the screen, hide lines with a carriage return or plant an OSC 8
link. `echo` writes every control character out as a visible escape (ESC as the four characters
``\x1b``), so what is printed is what was recorded, as text, and nothing in it can drive the
terminal.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from workbench import urls
from workbench.agent import RunResult
from workbench.errors import InvalidURL
from workbench.messages import Message
from workbench.models.replay import describe_part
from workbench.records import (
    CALL_WORDS,
    RunError,
    StepRecord,
    call_label,
    step_labels,
)
from workbench.redact import redacted
from workbench.runlist import existing_store
from workbench.store import RunStore, StoreError

__all__ = [
    "STEP_HEADER",
    "call_legend",
    "echo",
    "errors_text",
    "http_url",
    "load_run",
    "message_line",
    "message_text",
    "open_store",
    "problems_as_lines",
    "run_argument",
    "say_problem",
    "seconds",
    "step_table",
    "store_option",
    "terminal_text",
    "text_table",
    "tried",
]

# C0 and C1 control characters (ESC, CSI, OSC, BEL, CR, backspace, DEL) and the bidirectional
# overrides that make a terminal show text in another order than it was written.
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE_IN_TEXT = re.compile(f"[{_CONTROL}]")
_UNSAFE_IN_CELL = re.compile(f"[\t\n{_CONTROL}]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def terminal_text(text: str, *, one_line: bool = False) -> str:
    r"""``text`` with its control characters written as escapes (ESC as ``\x1b``).

    Newlines and tabs are escaped too when ``one_line`` (a table cell, a message line), else kept.
    """
    return (_UNSAFE_IN_CELL if one_line else _UNSAFE_IN_TEXT).sub(_escape, text)


def echo(text: str = "") -> None:
    """Print ``text`` with nothing in it that a terminal would obey (see the module docstring)."""
    print(terminal_text(text))


def say_problem(text: str) -> None:
    """One line on stderr: an error (``workbench: ...``) or a warning (``warning: ...``).

    One line whatever the text holds (a server's HTML answer, an exception's several lines): the
    person reads the sentence; the output of the verb, on stdout, stays apart from it. Secrets
    are redacted: a problem may quote what was given (a URL with its password given as a path).
    """
    print(terminal_text(redacted(" ".join(text.split())), one_line=True), file=sys.stderr)


class _ProblemLines(logging.Handler):
    """Log records of a warning or worse as one line each.

    Such as the library's count of spans it could not export, or a damaged row listed without
    its metadata. One logged with its exception (the proxy's server on a request that crashed)
    names it on the line, not in a traceback.
    """

    def emit(self, record: logging.LogRecord) -> None:
        raised = record.exc_info[1] if record.exc_info else None
        why = f": {type(raised).__name__}: {raised}" if raised is not None else ""
        say_problem(f"{record.levelname.lower()}: {record.getMessage().rstrip()}{why}")


def _warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    say_problem(f"warning: {message}")


@contextmanager
def problems_as_lines() -> Iterator[None]:
    """While a verb runs: warnings and logged problems as one ``warning: ...`` line each.

    Python's own formats are for the code's author: a warning names the file and line of ours
    that raised it and quotes that source line (``traces.py:90: TelemetryExportWarning: ...`` and
    ``stats = telemetry.shutdown(...)``); a log record without a handler is a bare line. Both are
    put back as they were when the verb returns (``main`` is also called in-process).
    """
    handler = _ProblemLines(logging.WARNING)
    root = logging.getLogger()
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line
        root.addHandler(handler)
        try:
            yield
        finally:
            root.removeHandler(handler)


def http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (an argparse type: `workbench.urls.http_url`).

    Without it, ``notaurl`` went on to the exporter as a path (``notaurl/v1/traces/v1/traces``)
    and to the proxy's client as a relative URL, which raised from inside.
    """
    try:
        return urls.http_url(text)
    except InvalidURL as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str) -> float:
    """A number of seconds, zero or more (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, zero or more")
    return value


def store_option(parser: argparse.ArgumentParser) -> None:
    """The ``--store PATH`` option every verb that reads stored runs takes."""
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help="the run store (default: $WORKBENCH_STORE or .workbench/runs.sqlite)",
    )


def run_argument(parser: argparse.ArgumentParser) -> None:
    """The ``RUN`` argument of the verbs that work on one stored run."""
    parser.add_argument(
        "run",
        metavar="RUN",
        help="a run id, a unique prefix of one, or 'last' (the last run started, not a sub-run)",
    )


def open_store(args: argparse.Namespace, *, new: bool = False) -> RunStore:
    """The store ``--store`` names, else the default one; a `StoreError` if there is none.

    A ``--store PATH`` where no file is is an error unless the verb records (``new``, the proxy):
    a mistyped path listed "No runs in PATH" as if the runs there were gone (`existing_store`).
    """
    if args.store:
        return RunStore(args.store) if new else existing_store(args.store)
    store = RunStore.default()
    if store is None:
        raise StoreError("no default store (WORKBENCH_STORE=off): pass --store PATH")
    return store


def load_run(args: argparse.Namespace) -> RunResult:
    """The stored run ``args.run`` names (an id, a unique prefix of one, or ``last``)."""
    store = open_store(args)
    return store.load(store.resolve(args.run))


def wrote_report(path: Path) -> str:
    """Where a report went and how big it is: kB under a megabyte (a run's is often 0.0 MB)."""
    size = path.stat().st_size
    shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{max(1, round(size / 1e3))} kB"
    return f"wrote {path} ({shown}, opens offline)"


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as aligned columns under a rule; each cell kept on one line, escaped."""
    cells = [[terminal_text(c, one_line=True) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


STEP_HEADER = (
    "step",
    "prepare ms",
    "model ms",
    "tools ms",
    "hooks ms",
    "tool calls",
    "tokens in/out",
    "run after it",
    "stop",
)
"""The columns of a printed step table: a stored run's (`step_table`) and a loaded trace's."""


def message_text(index: int, message: Message) -> str:
    """One message whole: its index, role and step, then each part on its own lines, escaped."""
    step = "" if message.step is None else f" step {message.step}"
    parts = (terminal_text(describe_part(p, limit=None)) for p in message.parts)
    body = "\n".join(_indented(part, "      ") for part in parts)
    return f"{index:>4} {message.role}{step}:\n{body}"


def errors_text(errors: Sequence[RunError]) -> str:
    """What went wrong, numbered: where and what, then the traceback when something raised."""
    lines = ["what went wrong:"]
    for number, error in enumerate(errors, start=1):
        lines.append(f"{number:>3}. [{error.kind}] {error.line}")
        if error.traceback:
            lines.append(_indented(error.traceback.rstrip("\n"), "       "))
    return terminal_text("\n".join(lines))


def _indented(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def message_line(index: int, message: Message) -> str:
    """One message on one line: its index, role, step (when known) and parts, escaped."""
    parts = "; ".join(describe_part(p) for p in message.parts)
    step = "" if message.step is None else f" step {message.step}"
    return f"{index:>4} {message.role:<9}{step}: {terminal_text(parts, one_line=True)}"


def step_table(steps: Sequence[StepRecord]) -> str:
    """A plain-text table of steps: timings (ms), tool calls, tokens, status, stop reason.

    A step that paused and resumed has a row per part (``3``, then ``3 (resumed)``). Under the
    table, what each word beside a call means, for the words it uses (`CALL_WORDS`).
    """
    rows: list[Sequence[str]] = [STEP_HEADER]
    for s, label in zip(steps, step_labels(steps), strict=True):
        calls = ", ".join(
            call_label(o.name, o.status, replayed=o.replayed) for o in s.tool_outcomes
        )
        t = s.timing
        rows.append(
            (
                label,
                f"{t.prepare * 1e3:.2f}",
                tried(f"{t.inference * 1e3:.2f}", s.tries),
                f"{t.tools * 1e3:.2f}",
                f"{t.hooks * 1e3:.2f}" if t.per_hook else "-",  # no hook ran
                calls or "-",
                f"{s.usage.input_tokens}/{s.usage.output_tokens}",
                s.status.value,
                s.stop_reason.value if s.stop_reason else "-",
            )
        )
    return "\n".join([text_table(rows), *call_legend(row[5] for row in rows[1:])])


def tried(model_ms: str, tries: int) -> str:
    """The model cell of a step: its time, and how many tries when the client asked again.

    >>> tried("1318.47", 3), tried("7.49", 1)
    ('1318.47 (3 tries)', '7.49')
    """
    return f"{model_ms} ({tries} tries)" if tries > 1 else model_ms


def call_legend(cells: Iterable[str]) -> list[str]:
    """What each word beside a call in these cells means (`call_label`), one line each."""
    text = " ".join(cells)
    used = [w for w in CALL_WORDS if re.search(rf"[(,] ?{w}\b", text)]
    return [f"  {word}: {CALL_WORDS[word]}" for word in used]
