"""What went wrong in a trace, read as `RunResult.errors` reads the run that made it.

Plain functions of a `SpanTree`, as `workbench.telemetry.derive`'s are (`Trace` calls them):
the errors every view lists first, and how another framework's run ended, which its spans say
in their own ways (the OpenAI Agents SDK leaves its workflow's span unmarked when the run
raised; LangGraph fails every span an exception passes on its way out).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from workbench.records import ErrorKind, RunError
from workbench.state import ExecutionStatus
from workbench.telemetry import names as n
from workbench.telemetry.derive import children, foreign_calls, tool_status
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.tree import SpanTree

__all__ = ["foreign_status", "trace_errors"]


def foreign_status(tree: SpanTree) -> str:
    """How another framework's run ended: ``failed`` or ``ok``, as its spans say.

    Failed when a top span failed, or the agent run under it that ended last did (its answer
    would have been the run's): the OpenAI Agents SDK fails the agent's span and leaves its
    workflow's, the top, unmarked, so a run that raised read "ok".
    """
    tops = [p for p in range(len(tree)) if not tree.depths[p]]
    if any(tree.span_at(p).is_error for p in tops):
        return "failed"
    runs = [p for p in range(len(tree)) if tree.depths[p] and tree.span_at(p).category == "agent"]
    last = max(runs, key=lambda p: tree.span_at(p).end_ns, default=None)
    return "failed" if last is not None and tree.span_at(last).is_error else "ok"


_HANDLED = frozenset({n.ERROR_TOOL, n.ERROR_TOOL_RETRY, n.ERROR_TOOL_DENIED, n.ERROR_HOOK})
"""Our ``error.type`` labels of failures that raised nothing: no exception type to name."""


def trace_errors(tree: SpanTree, agents: Sequence[str]) -> tuple[RunError, ...]:
    """What went wrong in a trace, read as `RunResult.errors` reads the run that made it.

    For a trace of ours the two agree (the spans are the records'): a retry or a policy's
    denial is no error; a sub-agent call whose sub-run failed is not a second error (the
    sub-run's own is, where it failed); a model call that failed its run is the run's error;
    a failed run's own error, and the error of a call whose sub-run stopped at a limit or was
    aborted, come after the errors below them. A span another framework marked failed is a
    ``span`` error, its model and tool calls are placed in the steps its step table numbers,
    and one failure is said once (`_said_once`). Breakpoint predicates never make spans, so
    theirs are not here.
    """
    found: list[RunError] = []
    closing: list[tuple[int, RunError]] = []  # said once their subtree is passed
    for position in range(len(tree)):
        while closing and closing[-1][0] <= position:
            found.append(closing.pop()[1])
        if not tree.span_at(position).is_error:
            continue
        error = _error_at(tree, position, agents[position])
        if error is None:
            continue
        if error.kind in ("run", "subrun"):  # a failed run, or a call its sub-run did not end
            closing.append((tree.ends[position], error))
        else:
            found.append(error)
    found.extend(error for _, error in reversed(closing))
    if any(error.run_id for error in found):  # ours: the records' errors, one to a failure
        return tuple(found)
    return _in_their_steps(tree, agents, _said_once(found))


_AROUND = ("span", "run", "subrun")
"""Kinds of another framework's errors that may be a failure below them come up."""


def _said_once(found: Sequence[RunError]) -> list[RunError]:
    """Another framework's errors, each failure once: where it happened, not where it came up.

    An exception a model or tool call raised fails every span it passes on its way out
    (LangGraph: the node, its chains, the graph; pydantic-ai: the run), each with its message,
    and an SDK may say it again in words of its own ("Error in agent run: ..." around "Error
    getting response: ..."): "1 failed span: call_model" named a chain beside the call that
    failed, and "1 failed sub-run" counted the 500 of a model call again.
    """
    kept: dict[int, RunError] = {}  # by id: a failure's own errors may be equal records
    said: dict[str, list[RunError]] = {}  # those kept, by their words (`_words`)
    for error in sorted(found, key=lambda e: e.kind in _AROUND):  # the calls first
        alike = said.setdefault(_words(error.message), [])
        if error.kind in _AROUND and any(_same_type(error, other) for other in alike):
            continue
        kept[id(error)] = error
        alike.append(error)
    return [error for error in found if id(error) in kept]


def _words(message: str) -> str:
    """What an error says after its own words (``Error in agent run: ...``).

    One failure's errors share these: only errors that do are compared, so a trace of many
    failures is not read in pairs. The OpenAI Agents SDK's error is a message and its data,
    which OpenInference writes as ``message: data`` and OpenLLMetry as the whole dict.
    """
    if message.startswith("{'message': ") and len(message) < _LONGEST_DICT:
        try:
            found = ast.literal_eval(message)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # any text
            found = None
        if isinstance(found, dict) and "data" in found:
            return str(found["data"])
    return message.split(": ", 1)[-1]


_LONGEST_DICT = 10_000
"""The longest error message read as the Agents SDK's dict: longer ones are compared as text."""


def _same_type(a: RunError, b: RunError) -> bool:
    """Whether two errors of the same words are one failure: no two exception types apart."""
    return a.type is None or b.type is None or a.type == b.type


def _in_their_steps(
    tree: SpanTree, agents: Sequence[str], found: Sequence[RunError]
) -> tuple[RunError, ...]:
    """Another framework's model and tool errors, in the step its step table puts them in.

    "failed, 1 model error: ChatCompletion" did not say which of the calls it was.
    """
    if not any(error.kind in ("model", "tool") for error in found):
        return tuple(found)
    categories = [tree.span_at(p).category for p in range(len(tree))]
    if "step" in categories:  # our steps number the step table, not the model calls
        return tuple(found)
    step_of: dict[str, int] = {}
    for index, (model, tools) in enumerate(foreign_calls(tree, agents, categories), 1):
        for position in (model, *tools):
            step_of[tree.span_at(position).span_id] = index
    return tuple(
        error.model_copy(update={"step": step_of.get(error.span_id or "")})
        if error.kind in ("model", "tool") and error.step is None
        else error
        for error in found
    )


def _error_at(tree: SpanTree, position: int, agent: str) -> RunError | None:
    span = tree.span_at(position)
    a = span.attributes
    exception = next((e.attributes for e in span.events if e.name == n.EVENT_EXCEPTION), None)
    failure = next((e.attributes for e in span.events if e.name == n.EVENT_FAILURE), {})
    kind = _error_kind(tree, position, exception is not None)
    if kind is None:
        return None
    raised = exception or {}
    error_type = raised.get(n.EXCEPTION_TYPE) or a.get(n.ERROR_TYPE)
    message = (
        raised.get(n.EXCEPTION_MESSAGE)
        or failure.get(n.FAILURE_MESSAGE)
        or span.status_message
        or error_type
        or "failed"
    )
    own = a.get(n.RUN_STEPS) if span.category == "agent" else a.get(n.STEP_INDEX)  # a run: its last
    step = raised.get(n.STEP_INDEX, failure.get(n.STEP_INDEX, own))
    runs = sum(tree.span_at(p).category == "agent" for p in tree.ancestors(position))
    depth = runs if span.category == "agent" else max(0, runs - 1)  # its run's depth
    return RunError(
        kind=kind,
        agent=agent,
        run_id=_text(a.get(n.RUN_ID)) or "",
        depth=depth,
        step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        call_id=_text(a.get(n.TOOL_CALL_ID)) if span.category == "tool" else None,
        name=_error_name(span, kind),
        message=str(message),
        type=None if error_type is None or error_type in _HANDLED else str(error_type),
        traceback=_text(raised.get(n.EXCEPTION_STACKTRACE)),
        span_id=span.span_id,
    )


def _error_kind(tree: SpanTree, position: int, raised: bool) -> ErrorKind | None:
    """What a failed span is an error of, or None when `RunResult.errors` would not count it."""
    span = tree.span_at(position)
    match span.category:
        case "tool":
            status = tool_status(span)
            if status == "retry" or (status == "denied" and not raised):
                return None
            if status == "denied":
                return "guard"
            runs = [c for c in children(tree, position) if tree.span_at(c).category == "agent"]
            if not runs:
                return "tool"
            return None if any(tree.span_at(c).is_error for c in runs) else "subrun"
        case "hook":
            return "hook"
        case "model":
            return None if _failed_its_run(tree, position) else "model"
        case "agent":
            runs = [p for p in tree.ancestors(position) if tree.span_at(p).category == "agent"]
            return "subrun" if runs else "run"
        case _:  # another framework's span: its own failure, unless one below it failed first
            below = range(position + 1, tree.ends[position])
            return None if any(tree.span_at(p).is_error for p in below) else "span"


def _failed_its_run(tree: SpanTree, position: int) -> bool:
    """Whether a failed model call is its run's failure (the run's error says it), as records say.

    Ours: when its step failed (`records.step_errors`) and it was the step's last try. A try
    the client asked again after (the proxy recording an SDK's retries) is an error of its own,
    and so is a call in a run that went on from its failed step. A step with no status (an
    older trace of ours): when its run failed. Another framework's call is its own error,
    never its run's: the run's is the call's come up (`_said_once`).
    """
    above = tree.ancestors(position)
    step = next((tree.span_at(p) for p in above if tree.span_at(p).category == "step"), None)
    if step is None:
        return False
    if n.STEP_STATUS in step.attributes:
        number = tree.span_at(position).attributes.get(n.MODEL_TRY, 1)
        if number != step.attributes.get(n.STEP_TRIES, 1):
            return False
        return bool(step.attributes[n.STEP_STATUS] == ExecutionStatus.FAILED.value)
    runs = [p for p in above if tree.span_at(p).category == "agent"]
    return bool(runs) and tree.span_at(runs[0]).is_error


def _error_name(span: SpanData, kind: ErrorKind) -> str | None:
    """The tool, the hook, or (a span of another framework) the span's own name.

    A model call of ours is placed by its step; another framework's has no step of ours, and
    an OpenInference trace no agent: its name ("ChatCompletion") is where it failed.
    """
    a = span.attributes
    if span.category == "tool":
        return _text(a.get(n.TOOL_NAME, a.get(n.OI_TOOL_NAME)))
    if kind == "hook":
        return _text(a.get(n.HOOK_NAME))
    if kind == "model" and n.MODEL_TRY in a:  # one of its step's tries (`records.try_name`)
        return f"try {a[n.MODEL_TRY]}"
    foreign_model = kind == "model" and n.STEP_INDEX not in a
    return span.name if kind == "span" or foreign_model else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
