"""The ``workbench`` command: one table of verbs, and ``main``, which parses and dispatches.

Each verb lives in its own module of this package as a ``setup`` function (its arguments) and a
``run`` function (what it does, returning the exit status). The help texts are plain sentences,
not docstrings: reST markup in a terminal is noise.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from workbench._record import Record
from workbench.cli._common import problems_as_lines, say_problem
from workbench.cli.demo import run_demo_verb
from workbench.cli.proxy import run_proxy, setup_proxy
from workbench.cli.replay import run_replay, setup_replay
from workbench.cli.report import run_report, setup_report
from workbench.cli.runs import run_runs, run_show, setup_runs, setup_show
from workbench.cli.traces import (
    run_export,
    run_push,
    run_trace,
    setup_export,
    setup_push,
    setup_trace,
)
from workbench.errors import StoreError, TraceLoadError, UsageError

__all__ = ["DESCRIPTION", "VERBS", "Verb", "main", "parser"]

DESCRIPTION = (
    "Agent Workbench: run the demo agent offline, and list, show, replay, report and export the "
    "runs in a run store; read traces back from files and backends; record any agent through a "
    "proxy."
)


class Verb(Record):
    """One verb: its one-line help, how it sets up its arguments, and what it runs."""

    help: str
    setup: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A verb without arguments."""


VERBS: dict[str, Verb] = {
    "demo": Verb(
        help="run the built-in scripted agent offline; write its traces and an HTML report",
        setup=_no_arguments,
        run=run_demo_verb,
    ),
    "runs": Verb(help="list the runs in the run store", setup=setup_runs, run=run_runs),
    "show": Verb(help="show a stored run: steps, timing, output", setup=setup_show, run=run_show),
    "replay": Verb(
        help="re-run a stored run exactly from a step (--from-step N) and compare the two",
        setup=setup_replay,
        run=run_replay,
    ),
    "report": Verb(
        help="write a stored run as one standalone HTML file", setup=setup_report, run=run_report
    ),
    "export": Verb(
        help="write a stored run's trace as Jaeger or OTLP JSON", setup=setup_export, run=run_export
    ),
    "push": Verb(
        help="send a stored run's trace to an OTLP/HTTP endpoint", setup=setup_push, run=run_push
    ),
    "trace": Verb(
        help="show a trace file or a backend's trace (ours or another framework's): what it "
        "holds, its steps, its conversation; -o writes its HTML report",
        setup=setup_trace,
        run=run_trace,
    ),
    "proxy": Verb(
        help="record any agent (Claude Code, Codex, any SDK): one endpoint for Chat Completions, "
        "the Responses API and Anthropic Messages, forwarding to --upstream (or answering from "
        "--replay RUN) and storing each conversation as a run",
        setup=setup_proxy,
        run=run_proxy,
    ),
}


def parser() -> argparse.ArgumentParser:
    """The command's argument parser, with one sub-parser per verb."""
    top = argparse.ArgumentParser(prog="workbench", description=DESCRIPTION)
    top.add_argument(
        "--version", action="version", version=f"workbench {_version()}", help="say which version"
    )
    verbs = top.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, verb in VERBS.items():
        sentence = verb.help[:1].upper() + verb.help[1:] + "."
        verb.setup(verbs.add_parser(name, help=verb.help, description=sentence))
    return top


def _version() -> str:
    """The installed package's version (a source tree that is not installed says so)."""
    try:
        return metadata.version("workbench")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` command: the verb's exit status (2: a one-line error).

    Errors and warnings go to stderr as one line each (`problems_as_lines`), never as a traceback:
    a file that cannot be written is said as the system says it.
    """
    args = parser().parse_args(argv)
    with problems_as_lines():
        try:
            return VERBS[args.verb].run(args)
        except (StoreError, TraceLoadError, UsageError) as exc:
            say_problem(f"workbench: {exc}")
            return 2
        except BrokenPipeError:  # the reader left (``workbench runs | head``): stop, quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit would fail again
            return 1
        except OSError as exc:  # -o into a directory that cannot be made, a disk full
            where = f": {exc.filename}" if exc.filename else ""
            say_problem(f"workbench: {exc.strerror or exc}{where}")
            return 2
