"""What every view reads of a trace, derived from its span tree: steps, timing, errors, agents.

Plain functions of a `SpanTree` returning plain rows (`workbench.telemetry.frames` makes the
DataFrames of them, `Trace` calls both), so the step table of TraceView, the report, ``workbench
trace`` and ``Trace.steps_df()`` is one table, read one way, for our traces and other
frameworks' alike:

- a step of ours is a ``workbench.step`` span, with its model call, tool calls and hooks among
  its children;
- a step of another framework's trace is a model call, with the tool calls that started after
  it (before the agent's next model call), or, in a trace of a model client alone, the calls
  its answer asked for (``add:asked``).

A value a tracer wrote with the wrong type (tokens as ``"many"``, a duration as text) is read
as missing, never raised (`number`), and named by `problems`, so every view still shows the
trace and says what it could not read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from workbench.errors import TraceLoadError
from workbench.messages import ToolCall
from workbench.records import call_label
from workbench.telemetry import names as n
from workbench.telemetry.recover import messages_of_chat
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.tree import SpanTree

__all__ = [
    "agents_by_position",
    "children",
    "foreign_calls",
    "number",
    "problems",
    "step_heads",
    "step_rows",
    "timing_rows",
    "tool_status",
]

NUMERIC = frozenset(
    {
        n.USAGE_INPUT_TOKENS,
        n.USAGE_OUTPUT_TOKENS,
        n.OI_INPUT_TOKENS,
        n.OI_OUTPUT_TOKENS,
        n.OLDER_INPUT_TOKENS,
        n.OLDER_OUTPUT_TOKENS,
        n.STEP_INPUT_TOKENS,
        n.STEP_OUTPUT_TOKENS,
        n.STEP_TOOL_CALLS,
        n.STEP_COST,
        n.TIMING_PREPARE,
        n.TIMING_INFERENCE,
        n.TIMING_TOOLS,
        n.TIMING_HOOKS,
        n.TIMING_CONTINUATION,
        n.TIMING_TELEMETRY,
        n.TIMING_TTFT,
        n.USAGE_TOTAL_INPUT,
        n.USAGE_TOTAL_OUTPUT,
        n.USAGE_TOTAL_COST,
    }
)
"""Attributes every table reads as numbers."""
CONTENT = (n.INPUT_MESSAGES, n.OUTPUT_MESSAGES, n.SYSTEM_INSTRUCTIONS)
"""Attributes read as JSON messages."""
_READ = NUMERIC | frozenset(CONTENT)
"""Every attribute `problems` reads: a span with none of them has nothing it could not read."""


def number(value: Any) -> float | None:
    """A numeric attribute as a number: None when absent, NaN when it is not a number.

    Text holding a number (a tracer that writes every value as a string) is read as one. An
    infinite count or cost (``"Infinity"`` is valid OTLP/JSON for a double) is not a number
    either: summed or drawn it would be, and no token count or price is infinite.

    >>> number(3), number("2.5"), number(None), number("many"), number("-inf")
    (3, 2.5, None, nan, nan)
    """
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, (str, float)) and not isinstance(value, bool):
        try:
            found = float(value)
        except ValueError:
            return math.nan
        return found if math.isfinite(found) else math.nan
    return math.nan


def problems(spans: Sequence[SpanData]) -> list[str]:
    """What could not be read, one line per value: numbers that are not, content that is not.

    >>> problems([SpanData(trace_id="1", span_id="2", name="chat", start_ns=0, end_ns=1,
    ...                    attributes={"gen_ai.usage.input_tokens": "many"})])
    ["span 2 (chat): gen_ai.usage.input_tokens is 'many', not a number"]
    """
    out = []
    for span in spans:
        if _READ.isdisjoint(span.attributes):  # most spans: their attributes not gone through
            continue
        for key, value in span.attributes.items():
            if key in NUMERIC and _bad_number(value):
                out.append(
                    f"span {span.span_id} ({span.name}): {key} is {_shown(value)}, not a number"
                )
            elif key in CONTENT and not _json_list(value):
                out.append(
                    f"span {span.span_id} ({span.name}): {key} is {_shown(value)}, not messages"
                )
    return out


def _bad_number(value: Any) -> bool:
    found = number(value)
    return found is not None and isinstance(found, float) and math.isnan(found)


def _json_list(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return True
    if not isinstance(value, str):
        return False
    try:
        return isinstance(json.loads(value), list)
    except ValueError:
        return False


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…'"


def agents_by_position(tree: SpanTree) -> list[str]:
    """The agent of each position: the nearest ``gen_ai.agent.name`` at or above the span.

    OpenInference names it ``agent.name`` (its instrumentation of the OpenAI Agents SDK); a
    LangGraph graph's spans name none, and the graph's span is the agent's
    (``create_react_agent(..., name="forecaster")``).
    """
    agents: list[str] = []
    for span, parent in zip(tree.in_order(), tree.parents, strict=True):
        own = span.attributes.get(n.AGENT_NAME, span.attributes.get(n.OI_AGENT_NAME))
        if own is not None:
            agents.append(str(own))
        elif parent is not None:
            agents.append(agents[parent])
        else:
            agents.append(span.name if _a_graph(span) else "")
    return agents


def _a_graph(span: SpanData) -> bool:
    """Whether a top span is a LangGraph graph's, as OpenInference's LangChain tracer writes it.

    Its ``metadata`` JSON says ``"ls_integration": "langgraph"``; Phoenix gives it back
    flattened, as ``metadata.ls_integration``.
    """
    if span.attributes.get(f"{n.OI_METADATA}.ls_integration") == "langgraph":
        return True
    text = span.attributes.get(n.OI_METADATA)
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):  # not JSON: nothing said of what the span is
        return False
    return isinstance(found, dict) and found.get("ls_integration") == "langgraph"


def children(tree: SpanTree, position: int) -> Iterator[int]:
    """Positions of the span's direct children."""
    child, end = position + 1, tree.ends[position]
    while child < end:
        yield child
        child = tree.ends[child]


