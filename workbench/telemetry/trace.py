"""`Trace`: the one trace model every view draws from, whatever the trace came from.

A live run's spans, a stored run's (written from its records), a run stopped anywhere (its
spans so far), an OTLP or Jaeger file and a trace pulled from a backend all become a `Trace`
(through `workbench.trace_of`, the one door): its `SpanData` in start order, and, when it came
from a run, the run tree's step records (the richer source of what a step sent and got). What
the views read is derived from it once, here: the span tree (`tree`), the step table, the
timing table, the model calls, the errors, the agents. TraceView, the trace explorer, the
Stepper's timeline, the report, ``workbench trace`` and the DataFrames read nothing else.

It needs neither OpenTelemetry nor pandas until SDK spans are read or a DataFrame is asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import Field

from workbench._json import loads
from workbench._record import Record, collector_paused
from workbench.errors import StepNotInTrace, TraceLoadError
from workbench.messages import JsonValue, Message
from workbench.records import RunError, StepRecord, errors_summary
from workbench.state import ExecutionStatus
from workbench.telemetry import names as n
from workbench.telemetry.derive import (
    StepHead,
    agents_by_position,
    problems,
    step_heads,
    step_rows,
    timing_rows,
)
from workbench.telemetry.failures import foreign_status, trace_errors
from workbench.telemetry.recover import messages_of_chat
from workbench.telemetry.spandata import SpanData, SpanEvent, SpanLink, span_data
from workbench.telemetry.tree import SpanTree, nest_subruns
from workbench.telemetry.waits import Stretches, seconds_waited, waits_closed

if TYPE_CHECKING:
    import pandas as pd
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "AGENT_COLUMNS",
    "SpanData",
    "SpanEvent",
    "SpanLink",
    "Trace",
    "conversation_chats",
    "no_step",
]

AGENT_COLUMNS = (
    "agent",
    "runs",
    "steps",
    "input_tokens",
    "output_tokens",
    "cost",
    "inference_ms",
    "tools_ms",
    "hooks_ms",
)
"""Columns of `Trace.agents`; an agent's tokens and cost are its own model calls', not those it
charged from its sub-runs, so the column sums are the tree's."""


_PAUSED = ExecutionStatus.PAUSED.value
"""A run span's status when its execution paused: the run went on in another."""

_DERIVED = (
    "tree",
    "agent_at",
    "categories",
    "category_at",
    "_step_rows",
    "_step_heads",
    "_model_calls",
    "_errors",
    "_problems",
)
"""The cached properties of `Trace`, all derived from its spans alone: a copy with other spans
must not keep them."""


