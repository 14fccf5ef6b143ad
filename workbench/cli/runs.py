"""``workbench runs`` and ``workbench show``: the stored runs, and one of them in full."""

from __future__ import annotations

import argparse
import json
import time

from pydantic import ValidationError

from workbench.cli._common import (
    echo,
    errors_text,
    message_line,
    message_text,
    open_store,
    run_argument,
    step_table,
    store_option,
    text_table,
)
from workbench.errors import UsageError
from workbench.messages import JsonValue
from workbench.records import errors_summary
from workbench.runfilter import STATUSES, RunFilter
from workbench.runlist import writer_note
from workbench.state import validation_summary
from workbench.store import RunSummary

__all__ = ["run_filter", "run_runs", "run_show", "setup_runs", "setup_show"]


def _count(text: str) -> int:
    """A whole number >= 0; argparse turns the error into a usage message."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def setup_runs(parser: argparse.ArgumentParser) -> None:
    """``workbench runs [--store PATH] [--limit N] [--roots] [filters]``."""
    store_option(parser)
    parser.add_argument("--limit", type=_count, default=20, help="show the newest N runs (0: all)")
    parser.add_argument(
        "--roots",
        action="store_true",
        help="one row per run tree: sub-runs (the runs of sub-agents) rolled up into their root",
    )
    filters = parser.add_argument_group("filters (each narrows the list; repeat to allow several)")
    filters.add_argument(
        "--status",
        action="append",
        metavar="STATUS",
        help=f"one of {', '.join(STATUSES)} (interrupted: its process ended while it ran)",
    )
    filters.add_argument("--agent", action="append", metavar="NAME", help="runs of this agent")
    filters.add_argument("--tool", action="append", metavar="NAME", help="runs that called it")
    filters.add_argument("--errors", action="store_true", help="runs with at least one error")
    filters.add_argument(
        "--since", metavar="WHEN", help="started since: 90s, 30m, 2h, 7d, or a date (2026-11-27)"
    )
    filters.add_argument("--until", metavar="WHEN", help="started before (the same forms)")
    filters.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        type=_metadata,
        help='metadata KEY equal to VALUE (read as JSON when it is: 3, true, "3")',
    )
    filters.add_argument("--grep", metavar="TEXT", help="the text in its messages (any case)")


def _metadata(text: str) -> tuple[str, JsonValue]:
    """``KEY=VALUE``; the value read as JSON when it is JSON, else as the text it is."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def run_filter(args: argparse.Namespace) -> RunFilter:
    """The `RunFilter` the options ask for; a `UsageError` saying what cannot be read."""
    try:
        return RunFilter(
            status=args.status,
            agent=args.agent,
            tool=args.tool,
            errors=True if args.errors else None,
            since=args.since,
            until=args.until,
            metadata=dict(args.meta or ()),
            text=args.grep,
            rollup=args.roots,
        )
    except ValidationError as exc:
        raise UsageError(validation_summary(exc, limit=2)) from None


def run_runs(args: argparse.Namespace) -> int:
    """Print the stored runs the filters keep, newest last; a sub-run indented under its run."""
    spec = run_filter(args)  # what was asked is checked before where
    store = open_store(args)
    total = store.count(spec)
    if not total:
        echo(f"no {'matching ' if spec.active else ''}runs in {store.path}")
        return 0
    limit = args.limit if args.limit > 0 else None
    shown = store.find(spec, descending=True, limit=limit)[::-1]
    header = (
        "run",
        "agent",
        "status",
        "errors",
        "stop",
        "steps",
        "tokens",
        "model",
        "started",
        "re-run of",
        "depth",
        "parent",
    )
    rows = [header] + [
        (
            r.run_id,
            _agent(r),
            r.status,
            _errors(r),
            r.stop_reason or "-",
            str(r.steps),
            f"{r.input_tokens}/{r.output_tokens}",
            r.model_name or "-",
            _time(r.created_at),
            f"{r.rerun_of}@{r.rerun_of_step}" if r.rerun_of else "-",
            str(r.depth),
            r.parent_run_id or "-",
        )
        for r in shown
    ]
    echo(text_table(rows))
    kind = "top-level runs" if args.roots else "runs"
    matching = " matching" if spec.active else ""
    more = f" (the newest; --limit 0 lists all {total})" if len(shown) < total else ""
    echo(f"\n{len(shown)} of {total}{matching} {kind} in {store.path}{more}")
    return 0


def _agent(row: RunSummary) -> str:
    """The agent, indented under its parent when a sub-run; with the sub-runs a root rolled up."""
    if row.depth:
        return f"{'  ' * row.depth}└ {row.agent_name}"
    if row.subruns:
        return f"{row.agent_name} (+{row.subruns} sub-run{'s' if row.subruns > 1 else ''})"
    return row.agent_name


def _errors(row: RunSummary) -> str:
    """How many errors, and the first: ``1: step 3, apply_discount in digger: TypeError: …``."""
    if row.errors is None:
        return "?"  # its records are damaged
    if not row.errors:
        return "-"
    first = row.first_error or ""
    first = first if len(first) <= ERROR_CELL else f"{first[: ERROR_CELL - 1]}…"
    return f"{row.errors}: {first}" if first else str(row.errors)


ERROR_CELL = 70
"""How much of a run's first error the run list shows; `workbench show RUN` shows it whole."""


def _time(created_at: float | None) -> str:
    if created_at is None:  # a damaged time: the run is still listed
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created_at))


def setup_show(parser: argparse.ArgumentParser) -> None:
    """``workbench show RUN [--messages [--full]] [--store PATH]``."""
    run_argument(parser)
    parser.add_argument("--messages", action="store_true", help="print the conversation too")
    parser.add_argument(
        "--full",
        action="store_true",
        help="with --messages, every message whole, on as many lines as it takes",
    )
    store_option(parser)


def run_show(args: argparse.Namespace) -> int:
    """Print one stored run: what went wrong, summary, step table, output (and conversation)."""
    store = open_store(args)
    run_id = store.resolve(args.run)
    run = store.load(run_id)
    listed = store.summary(run_id)  # its status as the run list says it (interrupted)
    state = run.state
    errors = run.errors
    echo(f"run {run.run_id} ({state.agent_name}): {errors_summary(listed.status, errors)}")
    if note := writer_note(store, listed):
        echo(note)
    if state.rerun_of is not None:
        echo(f"re-run of {state.rerun_of.run_id} from step {state.rerun_of.step}")
    model = run.snapshots[-1].model_name if run.snapshots else "-"
    echo(
        f"stop reason {state.stop_reason.value if state.stop_reason else '-'}; model {model}; "
        f"steps {state.step}; tokens {run.usage.input_tokens} in, {run.usage.output_tokens} out; "
        f"messages {len(state.messages)}"
    )
    if errors:
        echo()
        echo(errors_text(errors))
    echo()
    echo(step_table(run.steps) if run.steps else "(no finished steps)")
    if args.messages:
        echo()
        for i, message in enumerate(state.messages):
            echo(message_text(i, message) if args.full else message_line(i, message))
    echo(f"\noutput: {run.output}")
    return 0