def _our_steps(
    tree: SpanTree, agents: Sequence[str], categories: Sequence[str]
) -> list[tuple[int, dict[str, Any]]]:
    """Our steps: each ``workbench.step`` span, with its children."""
    rows = []
    for position in _step_positions(categories, "step"):
        span = tree.span_at(position)
        inside = list(children(tree, position))
        models = [tree.span_at(c) for c in inside if categories[c] == "model"]
        model = models[-1] if models else None  # the last try: a client may have asked again
        tools = [tree.span_at(c) for c in inside if categories[c] == "tool"]
        failed = span.is_error + sum(tree.span_at(c).is_error for c in inside)
        row = _step_row(span, agents[position], span.attributes.get(n.STEP_INDEX), model, tools)
        tries = {"tries": len(models)}
        rows.append((position, {**row, **_our_timing(span, model), **tries, "errors": failed}))
    return rows


def _foreign_steps(
    tree: SpanTree, agents: Sequence[str], categories: Sequence[str]
) -> list[tuple[int, dict[str, Any]]]:
    """Another framework's steps: each model call, and the tool calls after it by the agent."""
    rows = []
    for index, (position, calls) in enumerate(foreign_calls(tree, agents, categories), 1):
        model, tools = tree.span_at(position), [tree.span_at(c) for c in calls]
        tokens = n.tokens_of(model.attributes)
        row = {
            **_step_row(model, agents[position], index, model, tools),
            **({} if tools else _asked(model)),
            "duration_ms": _extent_ms([model, *tools]),  # the step is the call and its tools
            "inference_ms": model.duration_ns / 1e6,
            "tools_ms": _extent_ms(tools),
            "tries": 1,
            "input_tokens": number(tokens[0]),
            "output_tokens": number(tokens[1]),
            "errors": model.is_error + sum(t.is_error for t in tools),
        }
        rows.append((position, row))
    return rows


def foreign_calls(
    tree: SpanTree, agents: Sequence[str], categories: Sequence[str]
) -> list[tuple[int, list[int]]]:
    """Each model call (its position), in start order, with the tool calls its agent made after it.

    Another framework's step n is its n-th model call: its step table and its errors number
    them so.
    """
    calls: dict[int, list[int]] = {}
    last: dict[str, int] = {}
    for position in sorted(range(len(tree)), key=lambda p: tree.span_at(p).start_ns):
        category = categories[position]
        if category == "model":
            calls[position] = []
            last[agents[position]] = position
        elif category == "tool" and agents[position] in last:
            calls[last[agents[position]]].append(position)
    return sorted(calls.items(), key=lambda item: tree.span_at(item[0]).start_ns)


def _asked(model: SpanData) -> dict[str, Any]:
    """The calls a model call's answer asked for, when no tool span says what ran.

    A trace of a model client alone (an instrumented SDK in a loop of the user's) has model
    calls and nothing else: the answer's tool calls are what the step did.
    """
    try:
        messages = messages_of_chat(model.attributes)
    except TraceLoadError:  # content that is not messages: `problems` names it
        return {}
    answer = messages[-1] if messages and messages[-1].role == "assistant" else None
    calls = [p.name for p in answer.parts if isinstance(p, ToolCall)] if answer else []
    return {"tool_calls": len(calls), "tools": ", ".join(call_label(c, "asked for") for c in calls)}


