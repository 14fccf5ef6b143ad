"""A trace's top run as a `RunResult`, rebuilt from its spans: for `wb.diff` of two traces.

A trace loaded from a file or read from a backend has no step records, but a trace that captured
content says, on each model call's span, what the model was sent and what it answered, and its
``execute_tool`` spans say which tools ran and how they ended. That is what a step record holds
for a comparison: `result_of_trace` makes one per model call of the top run, so two traces
compare step by step as two runs do (`workbench.diff`).

What cannot be read off spans is left out, not made up: no snapshots (a re-run from a trace goes
through `Agent.rerun_from_trace`), no sub-runs (a sub-agent's calls are a conversation of their
own: ``children`` is empty), no hooks and no tools offered. A retry prompt reads back as the
tool's result (the GenAI conventions have no part for one). A step whose client asked again
after failed tries (``workbench.model.try``) is one step, its failed tries kept as they are
on the record that made them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast, get_args

from workbench._json import loads
from workbench.errors import TraceLoadError
from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    ResponsePart,
    ToolCall,
    Usage,
)
from workbench.records import (
    ModelTry,
    OutcomeStatus,
    RunResult,
    StepRecord,
    Timing,
    ToolOutcome,
)
from workbench.state import AgentState, ErrorInfo, ExecutionStatus, StopReason
from workbench.telemetry import names as n
from workbench.telemetry.recover import messages_of_chat
from workbench.telemetry.rerun_trace import id_of, request_of, run_span_of, usage_of
from workbench.telemetry.trace import SpanData, Trace, conversation_chats

__all__ = ["result_of_trace"]


def result_of_trace(trace: Trace) -> RunResult:
    """The top run of ``trace`` as a `RunResult`: one step record per model call of it.

    Raises `TraceLoadError` when the trace has no model call with captured messages (record
    with ``Telemetry(capture_content=True)``).
    """
    executions = trace.top_runs()  # a paused run and its resumption: one run, two run spans
    run = executions[-1] if executions else None
    run_key = _key(run) if run is not None else None
    chats, tried = _tries([c for c in conversation_chats(trace) if _run_key(trace, c) == run_key])
    sent = [request_of(c) for c in chats]
    if not chats or not any(sent):
        raise TraceLoadError(
            f"trace {trace.trace_id} has no model call with captured messages: record with "
            "Telemetry(capture_content=True) to compare traces"
        )
    tools = [s for s in trace.spans if s.category == "tool" and _run_key(trace, s) == run_key]
    run_id = id_of(chats[0], n.RUN_ID, trace.trace_id, "run id")
    steps = []
    for i, chat in enumerate(chats):
        more = i + 1 < len(chats)
        ends = chats[i + 1].start_ns if more else float("inf")
        called = [t for t in tools if chat.start_ns <= t.start_ns < ends]
        following = sent[i + 1] if more else None
        step = _step(chat, i + 1, run_id, sent[i], following, called)
        if tried[i]:
            update = {"failed_tries": tried[i], "started_at": tried[i][0].started_at}
            step = step.model_copy(update=update)
        steps.append(step)
    attributes = run.attributes if run is not None else {}
    status = _status(trace, attributes)
    last = steps[-1]
    steps[-1] = last.model_copy(update={"status": status, "stop_reason": _stop_reason(attributes)})
    conversation = (*sent[-1], *_answer(chats[-1], sent[-1]))
    failure = next((e for e in trace.errors() if e.kind == "run"), None)
    state = AgentState(
        run_id=run_id,
        execution_id=last.execution_id,
        agent_name=str(attributes.get(n.AGENT_NAME, "agent")),
        status=status,
        stop_reason=_stop_reason(attributes),
        step=len(steps),
        messages=conversation,
        usage=sum((s.usage for s in steps), Usage()),
        metadata=trace.metadata(),
        trace_id=trace.trace_id,
        error=None
        if failure is None
        else ErrorInfo(
            type=failure.type or "Error",
            message=failure.message,
            step=failure.step,
            traceback=failure.traceback,
        ),
        created_at=trace.spans[0].start_ns / 1e9,
    )
    return RunResult(state=state, steps=tuple(steps), snapshots=())


def _tries(chats: Sequence[SpanData]) -> tuple[list[SpanData], list[tuple[ModelTry, ...]]]:
    """The model calls that are their step's last try, and each one's failed tries before it.

    A failed try is followed by its step's next try (``workbench.model.try`` one more).
    """
    kept: list[SpanData] = []
    tried: list[tuple[ModelTry, ...]] = []
    failed: list[ModelTry] = []
    for chat, after in zip(chats, [*chats[1:], None], strict=True):
        number = chat.attributes.get(n.MODEL_TRY)
        following = after.attributes.get(n.MODEL_TRY) if after is not None else None
        if isinstance(number, int) and following == number + 1:
            failed.append(_failed_try(chat))
            continue
        kept.append(chat)
        tried.append(tuple(failed))
        failed = []
    return kept, tried


def _failed_try(chat: SpanData) -> ModelTry:
    """A failed try's span as the try: its times and the error it ended with."""
    raised = next((e.attributes for e in chat.events if e.name == n.EVENT_EXCEPTION), {})
    error = ErrorInfo(
        type=str(raised.get(n.EXCEPTION_TYPE) or chat.attributes.get(n.ERROR_TYPE) or "Error"),
        message=str(raised.get(n.EXCEPTION_MESSAGE) or chat.status_message or ""),
    )
    return ModelTry(started_at=chat.start_ns / 1e9, duration=chat.duration_ns / 1e9, error=error)


