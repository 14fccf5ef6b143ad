"""Run data for the views: whatever the user has, turned into step records, a table and spans.

`run_view_data` accepts a result, a stepped run, the results of a paused and resumed run, a run
loaded from a `RunStore`, step records, or a `Telemetry`; `trace_figures` builds the figures from
what it returns, and a run tree its per-agent rollup (`agents_table`). No widgets here: the
report uses this module too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable

import pandas as pd
import plotly.graph_objects as go

from workbench.agent import RunResult
from workbench.notebook.explorer_data import (
    RunRecords,
    combine_results,
    run_records,
    run_tree_ids,
)
from workbench.notebook.spans import run_span_rows, waterfall_figure
from workbench.notebook.tables import step_table, timing_figure, tokens_figure
from workbench.notebook.tree import agents_table
from workbench.records import StepRecord

__all__ = [
    "ResultSource",
    "RunViewData",
    "SpanSource",
    "StepSource",
    "as_result",
    "combine_results",
    "run_view_data",
    "trace_figures",
]


@runtime_checkable
class StepSource(Protocol):
    """Anything with step records: `RunResult`, `AgentRun`, a run from `RunStore.load`."""

    @property
    def steps(self) -> Sequence[StepRecord]:
        """The step records, in order."""
        ...


@runtime_checkable
class SpanSource(Protocol):
    """Anything that gives a span table: `workbench.Telemetry`."""

    def spans_df(self) -> pd.DataFrame:
        """One row per span."""
        ...

    def steps_df(self) -> pd.DataFrame:
        """One row per step span, with ``*_ms`` timing and token columns."""
        ...


@runtime_checkable
class ResultSource(Protocol):
    """Anything that has a `RunResult` so far: `AgentRun`, the `Stepper`."""

    @property
    def result(self) -> RunResult:
        """The result so far."""
        ...


Source: TypeAlias = (
    StepSource | ResultSource | SpanSource | Sequence[StepSource] | Sequence[StepRecord]
)
Spans: TypeAlias = pd.DataFrame | Iterable[Mapping[str, Any]]


@dataclass(frozen=True)
class RunViewData:
    """What the views draw: a step table, the step records if known, and spans."""

    table: pd.DataFrame
    steps: tuple[StepRecord, ...]
    spans: Spans
    synthesized: bool
    """True when the spans were rebuilt from the run's records (it had no telemetry).

    Rebuilt spans are exact (`run_span_rows`: the spans the live run would have had), so this
    only says where they came from; no span carries a mark of it.
    """
    agents: pd.DataFrame | None = None
    """Per agent of a run tree (`agents_table`); None for a run without sub-runs."""


def _collect_records(source: Source) -> RunRecords:
    records = run_records(source)
    if records is not None:
        return records
    if isinstance(source, Sequence) and not source:
        return RunRecords(())
    raise TypeError(
        "TraceView needs a run result, an AgentRun, a list of results, step records or a "
        f"Telemetry; got {type(source).__name__}"
    )


def _run_spans(telemetry: SpanSource, steps: Sequence[StepRecord]) -> pd.DataFrame:
    """The telemetry's spans of the runs of ``steps`` and of their sub-runs, as the explorer's."""
    frame = telemetry.spans_df()
    if "run_id" in frame.columns and steps:
        attributes = frame["attributes"].tolist() if "attributes" in frame.columns else []
        runs = run_tree_ids(attributes, steps)
        frame = frame[frame["run_id"].isin(runs)]
    return frame


def run_view_data(
    source: Source, *, telemetry: SpanSource | None = None, spans: Spans | None = None
) -> RunViewData:
    """Plain run data for the views.

    Spans come from ``spans`` if given, else from ``telemetry`` (only this run's), else from a
    `Telemetry` passed as the source; a run without any gets the spans its records make
    (`run_span_rows`).
    """
    if isinstance(source, SpanSource) and not isinstance(source, StepSource):
        return RunViewData(
            source.steps_df(), (), spans if spans is not None else source.spans_df(), False
        )
    records = _collect_records(source)
    steps = records.steps
    if spans is None and telemetry is not None:
        spans = _run_spans(telemetry, steps)
    synthesized = spans is None or (isinstance(spans, pd.DataFrame) and spans.empty)
    if synthesized:
        spans = run_span_rows(*records.runs)
    assert spans is not None
    agents = _agents(source) if records.children else None
    return RunViewData(step_table(steps), steps, spans, synthesized, agents)


def _agents(source: Source) -> pd.DataFrame | None:
    """The per-agent rollup of a run tree, when the source is a run (or its executions)."""
    if isinstance(source, (RunResult, ResultSource)):
        return agents_table(as_result(source))
    items = list(source) if isinstance(source, Sequence) else []
    runs = [run for run in items if isinstance(run, RunResult)]
    return agents_table(combine_results(runs)) if runs and len(runs) == len(items) else None


def trace_figures(data: RunViewData) -> dict[str, go.Figure]:
    """The waterfall, the timing breakdown and the tokens per step, by name."""
    per_step = data.steps if data.steps else data.table
    note = " (rebuilt from the step records)" if data.synthesized else ""
    return {
        "waterfall": waterfall_figure(data.spans, title=f"Spans{note}"),
        "timing": timing_figure(per_step),
        "tokens": tokens_figure(per_step),
    }


def as_result(source: RunResult | ResultSource | Sequence[RunResult]) -> RunResult:
    """One `RunResult` for a result, a stepped run, or the results of each execution."""
    if isinstance(source, RunResult):
        return source
    if isinstance(source, ResultSource):
        return source.result
    return combine_results(list(source))
