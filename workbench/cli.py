"""The ``workbench`` command.

Each verb is a small function registered in `_VERBS` with its argument setup; ``main`` only parses
and dispatches.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from workbench._runs_cli import run_replay, run_runs, run_show, setup_replay, setup_runs, setup_show
from workbench.agent import RunResult
from workbench.records import StepRecord

__all__ = ["main", "step_table"]


def step_table(steps: Sequence[StepRecord]) -> str:
    """A plain-text table of steps: timings (ms), tool calls, tokens, status, stop reason."""
    header = ("step", "prepare", "infer", "tools", "hooks", "calls", "tokens", "status", "stop")
    rows = [header]
    for s in steps:
        calls = ", ".join(f"{o.name}:{o.status}" for o in s.tool_outcomes) or "-"
        t = s.timing
        rows.append(
            (
                str(s.index),
                f"{t.prepare * 1e3:.2f}",
                f"{t.inference * 1e3:.2f}",
                f"{t.tools * 1e3:.2f}",
                f"{t.hooks * 1e3:.2f}",
                calls,
                f"{s.usage.input_tokens}/{s.usage.output_tokens}",
                s.status.value,
                s.stop_reason.value if s.stop_reason else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _demo(args: argparse.Namespace) -> int:
    from workbench.demo import run_demo

    results = run_demo()
    steps = [s for r in results for s in r.steps]
    final: RunResult = results[-1]
    print(step_table(steps))
    print()
    paused = len(results) - 1
    print(f"run {final.run_id}: {final.status.value}, stop reason {final.stop_reason}")
    print(f"approvals granted: {paused}; tokens: {final.usage.total_tokens}")
    print(f"output: {final.output}")
    return 0 if final.status.value == "completed" else 1


_VERBS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {
    "demo": ("run the built-in scripted agent offline", lambda p: None, _demo),
    "runs": ("list the runs in the run store", setup_runs, run_runs),
    "show": ("show a stored run: steps, timing, output", setup_show, run_show),
    "replay": ("re-run a stored run exactly from a step (--from-step N)", setup_replay, run_replay),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` command."""
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    for name, (help_text, setup, _) in _VERBS.items():
        setup(verbs.add_parser(name, help=help_text))
    args = parser.parse_args(argv)
    return _VERBS[args.verb][2](args)


if __name__ == "__main__":
    sys.exit(main())
