"""Toolsets: groups of tools with behaviour that composes, and filters that run every step.

A `Toolset` holds tools (functions, `Tool`s, other toolsets, or an MCP server's tools) and a chain
of layers added by its methods: ``prefixed``, ``requiring_approval``, ``rate_limited``,
``with_timeout``, ``with_retries`` and ``filtered``. Each method returns a new toolset; the
original is untouched, so one set of tools can be offered differently to different agents.

The layers that change a tool are applied once, when the toolset is first resolved (and again only
if its sources change, as an MCP server's listing may), so each step reuses the same `Tool`
objects. Filters are the only layer that runs every step: `Toolset.resolve` asks each of them
about each tool, with the run as it stands, just before the model is called.

A filter sees the tool as it was when the filter was added: ``.filtered(f).prefixed("p_")`` asks
``f`` about ``delete``, not ``p_delete``, so a filter keeps meaning what its author wrote whatever
layers come after it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from workbench._record import Record
from workbench._sync import call_user, run_sync
from workbench.conditions import RunView
from workbench.errors import MCPServerError, ToolRateLimited, UsageError
from workbench.messages import JsonValue, ToolDefinition
from workbench.redact import error_text
from workbench.tools import Tool, tool

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "Resolved",
    "ToolFilter",
    "ToolItem",
    "ToolSource",
    "Toolset",
    "choose_tools",
    "stand_in",
    "tool_table",
]

ToolFilter = Callable[[Tool, RunView], "bool | str | Awaitable[bool | str]"]
"""``fn(tool, view)``: True offers the tool; False or a string (the reason) hides it this step."""

Resolved = tuple[tuple[Tool, ...], tuple[tuple[str, str], ...]]
"""What `Toolset.resolve` answers: the tools offered, and ``(name, reason)`` for each one hidden."""


@runtime_checkable
class ToolSource(Protocol):
    """Tools that come from elsewhere (an MCP server): listed when first needed, then closed."""

    async def tools(self) -> tuple[Tool, ...]:
        """The tools on offer now; the same objects while the listing does not change."""
        ...

    async def aclose(self) -> None:
        """Let go of what the source holds open (a subprocess, a connection)."""
        ...

    @property
    def unusable(self) -> tuple[tuple[str, str], ...]:
        """``(name, reason)`` for the tools the source has but cannot offer (a broken schema)."""
        ...


class _Check(Record):
    """One filter, and the tool as it looked when the filter was added."""

    filter: Any  # a ToolFilter; pydantic cannot check a callable's signature
    seen: Tool


class _Entry(Record):
    """A tool with its layers applied, and the filters that decide whether it is offered."""

    tool: Tool
    checks: tuple[_Check, ...] = ()


_Layer = Callable[[_Entry], _Entry]
_Member = Tool | ToolSource


class Toolset:
    """Tools offered together, with layers that change how they are offered and run.

    ``Toolset(tools)`` takes `Tool`s, plain functions (made tools with `workbench.tool`) and other
    toolsets. The loop calls `resolve` before every model call. A toolset that holds an MCP
    server keeps its connection open until `aclose` (or ``async with toolset:``) ends it.
    """

    def __init__(self, tools: Iterable[Tool | Toolset | ToolSource | Callable[..., Any]] = ()):
        members: list[_Member | Toolset] = []
        for item in tools:
            if isinstance(item, Tool | Toolset | ToolSource):
                members.append(item)
            elif callable(item):
                members.append(tool(item))
            else:
                raise UsageError(f"a toolset holds tools, functions and toolsets, not {item!r}")
        self._members: tuple[_Member | Toolset, ...] = tuple(members)
        self._layers: tuple[_Layer, ...] = ()
        self._cache: tuple[tuple[_Entry, ...], tuple[_Entry, ...]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_mcp(
        cls,
        command_or_url: str | list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = 30.0,
        connect_timeout: float = 30.0,
    ) -> Toolset:
        """The tools of an MCP server: a URL (streamable HTTP) or a command (stdio).

        A command is a list of arguments, or a string split like a shell would. Nothing connects
        until the tools are first needed; ``timeout`` bounds each call (`with_timeout` changes
        it), ``connect_timeout`` the start-up and each listing. See `workbench.mcp_tools`.
        """
        from workbench.mcp_tools import MCPServer  # the mcp extra is optional

        server = MCPServer(
            command_or_url,
            env=env,
            cwd=cwd,
            headers=headers,
            timeout=timeout,
            connect_timeout=connect_timeout,
        )
        return cls([server])

    def __repr__(self) -> str:
        return f"Toolset({list(self._members)!r}, layers={len(self._layers)})"

    # -- the layers ---------------------------------------------------------------------------

    def filtered(self, fn: ToolFilter) -> Toolset:
        """Offer a tool only while ``fn(tool, view)`` is True; a string answer is why it is not.

        A filter that raises hides the tool, with the error (redacted, as a tool's error is) as
        the reason: a broken filter must not end the run, and offering a tool the filter meant to
        hide would be worse.
        """

        def layer(entry: _Entry) -> _Entry:
            check = _Check(filter=fn, seen=entry.tool)
            return entry.model_copy(update={"checks": (*entry.checks, check)})

        return self._with(layer)

    def prefixed(self, prefix: str) -> Toolset:
        """Every tool's name with ``prefix`` in front (two servers may both have a ``search``)."""
        return self._with(_Prefix(prefix))

    def requiring_approval(self, names_or_fn: Collection[str] | Callable[[Tool], bool]) -> Toolset:
        """Pause for approval before the named tools run (or those for which ``fn(tool)``).

        The names are the tools' names at this point of the chain (after an earlier prefix). A
        name no tool has is a `UsageError` when the tools are listed: approval must not quietly
        apply to nothing.
        """
        if callable(names_or_fn):
            wanted: Callable[[Tool], bool] = names_or_fn
            names: frozenset[str] = frozenset()
        elif isinstance(names_or_fn, str):
            raise UsageError("requiring_approval takes a collection of names, not one string")
        else:
            names = frozenset(names_or_fn)
            wanted = lambda t: t.name in names  # noqa: E731 - the names, as a predicate
        layer = _changing(lambda t: {"requires_approval": True} if wanted(t) else {})
        return self._with(_Named(layer, "requiring_approval", names) if names else layer)

    def rate_limited(
        self, calls: int, per_seconds: float, *, clock: Callable[[], float] = time.monotonic
    ) -> Toolset:
        """At most ``calls`` calls of this toolset's tools in any ``per_seconds`` window.

        The limit is shared by the toolset's tools (as a server's rate limit is). A call over it
        does not run: the model reads a tool error that says when to try again. ``clock`` is for
        tests.
        """
        limit = _RateLimit(calls, per_seconds, clock)
        return self._with(_changing(lambda t: {"function": limit.guarding(t.function, t.name)}))

    def with_timeout(self, seconds: float) -> Toolset:
        """Each call of these tools may take at most ``seconds`` (the model then retries)."""
        if seconds <= 0:
            raise UsageError(f"a timeout must be positive, not {seconds}")
        return self._with(_changing(lambda t: {"timeout": seconds}))

    def with_retries(self, retries: int) -> Toolset:
        """Each of these tools may send the model back to try again ``retries`` times."""
        if retries < 0:
            raise UsageError(f"retries cannot be negative ({retries})")
        return self._with(_changing(lambda t: {"retries": retries}))

    def _with(self, layer: _Layer) -> Toolset:
        derived = Toolset()
        derived._members, derived._layers = self._members, (*self._layers, layer)
        return derived

    # -- what the loop calls --------------------------------------------------------------------

    async def resolve(self, view: RunView) -> Resolved:
        """The tools to offer at this point of the run, and the hidden ones with the reason.

        Connects to MCP servers the first time. Raises `UsageError` if two tools offered together
        have the same name, and the source's error if a server cannot be reached.
        """
        offered: list[Tool] = []
        hidden: list[tuple[str, str]] = []
        entries = await self._entries()
        reasons: list[str | None] = [None] * len(entries)
        if any(entry.checks for entry in entries):  # the user's filters: in a worker, all at once
            loop = asyncio.get_running_loop()
            reasons = await call_user(lambda: [_hidden_by(e, view, loop) for e in entries])
        for entry, reason in zip(entries, reasons, strict=True):
            if reason is None:
                offered.append(entry.tool)
            else:
                hidden.append((entry.tool.name, reason))
        _check_unique(offered)
        return tuple(offered), (*hidden, *self._unusable())

    def listed(self) -> tuple[frozenset[str], tuple[Tool, ...]] | None:
        """What it holds, known without connecting anywhere: names (as offered) and tools.

        The names have the prefixes applied; the tools are as given. None when it draws on a
        source (an MCP server), listed only when a run asks.
        """
        names: set[str] = set()
        tools: list[Tool] = []
        for member in self._members:
            if isinstance(member, Tool):
                names.add(member.name)
                tools.append(member)
                continue
            inner = member.listed() if isinstance(member, Toolset) else None
            if inner is None:
                return None
            names |= inner[0]
            tools += inner[1]
        for layer in self._layers:
            if isinstance(layer, _Prefix):
                names = {f"{layer.prefix}{name}" for name in names}
        return frozenset(names), tuple(tools)

    def _unusable(self) -> list[tuple[str, str]]:
        """The sources' tools that cannot be offered, named as this toolset offers its tools.

        A call of one (by the name the model would know it by) is then denied with the reason.
        """
        found: list[tuple[str, str]] = []
        for member in self._members:
            if isinstance(member, Toolset):
                found += member._unusable()
            elif not isinstance(member, Tool):
                found += member.unusable
        for layer in self._layers:
            if isinstance(layer, _Prefix):
                found = [(f"{layer.prefix}{name}", why) for name, why in found]
        return found

    async def _entries(self) -> tuple[_Entry, ...]:
        """Every tool with the layers applied: recomputed only when a source's listing changes."""
        base: list[_Entry] = []
        for member in self._members:
            if isinstance(member, Toolset):
                base.extend(await member._entries())
            elif isinstance(member, Tool):
                base.append(_Entry(tool=member))
            else:
                base.extend(_Entry(tool=t) for t in await member.tools())
        base_entries = tuple(base)
        with self._lock:
            if self._cache is not None and _same(self._cache[0], base_entries):
                return self._cache[1]
        entries = base_entries
        for layer in self._layers:
            if isinstance(layer, _Named):
                layer.check(entries)
            entries = tuple(layer(e) for e in entries)
        with self._lock:
            self._cache = (base_entries, entries)
        return entries

    # -- lifecycle ------------------------------------------------------------------------------

    def sources(self) -> tuple[ToolSource, ...]:
        """The MCP servers (and other sources) this toolset draws on, its sub-toolsets' too."""
        found: list[ToolSource] = []
        for member in self._members:
            if isinstance(member, Toolset):
                found.extend(s for s in member.sources() if s not in found)
            elif not isinstance(member, Tool) and member not in found:
                found.append(member)
        return tuple(found)

    async def aclose(self) -> None:
        """Close every source (MCP connections, server processes); they reconnect if used again."""
        for source in self.sources():
            await source.aclose()

    def close(self) -> None:
        """`aclose` from sync code (a notebook cell, the end of a script)."""
        run_sync(self.aclose())

    async def __aenter__(self) -> Toolset:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def choose_tools(
    fixed: Mapping[str, Tool],
    toolsets: Sequence[Toolset],
    view: RunView,
    step: int,
    recorded: Sequence[ToolDefinition] | None = None,
) -> tuple[dict[str, Tool], tuple[tuple[str, str], ...]]:
    """The tools of ``step``: the fixed ones, then what each toolset offers now; and the hidden.

    Filters see ``view`` with ``state.step`` set to ``step``: the step they choose for, whether
    it is being prepared (the state still says the step before) or chosen again on a resume.

    ``recorded`` (a replay that answers tool calls from its recording) lets a toolset that
    cannot be listed (an MCP server that is gone) be offered as recorded: stand-ins made from
    the recorded definitions of the tools nothing else offers. The model is told exactly what
    it was told then, and nothing runs them (a call that reaches one is a tool error).
    """
    if view.state.step != step:  # the loop's view is the state before the step starts
        view = view.model_copy(update={"state": view.state.model_copy(update={"step": step})})
    listings: list[Resolved | None] = []
    for toolset in toolsets:
        try:
            listings.append(await toolset.resolve(view))
        except MCPServerError:
            if recorded is None:
                raise
            listings.append(None)
    listed = set(fixed) | {t.name for found in listings if found for t in found[0]}
    stand_ins = tuple(stand_in(d) for d in recorded or () if d.name not in listed)
    tools, hidden = dict(fixed), list[tuple[str, str]]()
    for found in listings:
        offered, hidden_here = found if found is not None else (stand_ins, ())
        stand_ins = stand_ins if found is not None else ()  # offered once
        hidden += hidden_here
        for offer in offered:
            if offer.name in tools:
                raise UsageError(
                    f"two tools named {offer.name!r} are offered in step {step}: "
                    "give one toolset a prefix (Toolset.prefixed)"
                )
            tools[offer.name] = offer
    return tools, tuple(hidden)


def stand_in(definition: ToolDefinition, *, retries: int = 1) -> Tool:
    """A tool with a recorded definition and nothing behind it, for replays that run no tool.

    The model is offered exactly what it was offered then; a call that reaches it (the live
    part of a fork) is a tool error saying why.
    """

    async def not_at_hand(**arguments: JsonValue) -> str:
        raise UsageError(
            f"tool {definition.name!r} stands in for a recorded tool that is not at hand (a "
            "toolset that could not be listed, a server that is gone): only its recorded calls "
            "can be answered"
        )

    return Tool(
        function=not_at_hand,
        name=definition.name,
        description=definition.description,
        parameters=definition.parameters,
        retries=retries,
    )


def _changing(changes: Callable[[Tool], dict[str, Any]]) -> _Layer:
    """A layer that rebuilds each tool with the options ``changes(tool)`` gives."""

    def layer(entry: _Entry) -> _Entry:
        update = changes(entry.tool)
        if not update:
            return entry
        return entry.model_copy(update={"tool": entry.tool.with_options(**update)})

    return layer


class _Prefix:
    """The layer of `Toolset.prefixed`: a name in front of every tool's."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, entry: _Entry) -> _Entry:
        tool = entry.tool.with_options(name=f"{self.prefix}{entry.tool.name}")
        return entry.model_copy(update={"tool": tool})


class _Named:
    """A layer given tool names, which must all name tools of the toolset when it is applied.

    Approval asked for a name the toolset lacks (a typo, the name from before a prefix) would
    otherwise apply to nothing, and the tool meant to wait would run unasked.
    """

    def __init__(self, layer: _Layer, method: str, names: frozenset[str]) -> None:
        self.layer, self.method, self.names = layer, method, names

    def __call__(self, entry: _Entry) -> _Entry:
        return self.layer(entry)

    def check(self, entries: tuple[_Entry, ...]) -> None:
        """`UsageError` naming the names no tool in ``entries`` has."""
        have = [e.tool.name for e in entries]
        missing = sorted(self.names - set(have))
        if missing:
            raise UsageError(
                f"{self.method} names {', '.join(map(repr, missing))}, which this toolset "
                f"does not have; it has {', '.join(map(repr, have)) or 'no tools'}"
            )


def _hidden_by(entry: _Entry, view: RunView, loop: asyncio.AbstractEventLoop) -> str | None:
    """Why the first filter that hides ``entry`` hides it, or None when every filter offers it.

    Called in a worker thread, so a filter that blocks holds up its own run only; an async
    filter's answer is awaited on ``loop``, which is free (it waits for this thread).
    """
    for check in entry.checks:
        name = getattr(check.filter, "__name__", type(check.filter).__name__)
        try:
            answer = check.filter(check.seen, view)
            if inspect.isawaitable(answer):
                answer = asyncio.run_coroutine_threadsafe(_awaited(answer), loop).result()
        except Exception as exc:  # the reason is read by the model and stored: no secret in it
            return f"filter {name} raised {error_text(exc)}"
        if answer is True:
            continue
        if isinstance(answer, str):
            return answer or f"hidden by filter {name}"
        if answer is False:
            return f"hidden by filter {name}"
        return f"filter {name} answered {answer!r}, not True, False or a reason"
    return None


async def _awaited(answer: Awaitable[object]) -> object:
    return await answer


def _same(a: tuple[_Entry, ...], b: tuple[_Entry, ...]) -> bool:
    """The same tool objects with the same filters (tools compare by identity)."""
    if len(a) != len(b):
        return False
    return all(x.tool is y.tool and x.checks == y.checks for x, y in zip(a, b, strict=True))


def _check_unique(offered: list[Tool]) -> None:
    """Two tools may share a name only if filters never offer both in one step."""
    seen: set[str] = set()
    for offer in offered:
        if offer.name in seen:
            raise UsageError(
                f"two tools are named {offer.name!r} in one toolset: "
                "give one of them a prefix with .prefixed()"
            )
        seen.add(offer.name)


class _RateLimit:
    """A sliding window of call times, shared by the tools of one `Toolset.rate_limited` layer.

    Sync tools run in worker threads, so the window is guarded by a lock.
    """

    def __init__(self, calls: int, per_seconds: float, clock: Callable[[], float]) -> None:
        if calls < 1 or per_seconds <= 0:
            raise UsageError(
                f"a rate limit needs at least one call per a positive time, "
                f"not {calls} per {per_seconds}s"
            )
        self._calls, self._per, self._clock = calls, per_seconds, clock
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def admit(self, name: str) -> None:
        """Count a call of ``name``, or raise `ToolRateLimited` saying when to retry."""
        with self._lock:
            now = self._clock()
            while self._times and now - self._times[0] >= self._per:
                self._times.popleft()
            if len(self._times) >= self._calls:
                wait = self._times[0] + self._per - now
                raise ToolRateLimited(
                    f"rate limit reached for {name!r} ({self._calls} calls per "
                    f"{self._per:g}s): not run; retry in {wait:.1f}s",
                    retry_after=wait,
                )
            self._times.append(now)

    def guarding(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        """``function`` behind this limit, with its signature (and sync or async nature) kept."""
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def limited_async(*args: Any, **kwargs: Any) -> Any:
                self.admit(name)
                return await function(*args, **kwargs)

            return limited_async

        @functools.wraps(function)
        def limited(*args: Any, **kwargs: Any) -> Any:
            self.admit(name)
            return function(*args, **kwargs)

        return limited


ToolItem = Tool | Toolset | Callable[..., Any]
"""What an agent's ``tools=`` takes: tools, functions (made tools with `tool`), toolsets."""


def tool_table(tools: Iterable[ToolItem]) -> tuple[dict[str, Tool], tuple[Toolset, ...]]:
    """The fixed tools by name, and the toolsets whose tools are chosen every step."""
    table: dict[str, Tool] = {}
    toolsets: list[Toolset] = []
    for item in tools:
        if isinstance(item, Toolset):
            toolsets.append(item)
            continue
        if not isinstance(item, Tool) and not callable(item):  # `tool(None)` is the decorator
            raise UsageError(f"tools are functions, tools and toolsets, not {item!r}")
        made = item if isinstance(item, Tool) else tool(item)
        if made.name in table:
            raise ValueError(f"two tools are named {made.name!r}")
        table[made.name] = made
    return table, tuple(toolsets)
