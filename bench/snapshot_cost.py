"""Snapshot + store cost per step, and store size, for runs of 10, 100 and 1,000 steps (issue 5).

The run: a `FunctionModel` answers each step with a short text and one call of a trivial tool
(``add``) whose result is a ~200-character string, then answers ``done`` at the last step. The
agent records to a `RunStore` in a fresh SQLite file (WAL, synchronous=NORMAL, the defaults).

What is measured, per step:

- **snapshot**: building the step's `StepContext` in PREPARE (`Execution._snapshot`, timed by a
  wrapper installed by this script);
- **store**: the time spent in the store's observer callbacks for that step (snapshot write as
  PREPARE ends, record + state write as the step ends, the state kept after each phase), timed by
  a `RunStore` subclass;
- the **cost at the end of a run** is the median per-step cost over its last 50 steps (all steps
  for the 10-step run), the **cost per step** the median over all steps; each figure is the median
  of ``--repeat`` runs, each started after ``gc.collect()``.

Size: the database file after a WAL checkpoint, the bytes of payload (JSON) it holds, and, for
comparison, what storing every snapshot's full state JSON (messages copied into each snapshot)
would take. Targets: cost per step at 1,000 steps within 2x of 10 steps; size at most linear in
steps.

``--tools N`` gives the agent N more tools with the schemas of a typical search tool (four typed
arguments, a documented docstring), as an MCP server's would be: every snapshot names them, and
their definitions are stored once per run.

    .venv/bin/python bench/snapshot_cost.py                 # full run (well under a minute)
    .venv/bin/python bench/snapshot_cost.py --quick         # 10 and 100 steps, one repetition
    .venv/bin/python bench/snapshot_cost.py --json out.json
    .venv/bin/python bench/snapshot_cost.py --quick --tools 20
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import workbench as wb
from workbench.conditions import RunView
from workbench.engine import Execution

SIZES = (10, 100, 1000)
TAIL = 50
TARGET_FLAT = 2.0
RESULT = "the sum is {total}; " + "details " * 22
THOUGHT = "I will add the next number to the running total, as asked. " * 2


@dataclass
class Figures:
    steps: int
    snapshot_us: float
    store_us: float
    step_us: float
    end_us: float
    db_bytes: int
    payload_bytes: int
    message_rows: int
    naive_bytes: int

    @property
    def bytes_per_step(self) -> float:
        return self.payload_bytes / self.steps


_costs: dict[int, float] = defaultdict(float)
"""Seconds of snapshot + store work per step of the run under way."""


_split: dict[str, float] = defaultdict(float)
"""Seconds of snapshot and of store work in the run under way."""


def _timed_snapshot(original: Callable[[Execution, RunView], wb.StepContext]) -> Any:
    def snapshot(self: Execution, view: RunView) -> wb.StepContext:
        started = time.perf_counter()
        made = original(self, view)
        spent = time.perf_counter() - started
        _costs[made.step] += spent
        _split["snapshot"] += spent
        return made

    return snapshot


class TimedStore(wb.RunStore):
    """A RunStore that adds the time of each callback to the step it belongs to."""

    def _timed(self, step: int, call: Callable[[], None]) -> None:
        started = time.perf_counter()
        call()
        spent = time.perf_counter() - started
        _costs[step] += spent
        _split["store"] += spent

    def run_started(self, state: wb.AgentState) -> None:
        self._timed(state.step + 1, lambda: super(TimedStore, self).run_started(state))

    def step_started(self, snapshot: wb.StepContext) -> None:
        self._timed(snapshot.step, lambda: super(TimedStore, self).step_started(snapshot))

    def phase_ended(self, event: wb.PhaseEvent, started_at: float) -> None:
        self._timed(event.step, lambda: super(TimedStore, self).phase_ended(event, started_at))

    def step_ended(self, record: wb.StepRecord) -> None:
        self._timed(record.index, lambda: super(TimedStore, self).step_ended(record))

    def run_ended(self, state: wb.AgentState) -> None:
        self._timed(state.step, lambda: super(TimedStore, self).run_ended(state))


def _add(a: int, b: int) -> str:
    """Add two integers and explain."""
    return RESULT.format(total=a + b)


def _model(steps: int) -> wb.FunctionModel:
    usage = wb.Usage(input_tokens=10, output_tokens=5, requests=1)

    def answer(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        step = (len(messages) + 1) // 2
        if step >= steps:
            return wb.ModelResponse.text("done", usage=usage)
        call = wb.ToolCall(name="add", arguments={"a": step, "b": step}, call_id=f"c{step}")
        return wb.ModelResponse(
            parts=(wb.TextPart(text=THOUGHT), call),
            usage=usage,
            finish_reason=wb.FinishReason.TOOL_CALLS,
        )

    return wb.FunctionModel(answer, name="bench")


def _search_tool(number: int) -> wb.Tool:
    def search(
        query: str,
        limit: int = 10,
        mode: Literal["fast", "exact", "fuzzy"] = "fast",
        tags: list[str] | None = None,
    ) -> str:
        """Search a collection for documents matching the query.

        Args:
            query: The text to look for; quoted phrases and boolean operators work.
            limit: How many results to return at most.
            mode: How to match: fast (prefix), exact (whole words) or fuzzy (edit distance).
            tags: Only documents that carry all of these tags.
        """
        return query

    return wb.tool(search, name=f"search_{number}")  # type: ignore[call-overload, no-any-return]


def measure(steps: int, folder: Path, tools: int = 0) -> Figures:
    """One recorded run of ``steps`` steps, with ``tools`` tools beside ``add``."""
    path = folder / f"runs-{steps}-{time.monotonic_ns()}.sqlite"
    store = TimedStore(path)
    with store._writing():  # create the file and schema first: that is not a per-step cost
        pass
    tool = wb.tool(_add, name="add")  # type: ignore[call-overload]
    every = [tool, *(_search_tool(i) for i in range(tools))]
    agent = wb.Agent(model=_model(steps), tools=every, stop=wb.MaxSteps(steps + 10), store=store)
    _costs.clear()
    _split.clear()
    gc.collect()
    result = agent.run_sync("Add numbers until you are done.")
    assert result.output == "done", result.error
    assert len(result.steps) == steps
    assert not store.write_errors, store.write_errors
    per_step = [_costs[i] for i in range(1, steps + 1)]
    naive = sum(len(s.model_dump_json()) for s in result.snapshots)
    store.close()
    db_bytes, payload, rows = _sizes(path)
    return Figures(
        steps=steps,
        snapshot_us=_split["snapshot"] / steps * 1e6,
        store_us=_split["store"] / steps * 1e6,
        step_us=statistics.median(per_step) * 1e6,
        end_us=statistics.median(per_step[-TAIL:]) * 1e6,
        db_bytes=db_bytes,
        payload_bytes=payload,
        message_rows=rows,
        naive_bytes=naive,
    )


def _sizes(path: Path) -> tuple[int, int, int]:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        payload = sum(
            conn.execute(query).fetchone()[0] or 0
            for query in (
                "SELECT sum(length(body)) FROM messages",
                "SELECT sum(length(body) + length(messages)) FROM snapshots",
                "SELECT sum(length(body) + length(messages_in) + length(new_messages)) FROM steps",
                "SELECT sum(length(state) + length(state_messages)) FROM runs",
                "SELECT sum(length(body)) FROM tool_sets",
            )
        )
        rows = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        conn.close()
    return path.stat().st_size, payload, rows


def median_figures(runs: list[Figures]) -> Figures:
    first = runs[0]
    return Figures(
        steps=first.steps,
        snapshot_us=statistics.median(r.snapshot_us for r in runs),
        store_us=statistics.median(r.store_us for r in runs),
        step_us=statistics.median(r.step_us for r in runs),
        end_us=statistics.median(r.end_us for r in runs),
        db_bytes=first.db_bytes,
        payload_bytes=first.payload_bytes,
        message_rows=first.message_rows,
        naive_bytes=first.naive_bytes,
    )


def report(figures: list[Figures]) -> tuple[str, dict[str, float]]:
    header = (
        "steps", "snapshot µs (mean)", "store µs (mean)", "both µs (median)",
        "both µs (last 50)", "db file", "payload", "payload/step", "message rows",
        "naive copies",
    )  # fmt: skip
    rows = [header] + [
        (
            f"{f.steps:,}",
            f"{f.snapshot_us:.1f}",
            f"{f.store_us:.1f}",
            f"{f.step_us:.1f}",
            f"{f.end_us:.1f}",
            f"{f.db_bytes:,}",
            f"{f.payload_bytes:,}",
            f"{f.bytes_per_step:,.0f}",
            f"{f.message_rows:,}",
            f"{f.naive_bytes:,}",
        )
        for f in figures
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    ratios: dict[str, float] = {}
    small, large = figures[0], figures[-1]
    ratios["cost_end_large_vs_small"] = large.end_us / small.end_us
    for a, b in itertools.pairwise(figures):
        ratios[f"size_{b.steps}_vs_{a.steps}"] = b.payload_bytes / a.payload_bytes
        ratios[f"naive_{b.steps}_vs_{a.steps}"] = b.naive_bytes / a.naive_bytes
    lines.append("")
    lines.append(
        f"per-step cost at the end: {large.steps:,} steps / {small.steps:,} steps = "
        f"{ratios['cost_end_large_vs_small']:.2f}x (target <= {TARGET_FLAT:g}x)"
    )
    for a, b in itertools.pairwise(figures):
        steps_ratio = b.steps / a.steps
        lines.append(
            f"payload {b.steps:,} / {a.steps:,} steps = "
            f"{ratios[f'size_{b.steps}_vs_{a.steps}']:.2f}x for {steps_ratio:g}x the steps "
            f"(at most linear); naive copies: {ratios[f'naive_{b.steps}_vs_{a.steps}']:.1f}x"
        )
    return "\n".join(lines), ratios


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 steps, one repetition")
    parser.add_argument("--repeat", type=int, default=5, help="runs per size (median)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--tools", type=int, default=0, help="more tools the agent has")
    args = parser.parse_args(argv)
    sizes = SIZES[:2] if args.quick else SIZES
    repeat = 1 if args.quick else args.repeat
    Execution._snapshot = _timed_snapshot(Execution._snapshot)  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="snapshot-cost-") as tmp:
        measure(10, Path(tmp), args.tools)  # warm-up: imports, pydantic schemas, SQLite
        figures = [
            median_figures([measure(n, Path(tmp), args.tools) for _ in range(repeat)])
            for n in sizes
        ]
    text, ratios = report(figures)
    print(
        f"snapshot + store cost per step (python {sys.version.split()[0]}, "
        f"sqlite {sqlite3.sqlite_version}, median of {repeat} runs, {1 + args.tools} tools)\n"
    )
    print(text)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"figures": [asdict(f) for f in figures], "ratios": ratios}, indent=2)
        )
    flat = ratios["cost_end_large_vs_small"] <= TARGET_FLAT
    # At most linear: what is stored once per run (the tool definitions) makes it grow slower.
    linear = all(
        b.payload_bytes / a.payload_bytes <= 1.2 * (b.steps / a.steps)
        for a, b in itertools.pairwise(figures)
    )
    verdict = {True: "met", False: "MISSED"}
    print(f"\ntargets: flat per-step cost {verdict[flat]}; linear size {verdict[linear]}")
    return 0 if flat and linear else 1


if __name__ == "__main__":
    sys.exit(main())
