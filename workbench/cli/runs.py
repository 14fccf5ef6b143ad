"""``workbench runs`` and ``workbench show``: the stored runs, and one of them in full."""

from __future__ import annotations

import argparse
import time

from workbench.cli._common import (
    echo,
    message_line,
    open_store,
    run_argument,
    step_table,
    store_option,
    text_table,
)

__all__ = ["run_runs", "run_show", "setup_runs", "setup_show"]


def _count(text: str) -> int:
    """A whole number >= 0; argparse turns the error into a usage message."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def setup_runs(parser: argparse.ArgumentParser) -> None:
    """``workbench runs [--store PATH] [--limit N] [--roots]``."""
    store_option(parser)
    parser.add_argument("--limit", type=_count, default=20, help="show the newest N runs (0: all)")
    parser.add_argument(
        "--roots", action="store_true", help="leave out sub-runs (the runs of sub-agents)"
    )


def run_runs(args: argparse.Namespace) -> int:
    """Print the stored runs, newest last; a sub-run is indented under the run that started it."""
    store = open_store(args)
    runs = store.runs(roots_only=args.roots)
    if not runs:
        echo(f"no runs in {store.path}")
        return 0
    shown = runs[-args.limit :] if args.limit > 0 else runs
    header = (
        "run",
        "agent",
        "status",
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
            f"{'  ' * r.depth}└ {r.agent_name}" if r.depth else r.agent_name,
            r.status,
            r.stop_reason or "-",
            str(r.steps),
            f"{r.input_tokens}/{r.output_tokens}",
            r.model_name or "-",
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created_at)),
            f"{r.rerun_of}@{r.rerun_of_step}" if r.rerun_of else "-",
            str(r.depth),
            r.parent_run_id or "-",
        )
        for r in shown
    ]
    echo(text_table(rows))
    kind = "top-level runs" if args.roots else "runs"
    echo(f"\n{len(shown)} of {len(runs)} {kind} in {store.path}")
    return 0


def setup_show(parser: argparse.ArgumentParser) -> None:
    """``workbench show RUN [--messages] [--store PATH]``."""
    run_argument(parser)
    parser.add_argument("--messages", action="store_true", help="print the conversation too")
    store_option(parser)


def run_show(args: argparse.Namespace) -> int:
    """Print one stored run: summary, step table, output (and the conversation)."""
    store = open_store(args)
    run = store.load(store.resolve(args.run))
    state = run.state
    echo(
        f"run {run.run_id} ({state.agent_name}): {state.status.value}, stop reason "
        f"{state.stop_reason.value if state.stop_reason else '-'}"
    )
    if state.rerun_of is not None:
        echo(f"re-run of {state.rerun_of.run_id} from step {state.rerun_of.step}")
    model = run.snapshots[-1].model_name if run.snapshots else "-"
    echo(
        f"model {model}; steps {state.step}; tokens {run.usage.input_tokens} in, "
        f"{run.usage.output_tokens} out; messages {len(state.messages)}"
    )
    if state.error is not None:
        echo(f"error: {state.error.type}: {state.error.message}")
    echo()
    echo(step_table(run.steps) if run.steps else "(no finished steps)")
    if args.messages:
        echo()
        for i, message in enumerate(state.messages):
            echo(message_line(i, message))
    echo(f"\noutput: {run.output}")
    return 0
