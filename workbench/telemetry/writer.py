"""The one path from step records to spans, for live runs and stored ones alike.

The OpenTelemetry SDK freezes a span once, when it ends, into the `ReadableSpan` every exporter
reads. The same holds here one level up: a step's spans (``workbench.step`` and its prepare,
chat, tool, hook and continuation children) are made from its frozen `StepRecord` when the step
ends, with the times the record carries. The live `SpanObserver` calls `SpanWriter.write_step`
at ``step_ended``; ``export``/``push`` of a stored run call it with the stored records
(`workbench.telemetry.rebuild`). Only the run span is opened early, at the start of an execution,
because its trace id is what the notebook shows while the run goes on.

Which hook spans hang under the run span rather than the step: those that fire before a step
opens (``SessionStart``, ``UserPromptSubmit``, ``PreCompact``) and those that ran after their
step's record was closed (a ``SessionEnd`` after a stop between steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.messages import Message, ModelResponse
from workbench.records import HookTiming, StepContext, StepRecord, ToolOutcome
from workbench.redact import Redactor
from workbench.state import AgentState, ErrorInfo, ExecutionStatus, Phase, TraceRef
from workbench.telemetry import names as n
from workbench.telemetry._chosen import chosen_ids
from workbench.telemetry.attributes import (
    Attributes,
    add_response,
    add_settings,
    dumps_json,
    step_attributes,
)
from workbench.telemetry.content import ContentEncoder, ContentStore
from workbench.traceids import new_span_id, new_trace_id, tool_span_id

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ["BEFORE_STEP", "Instruments", "SpanWriter"]

BEFORE_STEP = frozenset({"SessionStart", "UserPromptSubmit", "PreCompact"})
"""Hook events that fire before a step opens: their spans are children of the run span."""

_TOOL_ERRORS = {"error": n.ERROR_TOOL, "retry": n.ERROR_TOOL_RETRY, "denied": n.ERROR_TOOL_DENIED}


@dataclass(frozen=True)
class Instruments:
    """What a span writer needs from its `Telemetry`."""

    tracer: Tracer
    redactor: Redactor
    capture_content: bool
    conventions: n.Conventions = "current"
    content_store: ContentStore | None = None
    """Where conversations are kept once (chat spans then refer to them); None writes the text."""


def ns(seconds: float) -> int:
    """Wall-clock seconds (`time.time()`) as the nanoseconds spans are stamped with."""
    return int(seconds * 1e9)


def step_bounds(record: StepRecord) -> tuple[float, float]:
    """When a step began and ended, from its record.

    It begins when its first phase began (PREPARE, or the first activity of a step resumed in
    another execution) and ends when its record was closed.
    """
    starts = [at for _, at in record.phase_starts]
    starts += [o.started_at for o in record.tool_outcomes if o.started_at is not None]
    start = min(starts, default=record.started_at - record.timing.prepare)
    end = record.ended_at if record.ended_at is not None else start + record.timing.total
    return start, max(start, end)


_ENCODED = frozenset(
    {
        n.INPUT_MESSAGES,
        n.OUTPUT_MESSAGES,
        n.SYSTEM_INSTRUCTIONS,
        n.TOOL_CALL_ARGUMENTS,
        n.TOOL_CALL_RESULT,
        n.TOOL_DEFINITIONS,
    }
)
"""Attributes the content encoder writes, already redacted."""


class SpanWriter:
    """Writes the spans of one execution: its run span, then each step's spans from its record."""

    def __init__(self, instruments: Instruments, provider: str | None, model_name: str) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer = instruments.tracer
        self._redact = instruments.redactor.text
        self._content = (
            ContentEncoder(instruments.redactor) if instruments.capture_content else None
        )
        self._provider = provider
        self._model_name = model_name
        self._conventions = instruments.conventions
        self._content_store = instruments.content_store
        self._base: Attributes = {}
        self._conversation = ""
        self._run: Span | None = None
        self._run_ctx: Context | None = None
        self._last_status: ExecutionStatus | None = None
        self._opening: AgentState | None = None
        self._first_messages: Sequence[Message] = ()
        self._last_response: ModelResponse | None = None
        self._redactor = instruments.redactor
        self._encoded_definitions: dict[tuple[str, ...], str] = {}
        self._end = 0.0
        """When the last thing recorded ended (seconds): the run span ends there."""
        self.ref: TraceRef | None = None
        """The execution's trace and run span, once the run span is open."""

    def _start(self, name: str, **options: Any) -> Span:
        """Start a span with its name and every string attribute redacted, as it is made.

        Every path out (memory, OTLP, files, DataFrames) reads these spans, so redacting here is
        redacting everywhere; captured content is redacted by its encoder instead.
        """
        attributes = options.pop("attributes", None) or {}
        clean = {
            key: self._redact(value) if isinstance(value, str) and key not in _ENCODED else value
            for key, value in attributes.items()
        }
        return self._tracer.start_span(self._redact(name), attributes=clean, **options)

    # -- the run --------------------------------------------------------------------------------

    def begin(self, state: AgentState, ids: tuple[str, str] | None = None) -> TraceRef:
        """Fix the execution's trace id and run span id (hex; random unless ``ids`` says).

        The run span itself opens at the execution's first recorded activity (`write_step`,
        `write_hook`, or at the latest `close_run`), so that its start comes from the records,
        live and stored alike; its ids are known from here on.
        """
        trace_id, span_id = ids if ids is not None else (new_trace_id(), new_span_id())
        self._opening = state
        self.ref = TraceRef(
            trace_id=trace_id,
            span_id=span_id,
            run_id=state.run_id,
            execution_id=state.execution_id,
        )
        self._base = {n.RUN_ID: state.run_id, n.EXECUTION_ID: state.execution_id}
        session = state.metadata.get("session_id")  # a session's runs are one conversation
        self._conversation = session if isinstance(session, str) and session else state.run_id
        if state.parent_run_id is not None:
            self._base[n.PARENT_RUN_ID] = state.parent_run_id
        return self.ref

    def _open_run(self, start: float) -> None:
        """Open the run span at ``start`` (seconds) under the ids `begin` fixed."""
        self._end = max(self._end, start)
        if self._run is not None or self._opening is None or self.ref is None:
            return
        state = self._opening
        attributes = {
            **self._base,
            n.STEP_INDEX: state.step,
            n.OPERATION: n.OP_INVOKE_AGENT,
            n.AGENT_NAME: state.agent_name,
            n.CONVERSATION_ID: self._conversation,
            n.REQUEST_MODEL: self._model_name,
        }
        if self._provider is not None:
            attributes[n.PROVIDER] = self._provider
        # the keys are the user's words too: redacted like the values (which `_start` redacts)
        attributes |= n.metadata_attributes({self._redact(k): v for k, v in state.metadata.items()})
        if state.rerun_of is not None:
            attributes[n.RERUN_OF] = state.rerun_of.run_id
            attributes[n.RERUN_STEP] = state.rerun_of.step
            attributes[n.RERUN_SNAPSHOT_ID] = state.rerun_of.snapshot_id
        with chosen_ids(self._tracer, (self.ref.trace_id, self.ref.span_id)):
            self._run = self._start(
                f"{n.SPAN_RUN} {state.agent_name}",
                context=self._calling_tool(state),
                kind=self._trace.SpanKind.INTERNAL,
                attributes=n.renamed(attributes, self._conventions),
                links=self._links(state),
                start_time=ns(start),
            )
        self._run_ctx = self._trace.set_span_in_context(self._run)

    def close_run(self, state: AgentState, fallback: float) -> None:
        """End the run span with the execution's totals and outcome.

        It ends with the last thing recorded, or at ``fallback`` (seconds) if nothing was.
        """
        if self._run is None:
            self._open_run(fallback)
        run = self._run
        if run is None:
            return
        end = ns(self._end)
        usage = state.usage
        run.set_attributes(
            {
                n.RUN_STATUS: state.status.value,
                n.RUN_STEPS: state.step,
                n.USAGE_TOTAL_INPUT: usage.input_tokens,
                n.USAGE_TOTAL_OUTPUT: usage.output_tokens,
                n.USAGE_TOTAL_TOKENS: usage.total_tokens,
                n.USAGE_TOTAL_REQUESTS: usage.requests,
            }
        )
        if usage.cost is not None:
            run.set_attribute(n.USAGE_TOTAL_COST, usage.cost)
        run.set_attributes(self._agent_outcome())
        correlation = {**self._base, n.STEP_INDEX: state.step}
        if state.stop_reason is not None:
            run.set_attribute(n.RUN_STOP_REASON, state.stop_reason.value)
            if self._last_status is not state.status:
                # a stop condition ended the run in PREPARE, before the next step opened
                stopped = {**correlation, n.RUN_STOP_REASON: state.stop_reason.value}
                run.add_event(n.EVENT_STOPPED, stopped, timestamp=end)
        if state.status is ExecutionStatus.PAUSED:
            pending = [p.call_id for p in state.pending]
            run.set_attribute(n.RUN_PENDING, pending)
            run.add_event(n.EVENT_PAUSED, {**correlation, n.RUN_PENDING: pending}, timestamp=end)
        if state.error is not None:
            self._raised(run, state.error, correlation, end)
        run.end(end_time=end)
        self._run = None

    # -- a step ---------------------------------------------------------------------------------

    def write_step(self, record: StepRecord, snapshot: StepContext | None) -> None:
        """All the spans of one step, from its record (and its snapshot, when it has one)."""
        self._last_status = record.status
        if record.messages_in and not self._first_messages:
            self._first_messages = record.messages_in
        if record.response is not None:
            self._last_response = record.response
        start, end = step_bounds(record)
        hooks = record.timing.per_hook
        self._open_run(min([start, *(h.started_at for h in hooks if h.started_at is not None)]))
        self._end = max([end, *(h.started_at + h.duration for h in hooks if h.started_at)])
        step_attrs = {**self._base, n.STEP_INDEX: record.index}
        if snapshot is not None:
            step_attrs[n.SNAPSHOT_ID] = snapshot.id
        step = self._start(
            f"{n.SPAN_STEP} {record.index}",
            context=self._run_ctx,
            attributes={**step_attrs, **step_attributes(record, snapshot)},
            start_time=ns(start),
        )
        self._waited(step, record)
        parent = self._trace.set_span_in_context(step)
        phases = dict(reversed(record.phase_starts))  # the first start of each phase
        if Phase.PREPARE in phases:
            self._phase(
                n.SPAN_PREPARE, parent, step_attrs, phases[Phase.PREPARE], record.timing.prepare
            )
        if record.model_started_at is not None:
            self._chat(parent, step_attrs, record, snapshot)
        tools_start = phases.get(Phase.TOOLS, start)
        descriptions = (
            {d.name: d.description for d in snapshot.tool_definitions} if snapshot else {}
        )
        for outcome in record.tool_outcomes:
            description = descriptions.get(outcome.name)
            self._tool(parent, step_attrs, outcome, tools_start, description)
        if Phase.CONTINUATION in phases:
            continuation = phases[Phase.CONTINUATION]
            self._phase(
                n.SPAN_CONTINUATION, parent, step_attrs, continuation, record.timing.continuation
            )
        for hook in record.timing.per_hook:
            late = hook.started_at is not None and hook.started_at >= end
            if hook.event in BEFORE_STEP or late:
                self.write_hook(record.index, hook, start)
            else:
                self._hook(parent, step_attrs, hook, start)
        step.end(end_time=ns(end))

    def _waited(self, step: Span, record: StepRecord) -> None:
        """A ``workbench.wait`` event on the step's span for each wait on the person it records.

        On the step's span, though a wait before the step began is outside it: the SDK keeps a
        span's last 128 events, and a run stepped through in more presses than that would lose
        its first waits on its run span. A step holds a few (more only when stepped into a
        sub-run, whose own step spans carry those too).
        """
        for wait in record.waits:
            attributes = {**self._base, n.WAIT_SECONDS: wait.duration}
            if wait.kind == "drawing":
                attributes[n.WAIT_DRAWING] = True
            step.add_event(n.EVENT_WAIT, attributes, timestamp=ns(wait.started_at))

    def write_hook(self, step: int, hook: HookTiming, fallback: float) -> None:
        """A hook span under the run span (a hook that ran outside any open step)."""
        start = hook.started_at if hook.started_at is not None else fallback
        self._open_run(start)
        self._end = max(self._end, start + hook.duration)
        self._hook(self._run_ctx, {**self._base, n.STEP_INDEX: step}, hook, fallback)

    # -- the spans under a step -----------------------------------------------------------------

    def _phase(
        self, name: str, parent: Context, attributes: Attributes, start: float, duration: float
    ) -> None:
        span = self._start(name, context=parent, attributes=attributes, start_time=ns(start))
        span.end(end_time=ns(start) + ns(duration))

    def _chat(
        self,
        parent: Context,
        correlation: Attributes,
        record: StepRecord,
        snapshot: StepContext | None,
    ) -> None:
        """The step's ``chat {model}`` span: one per try, when its client asked again.

        Each failed try is a failed chat span of what the last was sent, with its error and
        the try's number (`names.MODEL_TRY`); the last is the one with the response.
        """
        assert record.model_started_at is not None
        tries = record.tries
        for number, tried in enumerate(record.failed_tries, 1):
            failed = record.model_copy(
                update={
                    "response": None,
                    "model_started_at": tried.started_at,
                    "model_duration": tried.duration,
                    "model_error": tried.error,
                }
            )
            self._chat_span(parent, {**correlation, n.MODEL_TRY: number}, failed, snapshot)
        which = {n.MODEL_TRY: tries} if tries > 1 else {}
        self._chat_span(parent, {**correlation, **which}, record, snapshot)

    def _chat_span(
        self,
        parent: Context,
        correlation: Attributes,
        record: StepRecord,
        snapshot: StepContext | None,
    ) -> None:
        """One ``chat {model}`` span with request settings, response, usage and content."""
        assert record.model_started_at is not None
        model = snapshot.model_name if snapshot is not None else self._model_name
        attributes = {
            **correlation,
            n.OPERATION: n.OP_CHAT,
            n.REQUEST_MODEL: model,
            n.CONVERSATION_ID: self._conversation,
        }
        provider = snapshot.provider if snapshot is not None else None
        if provider or self._provider:
            attributes[n.PROVIDER] = provider or self._provider
        if snapshot is not None:
            add_settings(attributes, snapshot.model_settings)
            if snapshot.server_address is not None:
                attributes[n.SERVER_ADDRESS] = snapshot.server_address
                if snapshot.server_port is not None:
                    attributes[n.SERVER_PORT] = snapshot.server_port
        response = record.response
        if response is not None:
            add_response(attributes, response)
        if self._content is not None:
            self._add_content(attributes, record)
            if snapshot is not None and record.tools_offered:
                attributes[n.TOOL_DEFINITIONS] = self._definitions(snapshot, record.tools_offered)
        start = ns(record.model_started_at)
        span = self._start(
            f"{n.SPAN_CHAT} {model}",
            context=parent,
            kind=self._trace.SpanKind.CLIENT,
            attributes=n.renamed(attributes, self._conventions),
            start_time=start,
        )
        ttft = response.time_to_first_token if response is not None else None
        if ttft is not None:
            span.add_event(n.EVENT_FIRST_TOKEN, correlation, timestamp=start + ns(ttft))
        end = start + ns(record.model_duration)
        error = record.model_error
        if error is not None:
            self._raised(span, error, correlation, end)
        span.end(end_time=end)

    def _tool(
        self,
        parent: Context,
        correlation: Attributes,
        outcome: ToolOutcome,
        fallback: float,
        description: str | None,
    ) -> None:
        """One ``execute_tool {tool}`` span; retries, errors and denials are marked as errors."""
        attributes = {
            **correlation,
            n.OPERATION: n.OP_EXECUTE_TOOL,
            n.TOOL_NAME: outcome.name,
            n.TOOL_CALL_ID: outcome.call_id,
            n.TOOL_TYPE: n.TOOL_TYPE_FUNCTION,
            n.TOOL_STATUS: outcome.status,
            n.CONVERSATION_ID: self._conversation,
        }
        if description:
            attributes[n.TOOL_DESCRIPTION] = self._redact(description)
        if outcome.replayed:
            attributes[n.TOOL_REPLAYED] = True
        if self._content is not None:
            attributes[n.TOOL_CALL_ARGUMENTS] = self._content.arguments(outcome.arguments)
            if outcome.status == "ok":  # a failed call has no result, only its error
                attributes[n.TOOL_CALL_RESULT] = self._content.result(outcome.content)
        start = ns(outcome.started_at if outcome.started_at is not None else fallback)
        assert self.ref is not None
        span_id = tool_span_id(self.ref.trace_id, self.ref.run_id, outcome.call_id)
        with chosen_ids(self._tracer, (self.ref.trace_id, span_id)):  # sub-runs name it already
            span = self._start(
                f"{n.SPAN_TOOL} {outcome.name}",
                context=parent,
                attributes=attributes,
                start_time=start,
            )
        end = start + ns(outcome.duration)
        error_type = _TOOL_ERRORS.get(outcome.status)
        if outcome.exception is not None and error_type is not None:
            self._raised(span, outcome.exception, correlation, end)
        elif error_type is not None:
            self._failed(span, error_type, outcome.content, correlation, end)
        elif outcome.status == "pending":
            span.add_event(n.EVENT_TOOL_PENDING, correlation, timestamp=end)
        span.end(end_time=end)

    def _hook(
        self, parent: Context | None, correlation: Attributes, hook: HookTiming, fallback: float
    ) -> None:
        """One ``workbench.hook {event}`` span."""
        attributes = {**correlation, n.HOOK_EVENT: hook.event, n.HOOK_NAME: hook.hook}
        start = ns(hook.started_at if hook.started_at is not None else fallback)
        span = self._start(
            f"{n.SPAN_HOOK} {hook.event}", context=parent, attributes=attributes, start_time=start
        )
        end = start + ns(hook.duration)
        if hook.exception is not None:
            self._raised(span, hook.exception, correlation, end)
        elif hook.error is not None:
            self._failed(span, n.ERROR_HOOK, hook.error, correlation, end)
        span.end(end_time=end)

    # -- helpers --------------------------------------------------------------------------------

    def _calling_tool(self, state: AgentState) -> Context | None:
        """For a sub-run in its parent's trace: the parent's ``execute_tool`` span, by its id."""
        ref = self.ref
        if state.parent_run_id is None or state.parent_call_id is None or ref is None:
            return None
        if state.trace_id != ref.trace_id:  # a sub-run recorded as a trace of its own
            return None
        trace = self._trace
        parent = trace.SpanContext(
            int(ref.trace_id, 16),
            int(tool_span_id(ref.trace_id, state.parent_run_id, state.parent_call_id), 16),
            is_remote=False,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        )
        context: Context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        return context

    def _links(self, state: AgentState) -> list[Any]:
        ref = state.trace
        if ref is None:
            return []
        trace = self._trace
        context = trace.SpanContext(
            int(ref.trace_id, 16),
            int(ref.span_id, 16),
            is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        )
        reason = "resume" if ref.run_id == state.run_id else "origin"
        attributes = {
            n.LINK_REASON: reason,
            n.RUN_ID: ref.run_id,
            n.EXECUTION_ID: ref.execution_id,
        }
        return [trace.Link(context, attributes)]

    def _definitions(self, snapshot: StepContext, offered: tuple[str, ...]) -> str:
        """The offered tools in the conventions' shape, encoded once per set of tools."""
        encoded = self._encoded_definitions.get(offered)
        if encoded is None:
            chosen = set(offered)
            encoded = self._redact(  # descriptions are text like any other: no secrets leave
                dumps_json(
                    [
                        {
                            "type": "function",
                            "name": d.name,
                            "description": d.description,
                            "parameters": d.parameters,
                        }
                        for d in snapshot.tool_definitions
                        if d.name in chosen
                    ]
                )
            )
            self._encoded_definitions[offered] = encoded
        return encoded

    def _agent_outcome(self) -> Attributes:
        """What the agent was asked and answered, for ``invoke_agent`` (content only if captured).

        The input is the execution's first request without its system messages (those are the
        agent's system instructions); the output and finish reason are its last answer's.
        """
        response = self._last_response
        attributes: Attributes = {}
        if response is not None:
            attributes[n.RESPONSE_FINISH_REASONS] = (response.finish_reason.value,)
        if self._content is None:
            return attributes
        encoder = ContentEncoder(self._redactor)  # its own: the chat spans' cache goes on
        first = self._first_messages
        instructions = encoder.instructions(first)
        if instructions is not None:
            attributes[n.SYSTEM_INSTRUCTIONS] = instructions
        if first:
            attributes[n.INPUT_MESSAGES] = encoder.request([m for m in first if m.role != "system"])
        if response is not None:
            attributes[n.OUTPUT_MESSAGES] = encoder.response(response)
        return attributes

    def _add_content(self, attributes: Attributes, record: StepRecord) -> None:
        assert self._content is not None
        store = self._content_store
        if store is None:
            attributes[n.INPUT_MESSAGES] = self._content.request(record.messages_in)
        else:
            attributes[n.INPUT_MESSAGES_REF] = store.ref(
                *self._content.request_log(record.messages_in)
            )
        if record.response is not None:
            attributes[n.OUTPUT_MESSAGES] = self._content.response(record.response)

    def _raised(self, span: Span, error: ErrorInfo, correlation: Attributes, at: int) -> None:
        """Mark a span failed by an exception, with an ``exception`` event (its stack trace too).

        ``error.type`` is the exception's type, as the conventions ask. A tool, hook or guard
        that raised, a failed model call, a failed sub-run (on the call that started it), the run.
        """
        text = self._redact(error.message)
        span.set_attribute(n.ERROR_TYPE, error.type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, text[:500]))
        event = {**correlation, n.EXCEPTION_TYPE: error.type, n.EXCEPTION_MESSAGE: text}
        if error.traceback is not None:
            event[n.EXCEPTION_STACKTRACE] = self._redact(error.traceback)
        span.add_event(n.EVENT_EXCEPTION, event, timestamp=at)

    def _failed(
        self, span: Span, error_type: str, message: str, correlation: Attributes, at: int
    ) -> None:
        """Mark a span failed without an exception: ``error.type``, ERROR status, redacted.

        A handled failure (a tool's error answer or retry, a denial, a hook's bad answer) is no
        exception, so it gets a ``workbench.failure`` event with its message.
        """
        text = self._redact(message)
        span.set_attribute(n.ERROR_TYPE, error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, text[:500]))
        event = {**correlation, n.ERROR_TYPE: error_type, n.FAILURE_MESSAGE: text}
        span.add_event(n.EVENT_FAILURE, event, timestamp=at)
