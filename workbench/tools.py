"""Tools from plain Python functions.

`@tool` turns a function (sync or async) into a `Tool`: a JSON schema built from its signature and
docstring, a pydantic validator for the model's arguments, and the options that govern how it runs
(retries, timeout, approval, result size). The loop never calls the function directly; it calls
`Tool.run`, which validates, runs (sync functions in a worker thread), bounds the time and turns the
result into text for the model.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_type_hints, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from workbench._record import Record
from workbench._sync import in_worker
from workbench.conditions import Budget, Limits, RunView
from workbench.errors import (
    ArgumentError,
    ReplayDivergence,
    RunFatalError,
    ToolInterrupted,
    ToolRetry,
    ToolTimeout,
    UsageError,
)
from workbench.messages import JsonValue, ToolDefinition, Usage
from workbench.records import RunResult, SubagentResult
from workbench.redact import unicode_text
from workbench.state import AgentState, ErrorInfo

__all__ = [
    "ArgumentError",
    "RunFatalError",
    "SubrunRecording",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolRetry",
    "ToolReturn",
    "ToolTimeout",
    "tool",
    "truncate",
    "unicode_text",
]


class SubrunRecording(Record):
    """In a replay: the sub-runs one tool call made in the recording, for a sub-agent to replay.

    A sub-agent tool given one runs its sub-agent on a replay of these runs instead of on the
    agent's model (whole-tree replay); with no runs, starting a sub-run departs from the recording.
    """

    runs: tuple[RunResult, ...]
    strict: bool = False
    tools: Literal["live", "replay"] = "live"
    """Whether the sub-run's tool calls are answered from the recording too."""
    departs: Literal["fail", "live"] = "fail"
    """Where the sub-run departs from its recording: fail, or go on with its agent's model."""


class ToolContext(Record):
    """A read-only view of the run for tools and guards, as the TOOLS phase started.

    Everything is read from ``view`` when asked for: most tools ask for nothing, and the context
    is made for every TOOLS phase.
    """

    view: RunView
    limits: Limits
    call_id: str | None = None
    """The tool call being run (None in a guard that sees all of a step's calls at once)."""
    replaying: SubrunRecording | None = None
    """In a replay, what the call being run recorded of sub-runs (a sub-agent tool replays them)."""

    def __repr__(self) -> str:  # short: the state is one attribute away
        return f"ToolContext(run_id={self.run_id!r}, step={self.step}, budget={self.budget})"

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.view.state.run_id

    @property
    def execution_id(self) -> str:
        """The id of this execution of the run."""
        return self.view.state.execution_id

    @property
    def step(self) -> int:
        """The step under way."""
        return self.view.state.step

    @property
    def usage(self) -> Usage:
        """Tokens (and cost) used so far, this step's model call included."""
        return self.view.state.usage

    @property
    def budget(self) -> Budget:
        """What the run has used and has left (the step under way not counted as used)."""
        return Budget.of(self.limits, self.view)


class ToolReturn(Record):
    """What a tool gives back: the value the model reads, and what the run should know besides.

    A tool function may return one to charge the tokens it spent (a sub-agent, a model call of
    its own) to the calling run, or to hand back the run it started; `Tool.run` always returns
    one, with ``value`` as the (truncated) text the model reads.
    """

    value: Any
    usage: Usage | None = None
    """Tokens and cost spent inside the tool, added to the calling run's usage."""
    runs: tuple[RunResult, ...] = ()
    """The sub-runs the tool made (`Agent.as_tool`): they become children of the calling run."""
    subagent: SubagentResult | None = None
    """The sub-run as the calling run's step record shows it."""
    is_error: bool = False
    """The value is an error the model should read as one (the call did not do its job)."""
    waiting: AgentState | None = None
    """A sub-run that paused (its calls wait for approval): the calling run pauses with it."""
    departed: ReplayDivergence | None = None
    """A replayed sub-run departed from its recording: the calling run fails with this once the
    call is recorded (its sub-run kept), not later when its own next request departs in turn."""
    exception: ErrorInfo | None = None
    """What failed the sub-run, with its traceback: the calling run's outcome carries it up."""


ToolFunction = Callable[..., Any]


