"""``workbench report RUN [-o FILE.html]``: a stored run as one standalone HTML file.

The report itself is library code (`workbench.report`); this verb only loads the run and says
where the file went: ``report-RUN.html`` in the current directory unless ``-o`` says otherwise.
A run the store lists as interrupted (its process ended while it ran) is reported as such, its
open spans cut off (`workbench.trace_of`'s ``interrupted``).
"""

from __future__ import annotations

import argparse

from workbench.cli._common import echo, open_store, run_argument, store_option, wrote_report
from workbench.records import errors_summary
from workbench.report import write_report
from workbench.runfilter import INTERRUPTED
from workbench.runlist import writer_note
from workbench.traces import trace_of

__all__ = ["run_report", "setup_report"]


def setup_report(parser: argparse.ArgumentParser) -> None:
    """``workbench report RUN [-o FILE.html] [--store PATH]``."""
    run_argument(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="where to write it (default: report-RUN.html in the current directory)",
    )
    store_option(parser)


def run_report(args: argparse.Namespace) -> int:
    """Write the standalone HTML report of a stored run."""
    store = open_store(args)
    run_id = store.resolve(args.run)
    run, listed = store.load(run_id), store.summary(run_id)
    gone = writer_note(store, listed) if listed.status == INTERRUPTED else ""
    trace = trace_of(run, interrupted=gone)
    path = write_report(trace, args.output or f"report-{run_id}.html").resolve()
    echo(f"run {run_id} ({run.state.agent_name}): {errors_summary(listed.status, run.errors)}")
    echo(wrote_report(path))
    echo(f"open it: {path.as_uri()}")
    return 0