class StepHead(NamedTuple):
    """A step as a heading counts it: whose, of which run, which step, what it cost."""

    agent: str
    run_id: Any
    step: Any
    cost: float | None


def step_heads(tree: SpanTree, agents: Sequence[str], categories: Sequence[str]) -> list[StepHead]:
    """The steps `step_rows` makes a row of, in start order, without reading what they did.

    A trace's heading ("16,666 steps of 2 agents") and its cost are read of these: the rows of
    a 100,000-span trace take a second to make, for a line that counts them.
    """
    positions = sorted(
        _step_positions(categories, "step") or _step_positions(categories, "model"),
        key=lambda p: tree.span_at(p).start_ns,
    )
    heads = []
    for index, position in enumerate(positions, 1):
        a = tree.span_at(position).attributes
        ours = categories[position] == "step"
        step = a.get(n.STEP_INDEX) if ours else index  # another framework's: its n-th call
        cost = number(a.get(n.STEP_COST)) if ours else None
        heads.append(StepHead(agents[position], a.get(n.RUN_ID), step, cost))
    return heads


def _step_positions(categories: Sequence[str], category: str) -> list[int]:
    """Where the spans of a category are: ``step`` (ours), or ``model`` (a step elsewhere)."""
    return [p for p, c in enumerate(categories) if c == category]


