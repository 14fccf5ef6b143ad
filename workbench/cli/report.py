"""``workbench report RUN [-o FILE.html]``: a stored run as one standalone HTML file.

The report itself is library code (`workbench.report`); this verb only loads the run and says
where the file went: ``report-RUN.html`` in the current directory unless ``-o`` says otherwise.
"""

from __future__ import annotations

import argparse

from workbench.cli._common import echo, load_run, run_argument, store_option, wrote_report
from workbench.report import write_report

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
    run = load_run(args)
    path = write_report(run, args.output or f"report-{run.run_id}.html").resolve()
    echo(f"run {run.run_id} ({run.state.agent_name}): {run.summary}")
    echo(wrote_report(path))
    echo(f"open it: {path.as_uri()}")
    return 0