class Trace(Record):
    """The spans of one trace (a file holding several keeps them all; ``trace_id`` is the first's).

    ``spans`` are in start order. ``steps`` are the step records of the run tree the trace was
    made from (none for a loaded trace): the explorer and the report draw a step's messages
    from them. A run stepped by hand is in the time it worked: ``waits`` are the stretches it
    waited on the person, as recorded, left out of the spans' times (`Trace.of`).
    """

    trace_id: str
    spans: tuple[SpanData, ...]
    steps: tuple[StepRecord, ...] = ()
    waits: dict[str, Stretches] = Field(default_factory=dict)
    """When each run stepped by hand waited on whoever stepped it, by trace id (``(start_ns,
    end_ns)`` as recorded, by the clock): its spans' times leave these out (`telemetry.waits`);
    `wall_ns` gives a time back its clock time."""
    drawn: float = 0.0
    """Seconds of those waits that were its views drawing it (the Stepper redrawing a run
    driven from a cell), not a person: left out alike, said apart (`waited`)."""
    interrupted: str = ""
    """Why its open spans (`SpanData.in_progress`) will never end, when they will not: the run
    was stored, and the process that ran it ended while it ran (what a run list calls
    ``interrupted``; `workbench.runlist.writer_note` says it). The views draw those spans cut
    off where the run stopped, not "so far", and `status` says ``interrupted``. "" for a trace
    whose open spans are a run still going (or that has none)."""

    def __repr__(self) -> str:
        return f"Trace(trace_id={self.trace_id!r}, spans={len(self.spans)})"

    @classmethod
    def of(
        cls, spans: Iterable[SpanData], *, steps: Sequence[StepRecord] = (), trace_id: str = ""
    ) -> Trace:
        """A trace of these spans, in start order, each sub-run under the call that made it.

        Its id is ``trace_id``, else the earliest root's trace id ("" for no spans at all). The
        waits on the person a stepped run recorded are closed (`telemetry.waits`): every view
        draws the time it worked, and says how long it waited (`waited`).
        """
        with collector_paused():  # the tree's lists and maps: many containers, no cycle
            closed, recorded = waits_closed(list(spans))
            tree = SpanTree.of(closed)
            if tree.has_loose_subruns():  # nested under the calls that made them, walked again
                tree = SpanTree.of(nest_subruns(tree.spans))
        ordered = tree.spans
        if not trace_id and ordered:
            roots = [s for s in ordered if s.parent_id is None] or list(ordered)
            trace_id = roots[0].trace_id
        waits, drawn = recorded
        trace = cls(trace_id=trace_id, spans=ordered, steps=tuple(steps), waits=waits, drawn=drawn)
        trace.__dict__["tree"] = tree  # the tree that ordered the spans is the one `tree` derives
        return trace

    @classmethod
    def from_spans(
        cls, spans: Sequence[ReadableSpan], *, steps: Sequence[StepRecord] = ()
    ) -> Trace:
        """A trace of OpenTelemetry SDK spans (what `Telemetry.spans` holds)."""
        resources: dict[int, dict[str, Any]] = {}
        return cls.of((span_data(s, resources) for s in spans), steps=steps)

    @property
    def waited(self) -> float:
        """Seconds the run waited, left out of the spans' times (its views' drawing too).

        On whoever stepped it, and on its views drawing it (`drawn` of them).
        """
        return seconds_waited(self.waits)

    def wall_ns(self, at: int, *, trace_id: str = "", ending: bool = False) -> int:
        """When ``at`` (a span's start, or with ``ending`` its end) was by the clock.

        The waits of the span's trace (``trace_id``, this trace's id by default) left out
        before it are added back; at the point where one was left out, a start comes after it
        (the work went on after the wait) and an end before it. Another run's waits do not
        move it: it went on while that run waited.
        """
        for start, end in self.waits.get(trace_id or self.trace_id, ()):
            if at < start or (ending and at == start):
                break
            at += end - start
        return at

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Trace:
        """A copy (`Record` semantics), sharing what was derived unless it has other spans.

        Only the step records or the id changed (a run's steps on its telemetry's trace): the
        tree, the tables and the errors are those of the same spans, derived once.
        """
        copy = super().model_copy(update=update, deep=deep)
        if deep or "spans" in (update or {}):
            for name in _DERIVED:
                copy.__dict__.pop(name, None)
        return copy

    # What is derived from the spans is built on first use and kept (`functools.cached_property`
    # keeps it in the instance): every view asks for the tree, the categories and the step table
    # many times over, and at 100,000 spans each is a pass over all of them.

    @cached_property
    def tree(self) -> SpanTree:
        """The spans in depth-first order, with depths, parents and subtree ends (`SpanTree`).

        `Trace.of` keeps the tree that put the spans in start order. A trace made otherwise
        (``Trace(...)``, ``model_validate``) derives it here, over its spans as they are given.
        """
        tree = SpanTree.of(self.spans)
        if tree.spans == self.spans:
            return tree
        index = {id(span): i for i, span in enumerate(self.spans)}
        order = tuple(index[id(tree.span_at(position))] for position in range(len(tree)))
        return tree.model_copy(update={"spans": self.spans, "order": order})

    @cached_property
    def agent_at(self) -> list[str]:
        """The agent of each position of `tree` (``gen_ai.agent.name`` at or above it)."""
        return agents_by_position(self.tree)

    @cached_property
    def categories(self) -> list[str]:
        """What each span is (`SpanData.category`), in start order: read once per trace."""
        return [s.category for s in self.spans]

    @cached_property
    def category_at(self) -> list[str]:
        """What the span at each position of `tree` is (`categories` in tree order)."""
        return [self.categories[i] for i in self.tree.order]

    def _agents_in_start_order(self) -> list[str]:
        tree, at = self.tree, self.agent_at
        by_index = [""] * len(self.spans)
        for position, index in enumerate(tree.order):
            by_index[index] = at[position]
        return by_index

    # -- tables ---------------------------------------------------------------------------------

    def spans_df(self) -> pd.DataFrame:
        """One row per span, in start order (``frames.SPAN_COLUMNS``)."""
        from workbench.telemetry.frames import spans_frame

        with collector_paused():  # a dict a row (its attributes), none ever in a cycle
            return spans_frame(self.spans, self._agents_in_start_order(), self.categories)

    def step_rows(self) -> list[dict[str, Any]]:
        """The step table as rows (``frames.STEP_COLUMNS``): one per step, in start order.

        A step of ours is a ``workbench.step`` span; in a trace with none (another framework's)
        each model call is a step, with the tool calls its agent made after it.
        """
        return self._step_rows

    @cached_property
    def _step_rows(self) -> list[dict[str, Any]]:
        return step_rows(self.tree, self.agent_at, self.category_at)

    def step_heads(self) -> list[StepHead]:
        """The steps of `step_rows` as a heading counts them, without making their rows.

        The first line of every view says how many steps; the rows of a 100,000-span trace take
        a second to make.
        """
        return self._step_heads

    @cached_property
    def _step_heads(self) -> list[StepHead]:
        return step_heads(self.tree, self.agent_at, self.category_at)

    def steps_df(self) -> pd.DataFrame:
        """One row per step (``frames.STEP_COLUMNS``), the table every view shows."""
        from workbench.telemetry.frames import STEP_COLUMNS, rows_frame

        return rows_frame(self.step_rows(), STEP_COLUMNS)

    def timing_df(self) -> pd.DataFrame:
        """Where the time went, one row per timed part of a step (``frames.TIMING_COLUMNS``)."""
        from workbench.telemetry.frames import TIMING_COLUMNS, rows_frame

        rows = timing_rows(self.tree, self.agent_at, self.category_at)
        return rows_frame(rows, TIMING_COLUMNS)

    def agents(self) -> pd.DataFrame:
        """One row per agent (`AGENT_COLUMNS`): its runs, steps, own tokens and cost, its time.

        An unknown cost (a model without a price) makes the agent's cost unknown (NaN).
        """
        import pandas

        steps = self.steps_df()
        steps["key"] = list(zip(steps["run_id"], steps["step"], strict=True))
        grouped = steps.groupby("agent", sort=False)
        table = grouped.agg(
            runs=("run_id", "nunique"),
            steps=("key", "nunique"),
            input_tokens=("input_tokens", "sum"),
            output_tokens=("output_tokens", "sum"),
            inference_ms=("inference_ms", "sum"),
            tools_ms=("tools_ms", "sum"),
        )
        table["hooks_ms"] = grouped["hooks_ms"].sum(min_count=1)  # no hook ran: none measured
        table["cost"] = grouped["cost"].apply(lambda c: c.sum(skipna=False))
        table["runs"] = table["runs"].where(table["runs"] > 0, 1)
        out: pd.DataFrame = table.reset_index().reindex(columns=list(AGENT_COLUMNS))
        return out if len(out) else pandas.DataFrame(columns=list(AGENT_COLUMNS))

    # -- what happened --------------------------------------------------------------------------

    def model_calls(self) -> list[SpanData]:
        """The model calls, in start order (``chat`` spans, OpenInference's LLM spans, ...)."""
        return self._model_calls

    @cached_property
    def _model_calls(self) -> list[SpanData]:
        return [s for s, c in zip(self.spans, self.categories, strict=True) if c == "model"]

    def chat_spans(self) -> list[SpanData]:
        """The model calls, in start order (`model_calls`)."""
        return self.model_calls()

    def errors(self) -> tuple[RunError, ...]:
        """What went wrong, as `RunResult.errors` says it (`failures.trace_errors`).

        Each with its agent, run, step, call, span and traceback.
        """
        return self._errors

    @cached_property
    def _errors(self) -> tuple[RunError, ...]:
        return trace_errors(self.tree, self.agent_at)

    def top_runs(self) -> list[SpanData]:
        """The run spans of the trace's top run, one per execution (ours only), in start order."""
        agents = [
            s
            for s, c in zip(self.spans, self.categories, strict=True)
            if c == "agent" and n.RUN_ID in s.attributes
        ]
        top = [s for s in agents if n.PARENT_RUN_ID not in s.attributes]
        return top or agents[:1]

    def metadata(self) -> dict[str, JsonValue]:
        """The top run's metadata, from its run span (`names.metadata_of`).

        A trace another framework wrote: OpenInference's ``metadata`` object on its root span.
        """
        runs = self.top_runs()
        if runs:
            return n.metadata_of(runs[0].attributes)
        roots = [s for s in self.spans if s.parent_id is None]
        text = roots[0].attributes.get(n.OI_METADATA) if roots else None
        try:
            found = loads(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):  # not JSON: no metadata it could be read as
            return {}
        return found if isinstance(found, dict) else {}

    def status(self) -> str:
        """How the top run ended (``completed``, ``failed``, ...; ``running`` while it runs).

        A run whose process ended while it ran is ``interrupted`` (`interrupted` says why). A
        run resumed from a pause has a run span per execution; it ended as the one that did
        not pause, wherever the clocks put it (paused on a machine whose clock is ahead, it was
        resumed "before" it paused). A trace another framework wrote has no run status:
        ``failed`` or ``ok`` as its spans say (`failures.foreign_status`).
        """
        runs = self.top_runs()
        if runs:
            last = runs[-1].attributes.get(n.RUN_ID)
            statuses = [
                str(s.attributes.get(n.RUN_STATUS, "running"))
                for s in runs
                if s.attributes.get(n.RUN_ID) == last
            ]
            went_on = [status for status in statuses if status != _PAUSED]
            status = went_on[-1] if went_on else _PAUSED
            return "interrupted" if self.interrupted and status == "running" else status
        return foreign_status(self.tree)

    def summary(self) -> str:
        """The line every view of the trace starts with: its status and what went wrong.

        ``completed, 1 tool error: step 3, apply_discount in digger`` (`errors_summary`).
        """
        return errors_summary(self.status(), self.errors())

    def problems(self) -> list[str]:
        """Values the views could not read (a number that is not one, content that is not JSON).

        The views show the trace anyway, these values as missing, and list these lines.
        """
        return self._problems

    @cached_property
    def _problems(self) -> list[str]:
        return problems(self.spans)

    def messages(self, step: int | None = None) -> tuple[Message, ...]:
        """The conversation recovered from captured content, at ``step``.

        What the model was sent at ``step`` (a ``workbench.step.index``, or the n-th model call
        of a foreign trace), and its answer; without ``step``, the last model call's. Empty
        without captured content. A step whose call was tried again (a client's retry through
        the proxy) has a model call per try: its last is the one that was answered.
        """
        chats = conversation_chats(self)
        if not chats:
            return ()
        if step is None:
            return messages_of_chat(chats[-1].attributes)
        found = [
            chat
            for number, chat in enumerate(chats, start=1)
            if chat.attributes.get(n.STEP_INDEX, number) == step
        ]
        if not found:
            raise StepNotInTrace(no_step(chats, step))
        return messages_of_chat(found[-1].attributes)