def step_rows(
    tree: SpanTree, agents: Sequence[str], categories: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per step, in start order (the columns of `frames.STEP_COLUMNS`).

    ``agents`` and ``categories`` are each position's (`Trace.agent_at`, `Trace.category_at`).
    The steps are those of `step_heads`.
    """
    found = _our_steps(tree, agents, categories) or _foreign_steps(tree, agents, categories)
    found.sort(key=lambda item: tree.span_at(item[0]).start_ns)
    rows = [row for _, row in found]
    for row, label in zip(rows, _labels(rows), strict=True):
        row["label"] = label
    return rows


def _seconds_ms(value: Any) -> float | None:
    found = number(value)
    return None if found is None else found * 1e3


def _tools_text(tools: Sequence[SpanData]) -> str:
    """The step's calls as every step table says them (`call_label`): ``add, save (waits)``."""
    return ", ".join(
        call_label(_tool_name(t), tool_status(t), replayed=bool(t.attributes.get(n.TOOL_REPLAYED)))
        for t in tools
    )


def tool_status(span: SpanData) -> str:
    """How a tool call ended, as our spans say it: ``ok``, ``error``, ``retry``, ``denied``, ...

    Another framework's call: failed or not, except that a call pydantic-ai sent back to the
    model to fix (its arguments failed validation, the tool raised ``ModelRetry``) is a retry,
    no error, as ours are: its span is marked failed, with the retry's cause.
    """
    said = span.attributes.get(n.TOOL_STATUS)
    if said is not None:
        return str(said)
    if not span.is_error:
        return "ok"
    return "retry" if n.PYDANTIC_AI_RETRY_CAUSE in span.attributes else "error"


def _tool_name(span: SpanData) -> str:
    name = span.attributes.get(n.TOOL_NAME, span.attributes.get(n.OI_TOOL_NAME))
    return str(name) if name is not None else span.name


def _step_row(
    span: SpanData, agent: str, step: Any, model: SpanData | None, tools: Sequence[SpanData]
) -> dict[str, Any]:
    """What every step row says, ours or another framework's."""
    a = span.attributes
    return {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "run_id": a.get(n.RUN_ID),
        "agent": agent,
        "execution_id": a.get(n.EXECUTION_ID),
        "step": step,
        "snapshot_id": a.get(n.SNAPSHOT_ID),
        "status": a.get(n.STEP_STATUS),
        "stop_reason": a.get(n.STEP_STOP_REASON),
        "start": span.start_ns,
        "duration_ms": span.duration_ns / 1e6,
        "model_span_id": model.span_id if model is not None else None,
        "tool_calls": len(tools),
        "tools": _tools_text(tools),
        "in_progress": span.in_progress,
        "resumed": bool(a.get(n.STEP_RESUMED)),
    }


def _our_timing(span: SpanData, model: SpanData | None) -> dict[str, Any]:
    """A step span's own numbers: its phases' times, tokens and cost, as the loop measured."""
    a = span.attributes
    tokens = n.tokens_of(model.attributes) if model is not None else (None, None)
    return {
        "prepare_ms": _seconds_ms(a.get(n.TIMING_PREPARE)),
        "inference_ms": _seconds_ms(a.get(n.TIMING_INFERENCE)),
        "tools_ms": _seconds_ms(a.get(n.TIMING_TOOLS)),
        "hooks_ms": _seconds_ms(a.get(n.TIMING_HOOKS)),
        "continuation_ms": _seconds_ms(a.get(n.TIMING_CONTINUATION)),
        "telemetry_ms": _seconds_ms(a.get(n.TIMING_TELEMETRY)),
        "ttft_ms": _seconds_ms(a.get(n.TIMING_TTFT)),
        "input_tokens": number(a.get(n.STEP_INPUT_TOKENS, tokens[0])),
        "output_tokens": number(a.get(n.STEP_OUTPUT_TOKENS, tokens[1])),
        "cost": number(a.get(n.STEP_COST)),
    }


def _extent_ms(spans: Sequence[SpanData]) -> float | None:
    """From the first span's start to the last one's end (parallel calls counted once)."""
    if not spans:
        return None
    return (max(s.end_ns for s in spans) - min(s.start_ns for s in spans)) / 1e6


def _labels(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A label per step row, unique: the number, and which agent, run or execution part.

    A step that paused for approval has a span per execution (same number): the one its span
    says was resumed is ``(resumed)``, whatever the clocks put first (a run paused on a machine
    whose clock is ahead is resumed "before" it paused); steps of several agents say whose
    (``2 · researcher``); several runs of one agent (a session's executions) say which run
    (``1 (run 2)``).
    """
    agents = {str(r["agent"]) for r in rows}
    runs_of: dict[str, dict[Any, int]] = {}
    for row in rows:
        runs = runs_of.setdefault(str(row["agent"]), {})
        runs.setdefault(row["run_id"], len(runs) + 1)
    parts: dict[tuple[Any, ...], list[int]] = {}  # each step's rows: the first part, then resumed
    for at, row in sorted(enumerate(rows), key=lambda item: bool(item[1].get("resumed"))):
        parts.setdefault((row["agent"], row["run_id"], row["step"]), []).append(at)
    part_of = {at: part for ats in parts.values() for part, at in enumerate(ats)}
    labels = []
    for at, row in enumerate(rows):
        resumed = part_of[at]
        runs = runs_of[str(row["agent"])]
        notes = [f"run {runs[row['run_id']]}"] if len(runs) > 1 else []
        if resumed:
            notes.append("resumed" if resumed == 1 else f"resumed {resumed}")
        label = str(row["step"]) + (f" · {row['agent']}" if len(agents) > 1 else "")
        labels.append(f"{label} ({', '.join(notes)})" if notes else label)
    return labels


_COMPONENTS = {"model": "inference", "tool": "tool", "hook": "hook"}
_PHASES = {n.SPAN_PREPARE: "prepare", n.SPAN_CONTINUATION: "continuation"}


def timing_rows(
    tree: SpanTree, agents: Sequence[str], categories: Sequence[str]
) -> list[dict[str, Any]]:
    """The timed parts of every step, in start order, with each one's agent.

    The columns of `frames.TIMING_COLUMNS`: a phase, a model call, a tool call, a hook, and the
    telemetry's own time on each step.
    """
    rows = []
    for position in sorted(range(len(tree)), key=lambda p: tree.span_at(p).start_ns):
        span = tree.span_at(position)
        timed = _timed(span, categories[position])
        if timed is None:
            continue
        a = span.attributes
        component, name, duration = timed
        rows.append(
            {
                "trace_id": span.trace_id,
                "run_id": a.get(n.RUN_ID),
                "agent": agents[position],
                "execution_id": a.get(n.EXECUTION_ID),
                "step": a.get(n.STEP_INDEX),
                "component": component,
                "name": name,
                "start": span.start_ns,
                "duration_ms": duration,
            }
        )
    return rows


def _timed(span: SpanData, category: str) -> tuple[str, str, float] | None:
    """The span as a timed part (component, name, ms); None for a span that is not one."""
    if category == "step":  # the observers' own cost, which the step measured
        overhead = _seconds_ms(span.attributes.get(n.TIMING_TELEMETRY))
        return None if overhead is None else ("telemetry", "telemetry", overhead)
    component = _PHASES.get(span.name) if category == "phase" else _COMPONENTS.get(category)
    return None if component is None else (component, span.name, span.duration_ns / 1e6)