def _run_key(trace: Trace, span: SpanData) -> str | None:
    """The run above ``span`` (`_key`; None in a trace without run spans)."""
    run = run_span_of(trace, span)
    return _key(run) if run is not None else None


def _key(run: SpanData) -> str:
    """A run span's run: its ``workbench.run.id`` (every execution's), else the span itself."""
    return str(run.attributes.get(n.RUN_ID) or run.span_id)


def _answer(chat: SpanData, sent: Sequence[Message]) -> tuple[Message, ...]:
    """What the model answered: the span's messages after those it was sent."""
    return messages_of_chat(chat.attributes)[len(sent) :]


def _step(
    chat: SpanData,
    number: int,
    run_id: str,
    sent: tuple[Message, ...],
    following: tuple[Message, ...] | None,
    called: Sequence[SpanData],
) -> StepRecord:
    """One model call, the tool calls after it, and what the next call was sent beyond it."""
    answer = _answer(chat, sent)
    added: tuple[Message, ...] = answer
    if following is not None and len(following) > len(sent) + len(answer):
        added = following[len(sent) :]  # the answer and the tool results the next call got
    outcomes = tuple(_outcome(t) for t in called)
    return StepRecord(
        index=int(chat.attributes.get(n.STEP_INDEX, number)),
        run_id=run_id,
        execution_id=id_of(chat, n.EXECUTION_ID, chat.trace_id, "execution id"),
        messages_in=sent,
        new_messages=added,
        response=_response(chat, answer),
        tool_outcomes=outcomes,
        usage=usage_of(chat),
        timing=Timing(inference=chat.duration_ns / 1e9, tools=sum(o.duration for o in outcomes)),
        status=ExecutionStatus.RUNNING,
        stop_reason=None,
        tools_offered=(),
        snapshot_id=None,
        started_at=chat.start_ns / 1e9,
        model_started_at=chat.start_ns / 1e9,
        model_duration=chat.duration_ns / 1e9,
        ended_at=chat.end_ns / 1e9,
    )


def _response(chat: SpanData, answer: Sequence[Message]) -> ModelResponse | None:
    """The model's answer as a response: the parts of its assistant messages (None: no answer)."""
    parts = [
        p for m in answer if m.role == "assistant" for p in m.parts if isinstance(p, ResponsePart)
    ]
    if not parts:
        return None
    calls = any(isinstance(p, ToolCall) for p in parts)
    return ModelResponse(
        parts=tuple(parts),
        usage=usage_of(chat),
        finish_reason=FinishReason.TOOL_CALLS if calls else FinishReason.STOP,
        model_name=str(
            chat.attributes.get(n.RESPONSE_MODEL) or chat.attributes.get(n.REQUEST_MODEL) or ""
        ),
    )


def _outcome(span: SpanData) -> ToolOutcome:
    """An ``execute_tool`` span as the tool call's outcome (a failed one with its exception)."""
    attributes = span.attributes
    raised = next((e for e in span.events if e.name == "exception"), None)
    exception = None
    if raised is not None:
        exception = ErrorInfo(
            type=str(raised.attributes.get(n.EXCEPTION_TYPE, "Error")),
            message=str(raised.attributes.get(n.EXCEPTION_MESSAGE, "")),
            traceback=str(raised.attributes.get(n.EXCEPTION_STACKTRACE) or "") or None,
        )
    result = attributes.get(n.TOOL_CALL_RESULT)
    return ToolOutcome(
        call_id=str(attributes.get(n.TOOL_CALL_ID) or span.span_id),
        name=str(attributes.get(n.TOOL_NAME) or attributes.get(n.OI_TOOL_NAME) or span.name),
        arguments=_arguments(attributes.get(n.TOOL_CALL_ARGUMENTS)),
        status=_outcome_status(span),
        content=str(result if result is not None else span.status_message or ""),
        duration=span.duration_ns / 1e9,
        started_at=span.start_ns / 1e9,
        exception=exception,
    )


def _outcome_status(span: SpanData) -> OutcomeStatus:
    """How the call ended: as our span says it (a retry, a denial), else by the span's status."""
    said = span.attributes.get(n.TOOL_STATUS)
    if said in get_args(OutcomeStatus):
        return cast(OutcomeStatus, said)
    return "error" if span.is_error else "ok"


def _arguments(value: object) -> dict[str, JsonValue]:
    """A call's arguments: the JSON object the span holds (anything else: none)."""
    if isinstance(value, dict):
        return value
    try:
        found = loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def _status(trace: Trace, attributes: dict[str, object]) -> ExecutionStatus:
    """The run span's status, else failed when a root span failed, else completed."""
    try:
        return ExecutionStatus(str(attributes[n.RUN_STATUS]))
    except (KeyError, ValueError):
        failed = trace.status() == "failed"
        return ExecutionStatus.FAILED if failed else ExecutionStatus.COMPLETED


def _stop_reason(attributes: dict[str, object]) -> StopReason | None:
    try:
        return StopReason(str(attributes[n.RUN_STOP_REASON]))
    except (KeyError, ValueError):
        return None
