"""What a step's record says as span attributes, in the GenAI conventions' names and types.

Functions of records, no tracer: a step span's budget, status, tokens and timing; a request's
settings; a response's finish reason, usage and ids. `SpanWriter` decides which span they go on
and when it opens and ends; the names are `workbench.telemetry.names`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from workbench.messages import ModelResponse
from workbench.records import StepContext, StepRecord
from workbench.telemetry import names as n

Attributes = dict[str, Any]
"""A span's attributes as they are built, before the tracer gets them."""

_SETTINGS: dict[str, tuple[str, type]] = {
    "temperature": (n.REQUEST_TEMPERATURE, float),
    "top_p": (n.REQUEST_TOP_P, float),
    "max_tokens": (n.REQUEST_MAX_TOKENS, int),
    "seed": (n.REQUEST_SEED, int),
    "stop": (n.REQUEST_STOP_SEQUENCES, tuple),
}
"""Each request setting's attribute and the type the conventions give it (a temperature of
``0`` is the double ``0.0``: a backend that types its columns by the first value sees one)."""


def dumps_json(value: Any) -> str:
    """JSON text for an attribute (as the conventions' JSON-valued attributes are sent)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def step_attributes(record: StepRecord, snapshot: StepContext | None) -> Attributes:
    """The step span's own attributes: budget at its start, status, tokens, timing."""
    timing = record.timing
    attributes: Attributes = {}
    if snapshot is not None:
        attributes[n.STEP_MESSAGE_COUNT] = snapshot.message_count
        budget = snapshot.budget
        if budget.steps_left is not None:
            attributes[n.BUDGET_STEPS_LEFT] = budget.steps_left
        if budget.tokens_left is not None:
            attributes[n.BUDGET_TOKENS_LEFT] = budget.tokens_left
        if budget.seconds_left is not None:
            attributes[n.BUDGET_SECONDS_LEFT] = budget.seconds_left
    else:
        attributes[n.STEP_RESUMED] = True
    attributes.update(
        {
            n.STEP_STATUS: record.status.value,
            n.STEP_INPUT_TOKENS: record.usage.input_tokens,
            n.STEP_OUTPUT_TOKENS: record.usage.output_tokens,
            n.STEP_TOOL_CALLS: len(record.tool_outcomes),
            n.TIMING_PREPARE: timing.prepare,
            n.TIMING_INFERENCE: timing.inference,
            n.TIMING_TOOLS: timing.tools,
            n.TIMING_CONTINUATION: timing.continuation,
        }
    )
    # Measured only when something ran: a step with no hook, or a run nothing recorded (no
    # telemetry, no store), has no such time, and a 0 would read as one measured.
    if timing.per_hook:
        attributes[n.TIMING_HOOKS] = timing.hooks
    if timing.telemetry > 0:
        attributes[n.TIMING_TELEMETRY] = timing.telemetry
    if timing.time_to_first_token is not None:
        attributes[n.TIMING_TTFT] = timing.time_to_first_token
    if record.usage.cost is not None:
        attributes[n.STEP_COST] = record.usage.cost
    if record.failed_tries:
        attributes[n.STEP_TRIES] = record.tries
    attributes[n.TOOLS_OFFERED] = record.tools_offered
    if record.tools_hidden:  # which tools a toolset hid this step, and why
        attributes[n.TOOLS_FILTERED] = tuple(f"{name}: {why}" for name, why in record.tools_hidden)
    if record.stop_reason is not None:
        attributes[n.STEP_STOP_REASON] = record.stop_reason.value
    return attributes


def add_settings(attributes: Attributes, settings: Mapping[str, Any]) -> None:
    """The request settings the conventions name, each as the type they give it."""
    for key, (name, kind) in _SETTINGS.items():
        value = settings.get(key)
        if value is not None:
            attributes[name] = _typed(value, kind)
    if settings.get("stream"):  # the conventions' default is no streaming: say only when on
        attributes[n.REQUEST_STREAM] = True


def _typed(value: Any, kind: type) -> Any:
    """``value`` as the conventions' type; as it was when it is not one (the model refuses it)."""
    if kind is tuple:
        return tuple(value) if isinstance(value, (list, tuple)) else (str(value),)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return kind(value)


def add_response(attributes: Attributes, response: ModelResponse) -> None:
    """What the model answered: finish reason, usage (cache and reasoning when any), ids."""
    usage = response.usage
    attributes[n.RESPONSE_FINISH_REASONS] = (response.finish_reason.value,)
    attributes[n.USAGE_INPUT_TOKENS] = usage.input_tokens
    attributes[n.USAGE_OUTPUT_TOKENS] = usage.output_tokens
    if usage.cache_read_tokens:
        attributes[n.USAGE_CACHE_READ_TOKENS] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attributes[n.USAGE_CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attributes[n.USAGE_REASONING_TOKENS] = usage.reasoning_tokens
    if response.model_name:
        attributes[n.RESPONSE_MODEL] = response.model_name
    if response.response_id:
        attributes[n.RESPONSE_ID] = response.response_id
    if response.time_to_first_token is not None:
        attributes[n.RESPONSE_TIME_TO_FIRST_CHUNK] = response.time_to_first_token