@dataclass(frozen=True, eq=False)
class Tool:
    """A function the model can call, with its schema and execution options."""

    function: ToolFunction
    name: str
    description: str
    retries: int = 1
    timeout: float | None = None
    requires_approval: bool = False
    deferred: bool = False
    """Executed outside the loop: the run pauses and the result comes back through `resume`."""
    max_result_chars: int = 20_000
    sequential: bool = False
    """Run alone, after the calls that may run concurrently."""
    parameters: Mapping[str, Any] | None = None
    """The arguments' JSON schema, when no Python signature describes them (an MCP server's tool):
    the function takes them as ``**kwargs``, checked against this schema (with ``jsonschema``,
    which the ``mcp`` extra installs)."""
    _args_model: type[BaseModel] | None = field(init=False, repr=False)
    _schema_check: Any = field(init=False, repr=False)
    _context_param: str | None = field(init=False, repr=False)
    _is_async: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        args_model, context_param, check = None, None, None
        if self.parameters is None:
            args_model, context_param = _arguments_model(self.function, self.name)
        else:
            check = _schema_validator(self.parameters, self.name)
        object.__setattr__(self, "_args_model", args_model)
        object.__setattr__(self, "_schema_check", check)
        object.__setattr__(self, "_context_param", context_param)
        object.__setattr__(self, "_is_async", inspect.iscoroutinefunction(self.function))

    def with_options(self, **changes: Any) -> Tool:
        """A new tool like this one with some options changed (``name=``, ``timeout=``, ...).

        Built through the constructor, so the new tool is checked and described afresh.
        """
        options = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        return type(self)(**(options | changes))

    @functools.cached_property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        if self._args_model is None:
            return ToolDefinition(
                name=self.name, description=self.description, parameters=dict(self.parameters or {})
            )
        schema = self._args_model.model_json_schema()
        schema.pop("title", None)
        return ToolDefinition(name=self.name, description=self.description, parameters=schema)

    def validate(self, arguments: dict[str, JsonValue]) -> dict[str, Any]:
        """Check and coerce the model's arguments; raise `ArgumentError` saying what to fix."""
        if self._args_model is None:
            return _check_against_schema(self._schema_check, arguments)
        try:
            parsed = self._args_model.model_validate(arguments)
        except ValidationError as exc:
            raise ArgumentError(_explain(exc)) from None
        # the fields, as validated (no extras: the model forbids them)
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def run(self, arguments: dict[str, JsonValue], ctx: ToolContext) -> ToolReturn:
        """Validate, execute within the timeout; the (truncated) text the model reads, and more."""
        kwargs = self.validate(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        try:
            result = await asyncio.wait_for(self._contained(kwargs), self.timeout)
        except TimeoutError:
            raise ToolTimeout(f"tool {self.name!r} timed out after {self.timeout:g}s") from None
        returned = result if isinstance(result, ToolReturn) else ToolReturn(value=result)
        text = truncate(result_text(returned.value), self.max_result_chars)
        return returned.model_copy(update={"value": text})

    async def _contained(self, kwargs: dict[str, Any]) -> Any:
        """Call the function; what it raises to stop a task or a process is its own failure.

        A ``CancelledError`` it raises while nobody cancelled this task (a future it awaited was
        cancelled), a ``SystemExit`` (argparse on bad input) or a ``KeyboardInterrupt`` it
        raises itself would otherwise end the run, or the event loop the run is on. They become
        `ToolInterrupted`, which the model reads. A real cancellation (the run was cancelled, or
        the timeout fired) goes on as ``CancelledError``. This runs inside the task that
        ``wait_for`` makes, so nothing escapes that task's step either.
        """
        try:
            return await self._call(kwargs)
        except (asyncio.CancelledError, SystemExit, KeyboardInterrupt) as exc:
            task = asyncio.current_task()
            if isinstance(exc, asyncio.CancelledError) and task is not None and task.cancelling():
                raise
            said = f": {exc}" if str(exc) else ""
            raise ToolInterrupted(
                f"tool {self.name!r} raised {type(exc).__name__}{said} (the run was not "
                "cancelled: this is the tool failing)"
            ) from None

    def _call(self, kwargs: dict[str, Any]) -> Awaitable[Any]:
        if self._is_async:
            return self.function(**kwargs)  # type: ignore[no-any-return]
        return in_worker(functools.partial(self.function, **kwargs))  # never on the loop

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (handy in tests and notebooks)."""
        if self._is_async:
            return await self.function(*args, **kwargs)
        return self.function(*args, **kwargs)


@overload
def tool(function: ToolFunction, /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    retries: int = 1,
    timeout: float | None = None,
    requires_approval: bool = False,
    deferred: bool = False,
    max_result_chars: int = 20_000,
    sequential: bool = False,
) -> Callable[[ToolFunction], Tool]: ...
def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    retries: int = 1,
    timeout: float | None = None,
    requires_approval: bool = False,
    deferred: bool = False,
    max_result_chars: int = 20_000,
    sequential: bool = False,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a `Tool` of a function: ``@tool`` or ``@tool(retries=2, timeout=5.0, ...)``.

    The description is the docstring's summary; parameter descriptions come from an ``Args:``
    section. A parameter annotated `ToolContext` is filled in by the loop, not by the model.
    """

    def make(fn: ToolFunction) -> Tool:
        if not callable(fn):  # `@wb.tool("search")` (meaning the name) as much as a slip
            said = f"; a name goes as @tool(name={fn!r})" if isinstance(fn, str) else ""
            raise UsageError(f"@tool makes a tool of a function, not of {fn!r}{said}")
        summary, _ = _parse_docstring(fn)
        return Tool(
            function=fn,
            name=name or fn.__name__,
            description=description if description is not None else summary,
            retries=retries,
            timeout=timeout,
            requires_approval=requires_approval,
            deferred=deferred,
            max_result_chars=max_result_chars,
            sequential=sequential,
        )

    return make(function) if function is not None else make


def schema_hash(definitions: tuple[ToolDefinition, ...]) -> str:
    """A short, stable hash of the tool definitions a model is offered."""
    payload = [(d.name, d.description, d.parameters) for d in definitions]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=256)
