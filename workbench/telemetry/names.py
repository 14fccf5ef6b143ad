"""Span names and attribute keys: the one table every span the workbench makes is written from.

GenAI keys are the OpenTelemetry GenAI semantic conventions' own (``gen_ai.*``, ``error.type``);
nothing here invents a ``gen_ai.*`` key. What the conventions do not cover lives under
``workbench.*``. Run totals go under ``workbench.usage.*`` on the run span, because backends sum
``gen_ai.usage.*`` over a trace and would count every token twice.

Durations in ``workbench.timing.*`` attributes are seconds (floats), like `workbench.Timing`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import suppress
from typing import Any, Final, Literal

from workbench._json import loads

CONVENTIONS_VERSION: Final = "1.41.0"
"""The OpenTelemetry semantic conventions release whose GenAI names (``gen_ai.*``) are written.

The last release carrying the GenAI conventions in-tree; they now live in their own repository
and keep moving. Where a name changed, `Telemetry(conventions=...)` picks the older one, the
newer one, or both (see `OLDER_NAMES`).
"""

Conventions = Literal["current", "older", "both"]
"""Which GenAI attribute names to write where they changed: this version's, the older ones, or
both (for a backend that reads the older ones while others read the new)."""

# -- span names (the variable part, if any, follows after a space) ------------------------------

SPAN_RUN: Final = "invoke_agent"
"""``invoke_agent {agent name}``: one per execution of a run; the root of its trace."""
SPAN_STEP: Final = "workbench.step"
"""``workbench.step {n}``: one per step (a resumed step gets its own in the resumed trace)."""
SPAN_PREPARE: Final = "workbench.prepare"
SPAN_CHAT: Final = "chat"
"""``chat {model}``: one model call."""
SPAN_HOOK: Final = "workbench.hook"
"""``workbench.hook {event}``: one hook invocation."""
SPAN_TOOL: Final = "execute_tool"
"""``execute_tool {tool}``: one tool call (also calls that were denied or wait for approval)."""
SPAN_CONTINUATION: Final = "workbench.continuation"

# -- GenAI semantic conventions -----------------------------------------------------------------

OPERATION: Final = "gen_ai.operation.name"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_SEED: Final = "gen_ai.request.seed"
REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
REQUEST_STREAM: Final = "gen_ai.request.stream"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_TYPE_FUNCTION: Final = "function"
TOOL_REPLAYED: Final = "workbench.tool.replayed"
"""True on a tool call answered from a recording (``tools="replay"``): nothing ran."""
INPUT_MESSAGES_REF: Final = "workbench.content.input_messages"
"""In memory only: which stored conversation prefix a chat span's input messages are; it is
replaced by ``gen_ai.input.messages`` whenever the span is read or exported."""
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
"""On ``chat``, with captured content: the tools offered, as JSON (they can be long)."""
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

OLDER_INPUT_TOKENS: Final = "gen_ai.usage.prompt_tokens"
OLDER_OUTPUT_TOKENS: Final = "gen_ai.usage.completion_tokens"
OLDER_NAMES: Final = {
    PROVIDER: "gen_ai.system",
    USAGE_INPUT_TOKENS: OLDER_INPUT_TOKENS,
    USAGE_OUTPUT_TOKENS: OLDER_OUTPUT_TOKENS,
}
"""The names these attributes had before (``gen_ai.system`` until 1.37; ``prompt_tokens`` and
``completion_tokens`` until 1.27), for ``Telemetry(conventions="older" | "both")``."""


OI_SPAN_KIND: Final = "openinference.span.kind"
OI_MODEL: Final = "llm.model_name"
OI_INPUT_TOKENS: Final = "llm.token_count.prompt"
OI_OUTPUT_TOKENS: Final = "llm.token_count.completion"
OI_TOOL_NAME: Final = "tool.name"
"""OpenInference's names for what the conventions call ``gen_ai.response.model``,
``gen_ai.usage.{input,output}_tokens`` and ``gen_ai.tool.name`` (a Phoenix trace has only these)."""
OI_AGENT_NAME: Final = "agent.name"
OI_INPUT_VALUE: Final = "input.value"
OI_OUTPUT_VALUE: Final = "output.value"
"""OpenInference's agent name, and a span's input and output (a tool's arguments and result)."""
LLM_REQUEST_TYPE: Final = "llm.request.type"
"""OpenLLMetry's ``chat`` / ``completion`` on a model call (its mid-2025 spans have no
``gen_ai.operation.name``)."""
PYDANTIC_AI_RETRY_CAUSE: Final = "pydantic_ai.tool.retry.cause"
"""Why pydantic-ai sent a tool call back to the model to fix (``validation_error``, the tool's
``ModelRetry``), on the call's span, which it marks failed: a retry, as ours are."""


def tokens_of(attributes: Mapping[str, Any]) -> tuple[Any, Any]:
    """A model span's input and output tokens, under whichever name its tracer wrote them.

    The conventions' current names, their older ones (``prompt_tokens`` / ``completion_tokens``,
    which OpenLLMetry and ``Telemetry(conventions="older")`` write), or OpenInference's.
    """
    return (
        _first(attributes, USAGE_INPUT_TOKENS, OLDER_INPUT_TOKENS, OI_INPUT_TOKENS),
        _first(attributes, USAGE_OUTPUT_TOKENS, OLDER_OUTPUT_TOKENS, OI_OUTPUT_TOKENS),
    )


def metadata_attributes(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A run's metadata as run span attributes (see `RUN_METADATA`)."""
    attributes: dict[str, Any] = {}
    encoded = []
    for key, value in metadata.items():
        if isinstance(value, str | bool | int | float):
            attributes[RUN_METADATA + key] = value
        else:  # None, a list, an object: attributes hold none of these
            attributes[RUN_METADATA + key] = json.dumps(value, ensure_ascii=False)
            encoded.append(key)
    if encoded:
        attributes[RUN_METADATA_JSON] = encoded
    return attributes


def metadata_of(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The run metadata `metadata_attributes` wrote (a value that is not JSON stays text)."""
    listed = attributes.get(RUN_METADATA_JSON)
    encoded = set(listed) if isinstance(listed, list | tuple) else set()
    metadata: dict[str, Any] = {}
    for name, value in attributes.items():
        if not name.startswith(RUN_METADATA):
            continue
        key = name[len(RUN_METADATA) :]
        metadata[key] = value
        if key in encoded and isinstance(value, str):
            with suppress(ValueError, RecursionError):
                metadata[key] = loads(value)
    return metadata


def _first(attributes: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in attributes:
            return attributes[key]
    return None


def renamed(attributes: dict[str, Any], conventions: Conventions) -> dict[str, Any]:
    """``attributes`` under the names ``conventions`` asks for (unchanged for ``current``)."""
    if conventions == "current":
        return attributes
    out = dict(attributes)
    for key, older in OLDER_NAMES.items():
        if key in out:
            out[older] = out[key] if conventions == "both" else out.pop(key)
    return out


# -- correlation: on every span and every span event --------------------------------------------

RUN_ID: Final = "workbench.run.id"
EXECUTION_ID: Final = "workbench.execution.id"
STEP_INDEX: Final = "workbench.step.index"
PARENT_RUN_ID: Final = "workbench.parent_run.id"
SNAPSHOT_ID: Final = "workbench.snapshot.id"

# -- workbench: run, step, tool and hook details ------------------------------------------------

RUN_STATUS: Final = "workbench.run.status"
RUN_STOP_REASON: Final = "workbench.run.stop_reason"
RUN_STEPS: Final = "workbench.run.steps"
RUN_PENDING: Final = "workbench.run.pending"
"""Call ids waiting for approval or results when the execution paused."""
RUN_METADATA: Final = "workbench.run.metadata."
"""``workbench.run.metadata.<key>``: one key of the run's metadata, on its run span, so a
backend can filter runs by it (Phoenix's ``attribute=``, Jaeger's tags). A string, number or
boolean is written as itself; anything else as JSON text, its key listed in `RUN_METADATA_JSON`
so that it reads back as the value it was (`metadata_of`)."""
RUN_METADATA_JSON: Final = "workbench.run.metadata_json"
OI_METADATA: Final = "metadata"
"""OpenInference's run metadata: one JSON object, as text, on a span."""
RERUN_OF: Final = "workbench.rerun.of"
"""On the run span of a re-run: the original run's id (its step and snapshot follow)."""
RERUN_STEP: Final = "workbench.rerun.step"
RERUN_SNAPSHOT_ID: Final = "workbench.rerun.snapshot.id"
LINK_REASON: Final = "workbench.link.reason"
"""On a span link: ``resume`` (the paused execution) or ``origin`` (the run a re-run forked)."""
USAGE_PREFIX: Final = "workbench.usage."
USAGE_TOTAL_INPUT: Final = "workbench.usage.input_tokens"
USAGE_TOTAL_OUTPUT: Final = "workbench.usage.output_tokens"
USAGE_TOTAL_TOKENS: Final = "workbench.usage.total_tokens"
USAGE_TOTAL_REQUESTS: Final = "workbench.usage.requests"
USAGE_TOTAL_COST: Final = "workbench.usage.cost_usd"
STEP_STATUS: Final = "workbench.step.status"
STEP_STOP_REASON: Final = "workbench.step.stop_reason"
STEP_INPUT_TOKENS: Final = "workbench.step.input_tokens"
STEP_OUTPUT_TOKENS: Final = "workbench.step.output_tokens"
STEP_TOOL_CALLS: Final = "workbench.step.tool_calls"
STEP_COST: Final = "workbench.step.cost_usd"
"""The step's model call's cost in USD, when the model has a price."""
STEP_MESSAGE_COUNT: Final = "workbench.step.message_count"
STEP_TRIES: Final = "workbench.step.tries"
"""How many times the step's model call was made, on a step whose client asked again after a
failed try (`StepRecord.failed_tries`); absent when it was made once."""
MODEL_TRY: Final = "workbench.model.try"
"""Which try of its step's model call a chat span is (1, 2, ...), on each of a step tried more
than once: every try but the last failed."""
STEP_RESUMED: Final = "workbench.step.resumed"
TOOLS_OFFERED: Final = "workbench.tools.offered"
"""The tools the model was offered in the step (after toolset filters)."""
TOOLS_FILTERED: Final = "workbench.tools.filtered"
"""``"name: reason"`` for each tool a toolset hid in the step."""
"""True on the step span of a resumed execution: the step began in the paused one."""
BUDGET_STEPS_LEFT: Final = "workbench.budget.steps_left"
BUDGET_TOKENS_LEFT: Final = "workbench.budget.tokens_left"
BUDGET_SECONDS_LEFT: Final = "workbench.budget.seconds_left"
TIMING_PREFIX: Final = "workbench.timing."
TIMING_PREPARE: Final = "workbench.timing.prepare"
TIMING_INFERENCE: Final = "workbench.timing.inference"
TIMING_TOOLS: Final = "workbench.timing.tools"
TIMING_HOOKS: Final = "workbench.timing.hooks"
TIMING_CONTINUATION: Final = "workbench.timing.continuation"
TIMING_TELEMETRY: Final = "workbench.timing.telemetry"
TIMING_TTFT: Final = "workbench.timing.time_to_first_token"
TOOL_STATUS: Final = "workbench.tool.status"
"""``ok``, ``error``, ``retry``, ``denied``, ``pending`` or ``dropped`` (`ToolOutcome.status`)."""
HOOK_EVENT: Final = "workbench.hook.event"
HOOK_NAME: Final = "workbench.hook.name"
HOOK_ERROR: Final = "workbench.hook.error"

# -- span events --------------------------------------------------------------------------------

EVENT_EXCEPTION: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
EVENT_FIRST_TOKEN: Final = "workbench.first_token"
EVENT_TOOL_PENDING: Final = "workbench.tool.pending"
EVENT_PAUSED: Final = "workbench.run.paused"
EVENT_STOPPED: Final = "workbench.run.stopped"
EVENT_HOOK_ERROR: Final = "workbench.hook.error"
EVENT_WAIT: Final = "workbench.wait"
"""On a step span: the run, stepped by hand, waited on whoever steps it from this moment on
(`StepRecord.waits`); the views leave the stretch out of its times (`wb.Trace`)."""
WAIT_SECONDS: Final = "workbench.wait.seconds"
"""How long that wait lasted."""
WAIT_DRAWING: Final = "workbench.wait.drawing"
"""True on a wait that was the views drawing the run (`Wait.kind`), not a person."""
EVENT_FAILURE: Final = "workbench.failure"
"""A handled failure (a tool error or retry, a denial, a hook's bad answer): not an exception."""
FAILURE_MESSAGE: Final = "workbench.failure.message"

# -- error.type values for failures that are not Python exceptions ------------------------------

ERROR_TOOL: Final = "tool_error"
ERROR_TOOL_RETRY: Final = "tool_retry"
ERROR_TOOL_DENIED: Final = "tool_denied"
ERROR_HOOK: Final = "hook_error"

SCOPE: Final = "workbench"
"""The instrumentation scope of every span the workbench makes."""
