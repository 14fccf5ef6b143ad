"""``workbench proxy``: record (or replay) any agent by standing in for its model.

It runs in the foreground until Ctrl-C or SIGTERM, then gives the calls in flight a few seconds
(``--grace``) to end, writes each conversation's last step and prints the runs it recorded.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from workbench import proxy
from workbench.cli._common import echo, http_url, open_store, seconds, store_option
from workbench.errors import UsageError

__all__ = ["run_proxy", "setup_proxy"]


def setup_proxy(parser: argparse.ArgumentParser) -> None:
    """The options: where to forward or what to replay, where to listen, the grace, the store."""
    parser.add_argument(
        "--upstream",
        metavar="URL",
        type=http_url,
        help="the model server to forward to (.../v1): Chat Completions, Responses, Messages",
    )
    parser.add_argument(
        "--port", type=int, default=8089, help="the port to listen on (default 8089; 0: any)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument(
        "--replay",
        metavar="RUN",
        action="append",
        help="answer from this recorded run instead (strict); a session id replays its runs; "
        "given several times, the runs are replayed as one group",
    )
    parser.add_argument(
        "--until-step",
        metavar="N",
        type=int,
        default=None,
        help="with --replay: answer each conversation from its recording up to step N, then "
        "live from --upstream",
    )
    parser.add_argument(
        "--normalize",
        metavar="TOOL=PATTERN",
        action="append",
        default=[],
        help="with --replay: compare TOOL's results with PATTERN's matches left out (a tool "
        "whose output changes every run, such as Codex's exec_command); may be repeated",
    )
    parser.add_argument(
        "--grace",
        metavar="SECONDS",
        type=seconds,
        default=5.0,
        help="on stopping, how long calls in flight may take to end before they are cut off",
    )
    store_option(parser)


def run_proxy(args: argparse.Namespace) -> int:
    """Serve until interrupted; print the runs recorded."""
    if args.upstream is None and args.replay is None:
        raise UsageError("proxy needs --upstream URL, or --replay RUN")
    if args.until_step is not None and (args.upstream is None or args.replay is None):
        raise UsageError("--until-step N forks a replay: it needs --replay RUN and --upstream URL")
    store = open_store(args, new=True)  # the runs it records may be the store's first
    normalize = dict(_normalizer(given) for given in args.normalize)
    handle = proxy(
        args.upstream,
        port=args.port,
        host=args.host,
        store=store,
        replay=args.replay,
        until_step=args.until_step,
        normalize=normalize,
        grace=args.grace,
    )
    replayer, upstream = handle.app.replayer, handle.app.upstream  # resolved; no credentials
    what = f"forwarding to {upstream}"
    if replayer is not None:
        what = f"replaying {', '.join(run.run_id for run in replayer.runs)}"
    try:  # a stop may come as soon as the address is out: the handling is in place before it
        with _terminate_as_interrupt():
            echo(
                f"workbench proxy on {handle.url} ({what}); recording into {store.path} "
                f"(session {handle.session_id})"
            )
            echo("point your agent's base_url at it; Ctrl-C to stop")
            sys.stdout.flush()  # whoever started us waits for the address
            handle.wait()
    except KeyboardInterrupt:
        echo(f"stopping: calls in flight get {args.grace:g} s to end (Ctrl-C again: now)")
        sys.stdout.flush()
    finally:
        handle.close()
    for run_id in handle.run_ids:
        echo(f"recorded {run_id}")
    return 0


def _normalizer(given: str) -> tuple[str, str]:
    """``TOOL=PATTERN`` as (tool, pattern); a pattern that does not compile is a `UsageError`."""
    tool, sep, pattern = given.partition("=")
    if not sep or not tool:
        raise UsageError(f"--normalize takes TOOL=PATTERN, not {given!r}")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"--normalize {tool}: {pattern!r} is not a regular expression: {exc}"
        ) from None
    return tool, pattern


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the proxy as Ctrl-C does, so the last steps are written and runs ended.

    It is how ``kill``, service managers and containers stop a process; its default ends the
    interpreter at once, before `ProxyHandle.close` has written anything. Only the main thread
    may set a handler; the one before is put back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