def tools_hash(tools: tuple[Tool, ...]) -> str:
    """`schema_hash` of these tools' definitions, worked out once per set of tools.

    Every run of an agent (every call of a sub-agent) offers the same tools, and a tool's
    definition is fixed once made, so the hash is shared rather than redone per execution.
    Tools compare by identity: an entry never goes stale.
    """
    return schema_hash(tuple(t.definition for t in tools))


def result_text(result: Any) -> str:
    """The text the model reads for a tool's return value (JSON for anything but a string)."""
    if isinstance(result, str):
        return unicode_text(result)
    try:
        return pydantic_core.to_json(result, fallback=repr).decode()
    except pydantic_core.PydanticSerializationError:  # a lone surrogate in one of its strings
        plain = pydantic_core.to_jsonable_python(result, fallback=repr)
        return unicode_text(json.dumps(plain, ensure_ascii=False))


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, with a notice that says how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return (
        f"{text[:limit]}\n[truncated: showing the first {limit:,} of {len(text):,} characters; "
        f"{cut:,} cut]"
    )


def _arguments_model(fn: ToolFunction, tool_name: str) -> tuple[type[BaseModel], str | None]:
    signature = inspect.signature(fn)
    hints = get_type_hints(fn)
    _, param_docs = _parse_docstring(fn)
    fields: dict[str, Any] = {}
    context_param = None
    for param in signature.parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"tool {tool_name!r}: *args and **kwargs cannot be described to a model"
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name)))
    model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_param


def _schema_validator(schema: Mapping[str, Any], tool_name: str) -> Any:
    """A JSON Schema validator for ``schema``; `ValueError` when it is no valid schema."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the mcp extra installs it
        raise ImportError(
            f"tool {tool_name!r} has a JSON schema: pip install 'workbench[mcp]' to check it"
        ) from None
    validator_class = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        validator_class.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top"
        raise ValueError(
            f"tool {tool_name!r}: invalid JSON schema at {where}: {exc.message}"
        ) from None
    if schema.get("type", "object") != "object":
        raise ValueError(f"tool {tool_name!r}: the arguments' schema must describe an object")
    _check_references(schema, tool_name)
    return validator_class(dict(schema))


def _check_references(schema: Mapping[str, Any], tool_name: str) -> None:
    """`ValueError` if a local reference (``#/...``) of ``schema`` leads nowhere.

    Such a schema is valid JSON Schema, so it passes the check of its form, but every call that
    reaches the reference fails inside the argument check: the model could never call the tool.
    A schema with a nested ``$id`` resolves references against other bases; it is left as it is.
    """
    from referencing import Registry  # jsonschema's own resolver, installed with it
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    parts = list(_objects(schema, ()))
    if any("$id" in part for where, part in parts if where):
        return
    resolver = Registry().with_resource("", DRAFT202012.create_resource(dict(schema))).resolver()
    for where, part in parts:
        ref = part.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#")):
            continue
        try:
            resolver.lookup(ref)
        except Unresolvable:
            at = "/".join(where) or "the top"
            raise ValueError(
                f"tool {tool_name!r}: its schema refers to {ref!r} (at {at}), which is not in it"
            ) from None


def _objects(
    node: Any, where: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Every object in a JSON value, with the path to it."""
    if isinstance(node, Mapping):
        yield where, node
        for key, value in node.items():
            yield from _objects(value, (*where, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _objects(value, (*where, str(i)))


def _check_against_schema(validator: Any, arguments: dict[str, JsonValue]) -> dict[str, Any]:
    """The arguments, if they fit the tool's JSON schema; else `ArgumentError` saying why."""
    problems = [
        f"argument {'.'.join(str(p) for p in error.absolute_path) or 'arguments'!r}: "
        f"{error.message}"
        for error in validator.iter_errors(arguments)
    ]
    if problems:
        raise ArgumentError("; ".join(problems))
    return dict(arguments)


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\(.*?\))?:\s*(.*)$")


def _parse_docstring(fn: ToolFunction) -> tuple[str, dict[str, str]]:
    """The summary paragraph and a Google-style ``Args:`` section of a docstring."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line):
            break
        summary_lines.append(line.strip())
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if in_args and line and not line[0].isspace():
            in_args = False  # the next section starts
        if not in_args:
            continue
        if (match := _ARG_LINE.match(line)) and len(line) - len(line.lstrip()) <= 4:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current and line.strip():
            params[current] = f"{params[current]} {line.strip()}"
    return " ".join(summary_lines), params


def _explain(exc: ValidationError) -> str:
    """Pydantic's errors as short lines a model can act on: which field, what was expected."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "missing":
            lines.append(f"argument {where!r} is required but missing")
        elif error["type"] == "extra_forbidden":
            lines.append(f"argument {where!r} is not a parameter of this tool")
        else:
            lines.append(f"argument {where!r}: {error['msg']} (got {error['input']!r})")
    return "; ".join(lines)
