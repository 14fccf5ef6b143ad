"""The snapshot a re-run from a trace starts from, made from the trace's spans alone.

A trace that captured content has, on each model call span, the whole conversation the model was
sent (``gen_ai.input.messages``, with the system messages in it). That is what a `StepContext`
holds for a re-run: `snapshot_from_trace` builds one for a step, so `Agent.rerun_from_trace` is
`Agent.rerun` from it, with no store. The snapshot's state refers to the traced step's span
(`AgentState.trace`), so the new run's span links to it (``workbench.link.reason = origin``),
and ``workbench.rerun.of`` names the traced run (its ``workbench.run.id``, or the trace id of a
foreign trace).
"""

from __future__ import annotations

from typing import Any

from workbench.conditions import Budget
from workbench.errors import StepNotInTrace, TraceLoadError
from workbench.ids import checked_id
from workbench.messages import JsonValue, Message, Usage
from workbench.records import StepContext
from workbench.state import AgentState, ExecutionStatus, Phase, TraceRef
from workbench.telemetry import names as n
from workbench.telemetry.recover import messages_of_chat
from workbench.telemetry.trace import SpanData, Trace, conversation_chats, no_step

__all__ = ["snapshot_from_trace"]

_SETTINGS = {
    n.REQUEST_TEMPERATURE: "temperature",
    n.REQUEST_TOP_P: "top_p",
    n.REQUEST_MAX_TOKENS: "max_tokens",
    n.REQUEST_SEED: "seed",
}


def snapshot_from_trace(trace: Trace, step: int) -> StepContext:
    """The snapshot of ``step`` of a traced run, as a re-run needs it.

    ``step`` is a ``workbench.step.index`` in our traces, else the n-th model call. Raises
    `StepNotInTrace` when the trace has no such step, `TraceLoadError` when it did not capture
    that step's messages.
    """
    chats = conversation_chats(trace)
    numbered = [(c.attributes.get(n.STEP_INDEX, i), c) for i, c in enumerate(chats, start=1)]
    found = [c for index, c in numbered if index == step]
    if not found:
        raise StepNotInTrace(no_step(chats, step))
    chat = found[0]
    messages = request_of(chat)
    if not messages:
        raise TraceLoadError(
            f"step {step} of trace {trace.trace_id} has no captured messages: "
            "record with Telemetry(capture_content=True) to re-run from a trace"
        )
    earlier = [c for index, c in numbered if index < step]
    run = run_span_of(trace, chat)
    run_id = id_of(chat, n.RUN_ID, trace.trace_id, "run id")
    execution_id = id_of(chat, n.EXECUTION_ID, chat.trace_id, "execution id")
    usage = sum((usage_of(c) for c in earlier), Usage())
    origin = _parent(trace, chat) or chat
    state = AgentState(
        run_id=run_id,
        execution_id=execution_id,
        agent_name=str((run.attributes if run else {}).get(n.AGENT_NAME, "agent")),
        status=ExecutionStatus.RUNNING,
        step=step - 1,
        next_phase=Phase.PREPARE,
        messages=messages,
        usage=usage,
        trace=TraceRef(
            trace_id=origin.trace_id,
            span_id=origin.span_id,
            run_id=run_id,
            execution_id=execution_id,
        ),
    )
    return StepContext(
        id=id_of(chat, n.SNAPSHOT_ID, f"span_{chat.span_id}", "snapshot id"),
        run_id=run_id,
        execution_id=execution_id,
        parent_run_id=None,
        step=step,
        model_name=str(
            chat.attributes.get(n.REQUEST_MODEL) or chat.attributes.get(n.OI_MODEL) or "unknown"
        ),
        model_settings=_settings(chat),
        tool_names=(),
        tool_schema_hash="",
        system_prompt_hash=None,
        budget=Budget(
            steps_used=step - 1,
            tokens_used=usage.total_tokens,
            seconds_used=0.0,
            cost_used=None,
        ),
        message_count=len(messages),
        state=state,
    )


def id_of(chat: SpanData, key: str, default: str, what: str) -> str:
    """An id the trace gives (the run's, say): it becomes the re-run's, so it is checked."""
    try:
        return checked_id(str(chat.attributes.get(key) or default), what)
    except ValueError as exc:
        raise TraceLoadError(f"span {chat.span_id} ({key}): {exc}") from None


def request_of(chat: SpanData) -> tuple[Message, ...]:
    """What the model was sent (the span's recovered messages without its answer)."""
    without_answer = {
        k: v
        for k, v in chat.attributes.items()
        if k != n.OUTPUT_MESSAGES and not k.startswith("llm.output_messages.")
    }
    return messages_of_chat(without_answer)


def usage_of(chat: SpanData) -> Usage:
    """The tokens a model call's span says it used (one request; no cost)."""
    tokens_in, tokens_out = n.tokens_of(chat.attributes)
    return Usage(
        input_tokens=int(tokens_in or 0),
        output_tokens=int(tokens_out or 0),
        requests=1,
        cost=None,
    )


def _settings(chat: SpanData) -> dict[str, JsonValue]:
    settings: dict[str, Any] = {}
    for key, name in _SETTINGS.items():
        if key in chat.attributes:
            settings[name] = chat.attributes[key]
    return settings


def _parent(trace: Trace, span: SpanData) -> SpanData | None:
    return next((s for s in trace.spans if s.span_id == span.parent_id), None)


def run_span_of(trace: Trace, chat: SpanData) -> SpanData | None:
    """The ``invoke_agent`` span above the model call, if the trace has one.

    A damaged file can make parents loop (a's parent b, b's parent a): the walk stops at a span
    it has seen.
    """
    by_id = {s.span_id: s for s in trace.spans}
    seen: set[str] = set()
    span: SpanData | None = chat
    while span is not None and span.span_id not in seen:
        if span.attributes.get(n.OPERATION) == n.OP_INVOKE_AGENT:
            return span
        seen.add(span.span_id)
        span = by_id.get(span.parent_id) if span.parent_id else None
    return None
