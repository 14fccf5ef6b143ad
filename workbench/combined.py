"""One result for a run made of several executions: paused, then resumed.

A resumed run's result holds the steps before its pause only when a store had them, and a
sub-run the same process paused and resumed comes back as two results of one run id, each
with its own execution. Views and `AgentRun.result` need the run as one: each step and
snapshot once, and each sub-run once with all its executions, at every depth (keeping only
the last one seen would lose what the sub-run did before the pause, and draw its parent's
call as one long wait).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from workbench.records import RunResult, StepRecord

__all__ = ["combine_results", "each_run_once"]


def combine_results(results: Sequence[RunResult]) -> RunResult:
    """One result for the executions of one run (the last one's state).

    Each step record and snapshot is kept once; the sub-runs are combined the same way
    (`each_run_once`).
    """
    if not results:
        raise ValueError("no results to combine")
    steps: dict[tuple[str, int, float], StepRecord] = {
        (s.execution_id, s.index, s.started_at): s for r in results for s in r.steps
    }
    snapshots = {s.id: s for r in results for s in r.snapshots}
    return RunResult(
        state=results[-1].state,
        steps=tuple(steps.values()),
        snapshots=tuple(snapshots.values()),
        children=each_run_once(c for r in results for c in r.children),
    )


def each_run_once(runs: Iterable[RunResult]) -> tuple[RunResult, ...]:
    """Each run once, in the order first seen; several results of one run are combined."""
    by_run: dict[str, list[RunResult]] = {}
    for run in runs:
        by_run.setdefault(run.run_id, []).append(run)
    return tuple(
        versions[0] if len(versions) == 1 else combine_results(versions)
        for versions in by_run.values()
    )