def conversation_chats(trace: Trace) -> list[SpanData]:
    """The model calls of the trace's one conversation, in start order.

    A file can hold several traces. Steps numbered by the workbench (``workbench.step.index``)
    start at 1 in each run, so in the traces of unrelated runs "step 2" would be whichever
    trace's came first: that raises `TraceLoadError` saying how to pick one trace. The traces
    of one run's executions (a paused run and its resumption share a ``workbench.run.id``) are
    one conversation, and another framework's model calls (each often a trace of its own) are
    numbered across the file.
    """
    chats = trace.model_calls()
    if not any(n.STEP_INDEX in c.attributes for c in chats):
        return chats
    runs: dict[str, set[Any]] = {}
    for chat in chats:
        runs.setdefault(chat.trace_id, set()).add(chat.attributes.get(n.RUN_ID))
    ids = list(runs)
    if len(ids) > 1 and not set.intersection(*runs.values()) - {None}:
        raise TraceLoadError(
            f"the trace holds the model calls of {len(ids)} traces ({', '.join(ids)}): "
            "load one with load_trace(source, trace_id=...)"
        )
    return chats


def no_step(chats: list[SpanData], step: int) -> str:
    """What to say when ``step`` is none of the model calls' steps: which steps there are."""
    steps = [c.attributes.get(n.STEP_INDEX, i) for i, c in enumerate(chats, start=1)]
    shown = ", ".join(map(str, steps[:20])) + (", ..." if len(steps) > 20 else "")
    return f"the trace has no model call at step {step} (its steps: {shown or 'none'})"


def dumps(value: Any) -> str:
    """JSON for an attribute value that is a structure (kept as text, as OTel attributes are)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
