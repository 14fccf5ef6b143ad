"""The run observer that turns the loop's events into the span tree of DESIGN §5.

One `SpanObserver` serves one execution. The loop calls it after things happen, with wall-clock
start times and durations, so every span is created with explicit start and end times and an
explicit parent: the run and step spans are kept here, and nothing depends on the current OTel
context surviving the loop's yields. Attribute keys come from `workbench.telemetry.names`.
A failure here never breaks the run: the loop's `Observers` logs it and goes on.

Redaction happens here, once, as each span is made: every span name and string attribute (a hook's
command line, a tool or agent name, ids a model sent) passes the redactor, and content is redacted
by its encoder. So the spans in memory, the OTLP export, the files and the DataFrames all carry
the same redacted text: no path out can skip it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.messages import Message, ModelResponse
from workbench.records import (
    HookTiming,
    PhaseEvent,
    RunObserver,
    StepContext,
    StepRecord,
    ToolOutcome,
)
from workbench.redact import Redactor
from workbench.state import AgentState, ExecutionStatus, Phase, TraceRef
from workbench.telemetry import names as n
from workbench.telemetry.content import ContentEncoder

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ["Instruments", "SpanObserver"]

Attributes = dict[str, Any]

_SETTINGS = {
    "temperature": n.REQUEST_TEMPERATURE,
    "top_p": n.REQUEST_TOP_P,
    "max_tokens": n.REQUEST_MAX_TOKENS,
    "seed": n.REQUEST_SEED,
    "stop": n.REQUEST_STOP_SEQUENCES,
    "stream": n.REQUEST_STREAM,
}
_TOOL_ERRORS = {"error": n.ERROR_TOOL, "retry": n.ERROR_TOOL_RETRY, "denied": n.ERROR_TOOL_DENIED}


@dataclass(frozen=True)
class Instruments:
    """What an observer needs from its `Telemetry`."""

    tracer: Tracer
    redactor: Redactor
    capture_content: bool


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class SpanObserver(RunObserver):
    """Builds the spans of one execution from the loop's callbacks."""

    def __init__(
        self,
        instruments: Instruments,
        provider: str | None,
        model_name: str,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._clock = clock
        self._tracer = instruments.tracer
        self._redact = instruments.redactor.text
        # names and ids repeat from span to span: each distinct one is scanned once per execution
        self._text = functools.lru_cache(maxsize=1024)(instruments.redactor.text)
        self._content = (
            ContentEncoder(instruments.redactor) if instruments.capture_content else None
        )
        self._provider = provider
        self._model_name = model_name
        self._base: Attributes = {}
        self._run: Span | None = None
        self._run_ctx: Context | None = None
        self._run_start = 0
        self._step: Span | None = None
        self._step_ctx: Context | None = None
        self._step_index = 0
        self._step_attrs: Attributes = {}
        self._snapshot: StepContext | None = None
        self._ref: TraceRef | None = None

    # -- the run --------------------------------------------------------------------------------

    def run_started(self, state: AgentState) -> None:
        """Open the run span; link it to the execution this one continues, if any."""
        self._run_start = self._clock()
        self._base = {n.RUN_ID: state.run_id, n.EXECUTION_ID: state.execution_id}
        if state.parent_run_id is not None:
            self._base[n.PARENT_RUN_ID] = state.parent_run_id
        attributes = {
            **self._base,
            n.STEP_INDEX: state.step,
            n.OPERATION: n.OP_INVOKE_AGENT,
            n.AGENT_NAME: state.agent_name,
            n.CONVERSATION_ID: _conversation_id(state),
            n.REQUEST_MODEL: self._model_name,
        }
        if self._provider is not None:
            attributes[n.PROVIDER] = self._provider
        if state.rerun_of is not None:
            attributes[n.RERUN_OF] = state.rerun_of.run_id
            attributes[n.RERUN_STEP] = state.rerun_of.step
            attributes[n.RERUN_SNAPSHOT_ID] = state.rerun_of.snapshot_id
        self._run = self._tracer.start_span(
            self._text(f"{n.SPAN_RUN} {state.agent_name}"),
            kind=self._trace.SpanKind.INTERNAL,
            attributes=self._clean(attributes),
            links=self._links(state),
            start_time=self._run_start,
        )
        self._run_ctx = self._trace.set_span_in_context(self._run)
        context = self._run.get_span_context()
        self._ref = TraceRef(
            trace_id=self._trace.format_trace_id(context.trace_id),
            span_id=self._trace.format_span_id(context.span_id),
            run_id=state.run_id,
            execution_id=state.execution_id,
        )

    def trace_context(self) -> TraceRef | None:
        """The execution's trace and run span, kept in the state for a later resume to link."""
        return self._ref

    def run_ended(self, state: AgentState) -> None:
        """Close any open step span, then the run span with the run's totals and outcome."""
        if self._run is None:
            return
        end = self._clock()
        if self._step is not None:
            self._step.end(end_time=end)
            self._step = None
        run = self._run
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
        if state.stop_reason is not None:
            run.set_attribute(n.RUN_STOP_REASON, state.stop_reason.value)
        if state.status is ExecutionStatus.PAUSED:
            pending = [self._text(p.call_id) for p in state.pending]
            run.set_attribute(n.RUN_PENDING, pending)
            correlation = {**self._base, n.STEP_INDEX: state.step, n.RUN_PENDING: pending}
            run.add_event(n.EVENT_PAUSED, correlation, timestamp=end)
        if state.error is not None:
            correlation = {**self._base, n.STEP_INDEX: state.step}
            self._fail(run, state.error.type, state.error.message, correlation, end)
        run.end(end_time=end)
        self._run = None

    # -- steps and phases -----------------------------------------------------------------------

    def step_started(self, snapshot: StepContext) -> None:
        """Keep the snapshot; the step span opens when PREPARE ends and its start is known."""
        self._snapshot = snapshot

    def phase_ended(self, event: PhaseEvent, started_at: float) -> None:
        """PREPARE opens the step span; PREPARE and CONTINUATION get their own spans."""
        parent: Context | None
        if event.phase is Phase.PREPARE:
            snapshot = self._snapshot
            if snapshot is None or snapshot.step != event.step:
                self._stopped_before_step(event, started_at)
                return
            start = _ns(started_at)
            parent = self._open_step(event.step, start, snapshot)
            name = n.SPAN_PREPARE
        elif event.phase is Phase.CONTINUATION:
            start = _ns(started_at)
            parent = self._ensure_step(event.step, start)
            name = n.SPAN_CONTINUATION
        else:
            return
        span = self._tracer.start_span(
            name, context=parent, attributes=self._step_attrs, start_time=start
        )  # the step's attributes were cleaned when the step opened
        span.end(end_time=start + _ns(event.duration))

    def step_ended(self, record: StepRecord) -> None:
        """Close the step span with its status, tokens and timing breakdown."""
        self._ensure_step(record.index, _ns(record.started_at))
        step = self._step
        assert step is not None
        timing = record.timing
        attributes: Attributes = {
            n.STEP_STATUS: record.status.value,
            n.STEP_INPUT_TOKENS: record.usage.input_tokens,
            n.STEP_OUTPUT_TOKENS: record.usage.output_tokens,
            n.STEP_TOOL_CALLS: len(record.tool_outcomes),
            n.TIMING_PREPARE: timing.prepare,
            n.TIMING_INFERENCE: timing.inference,
            n.TIMING_TOOLS: timing.tools,
            n.TIMING_HOOKS: timing.hooks,
            n.TIMING_CONTINUATION: timing.continuation,
            n.TIMING_TELEMETRY: timing.telemetry,
        }
        if timing.time_to_first_token is not None:
            attributes[n.TIMING_TTFT] = timing.time_to_first_token
        if record.stop_reason is not None:
            attributes[n.STEP_STOP_REASON] = record.stop_reason.value
        step.set_attributes(attributes)
        step.end(end_time=self._clock())
        self._step = None
        self._snapshot = None

    # -- model, tools, hooks --------------------------------------------------------------------

    def model_called(
        self,
        step: int,
        request_messages: tuple[Message, ...],
        response: ModelResponse | None,
        started_at: float,
        duration: float,
        error: BaseException | None,
    ) -> None:
        """One ``chat {model}`` span with request settings, response, usage and content."""
        start = _ns(started_at)
        parent = self._ensure_step(step, start)
        snapshot = self._snapshot
        model = snapshot.model_name if snapshot is not None else self._model_name
        attributes = {**self._step_attrs, n.OPERATION: n.OP_CHAT, n.REQUEST_MODEL: model}
        if self._provider is not None:
            attributes[n.PROVIDER] = self._provider
        if snapshot is not None and snapshot.model_settings:
            _add_settings(attributes, snapshot.model_settings)
        if response is not None:
            _add_response(attributes, response)
        attributes = self._clean(attributes)
        if self._content is not None:  # redacted by the encoder
            self._add_content(attributes, request_messages, response)
        span = self._tracer.start_span(
            self._text(f"{n.SPAN_CHAT} {model}"),
            context=parent,
            kind=self._trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=start,
        )
        ttft = response.time_to_first_token if response is not None else None
        if ttft is not None:
            span.add_event(n.EVENT_FIRST_TOKEN, self._step_attrs, timestamp=start + _ns(ttft))
        end = start + _ns(duration)
        if error is not None:
            self._fail(span, type(error).__name__, str(error), self._step_attrs, end)
        span.end(end_time=end)

    def tool_called(self, step: int, outcome: ToolOutcome, started_at: float) -> None:
        """One ``execute_tool {tool}`` span; retries, errors and denials are marked as errors."""
        start = _ns(started_at)
        parent = self._ensure_step(step, start)
        attributes = {
            **self._step_attrs,
            n.OPERATION: n.OP_EXECUTE_TOOL,
            n.TOOL_NAME: outcome.name,
            n.TOOL_CALL_ID: outcome.call_id,
            n.TOOL_TYPE: n.TOOL_TYPE_FUNCTION,
            n.TOOL_STATUS: outcome.status,
        }
        attributes = self._clean(attributes)
        if self._content is not None:  # redacted by the encoder
            attributes[n.TOOL_CALL_ARGUMENTS] = self._content.arguments(outcome.arguments)
            if outcome.status != "pending":
                attributes[n.TOOL_CALL_RESULT] = self._content.result(outcome.content)
        span = self._tracer.start_span(
            self._text(f"{n.SPAN_TOOL} {outcome.name}"),
            context=parent,
            attributes=attributes,
            start_time=start,
        )
        end = start + _ns(outcome.duration)
        error_type = _TOOL_ERRORS.get(outcome.status)
        if error_type is not None:
            self._fail(span, error_type, outcome.content, self._step_attrs, end)
        elif outcome.status == "pending":
            span.add_event(n.EVENT_TOOL_PENDING, self._step_attrs, timestamp=end)
        span.end(end_time=end)

    def hook_called(
        self, step: int, timing: HookTiming, started_at: float, error: str | None
    ) -> None:
        """One ``workbench.hook {event}`` span, under the step if one is open, else the run."""
        start = _ns(started_at)
        in_step = self._step is not None and step == self._step_index
        parent = self._step_ctx if in_step else self._run_ctx
        correlation = self._step_attrs if in_step else {**self._base, n.STEP_INDEX: step}
        attributes = {**correlation, n.HOOK_EVENT: timing.event, n.HOOK_NAME: timing.hook}
        span = self._tracer.start_span(
            self._text(f"{n.SPAN_HOOK} {timing.event}"),
            context=parent,
            attributes=self._clean(attributes),
            start_time=start,
        )
        end = start + _ns(timing.duration)
        if error is not None:
            self._fail(span, n.ERROR_HOOK, error, correlation, end)
        span.end(end_time=end)

    # -- helpers --------------------------------------------------------------------------------

    def _clean(self, attributes: Attributes) -> Attributes:
        """The attributes with every string (and string in a sequence) redacted."""
        return {key: self._clean_value(value) for key, value in attributes.items()}

    def _clean_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, list | tuple):
            return tuple(self._text(v) if isinstance(v, str) else v for v in value)
        return value

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

    def _open_step(self, index: int, start: int, snapshot: StepContext | None) -> Context:
        """Open the step span; its correlation ids become those of the spans under it."""
        if self._step is not None:
            self._step.end(end_time=start)
        self._step_index = index
        self._step_attrs = self._clean({**self._base, n.STEP_INDEX: index})
        if snapshot is not None:
            self._step_attrs[n.SNAPSHOT_ID] = snapshot.id
            attributes = {**self._step_attrs, n.STEP_MESSAGE_COUNT: snapshot.message_count}
            budget = snapshot.budget
            if budget.steps_left is not None:
                attributes[n.BUDGET_STEPS_LEFT] = budget.steps_left
            if budget.tokens_left is not None:
                attributes[n.BUDGET_TOKENS_LEFT] = budget.tokens_left
            if budget.seconds_left is not None:
                attributes[n.BUDGET_SECONDS_LEFT] = budget.seconds_left
        else:
            attributes = {**self._step_attrs, n.STEP_RESUMED: True}
        self._step = self._tracer.start_span(
            f"{n.SPAN_STEP} {index}", context=self._run_ctx, attributes=attributes, start_time=start
        )
        self._step_ctx = context = self._trace.set_span_in_context(self._step)
        return context

    def _ensure_step(self, index: int, start: int) -> Context | None:
        """The step span's context, opening the span if the step began in a paused execution.

        Such a step (a resumed one) starts with its first recorded activity.
        """
        if self._step is None or self._step_index != index:
            return self._open_step(index, start, None)
        return self._step_ctx

    def _stopped_before_step(self, event: PhaseEvent, started_at: float) -> None:
        """A stop condition ended the run in PREPARE, before a new step opened."""
        if self._run is None:
            return
        state = event.state
        attributes = {**self._base, n.STEP_INDEX: event.step}
        if state.stop_reason is not None:
            attributes[n.RUN_STOP_REASON] = state.stop_reason.value
        self._run.add_event(n.EVENT_STOPPED, attributes, timestamp=_ns(started_at + event.duration))

    def _add_content(
        self, attributes: Attributes, messages: tuple[Message, ...], response: ModelResponse | None
    ) -> None:
        assert self._content is not None
        instructions, attributes[n.INPUT_MESSAGES] = self._content.request(messages)
        if instructions is not None:
            attributes[n.SYSTEM_INSTRUCTIONS] = instructions
        if response is not None:
            attributes[n.OUTPUT_MESSAGES] = self._content.response(response)

    def _fail(
        self, span: Span, error_type: str, message: str, correlation: Attributes, at: int
    ) -> None:
        """Mark a span failed: ``error.type``, ERROR status and an exception event, redacted."""
        text = self._redact(message)
        span.set_attribute(n.ERROR_TYPE, error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, text[:500]))
        span.add_event(
            n.EVENT_EXCEPTION,
            {**correlation, n.EXCEPTION_TYPE: error_type, n.EXCEPTION_MESSAGE: text},
            timestamp=at,
        )


def _add_settings(attributes: Attributes, settings: Mapping[str, Any]) -> None:
    for key, name in _SETTINGS.items():
        value = settings.get(key)
        if value is not None:
            attributes[name] = tuple(value) if isinstance(value, list) else value


def _add_response(attributes: Attributes, response: ModelResponse) -> None:
    usage = response.usage
    attributes[n.RESPONSE_FINISH_REASONS] = (response.finish_reason.value,)
    attributes[n.USAGE_INPUT_TOKENS] = usage.input_tokens
    attributes[n.USAGE_OUTPUT_TOKENS] = usage.output_tokens
    if response.model_name:
        attributes[n.RESPONSE_MODEL] = response.model_name
    if response.response_id:
        attributes[n.RESPONSE_ID] = response.response_id
    if response.time_to_first_token is not None:
        attributes[n.RESPONSE_TIME_TO_FIRST_CHUNK] = response.time_to_first_token


def _conversation_id(state: AgentState) -> str:
    """The conversation a run belongs to: its `Session` when it is one's execution, else itself."""
    session = state.metadata.get("session_id")
    return session if isinstance(session, str) and session else state.run_id
