"""Breakpoints: where `AgentRun.run_to_breakpoint` stops a run so it can be looked at.

A breakpoint is checked after every phase, against what comes next, so the run stops *before*
the thing it names happens and the user can still change it (edit or drop a pending call, as
between any two phases):

- `Break.on_tool("delete_file")`: the model asked for that tool; stops before TOOLS runs it.
- `Break.at_step(3)`: step 3 is prepared (snapshot taken, messages shaped); stops before its
  model call.
- `Break.before(Phase.TOOLS)`: the next phase is that phase.
- `Break.when(lambda view: ...)`: a predicate of the run's `RunView`. A predicate that raises
  stops the run there too, with the error kept on the breakpoint it returns: a broken breakpoint
  never crashes the run it watches.
- `Break.on_error()`: a tool call failed (its outcome is an error); stops after the TOOLS phase
  it was part of, before the model reads the error.

A breakpoint given to a run that calls sub-agents has a scope: ``"run"`` fires in that run only,
``"tree"`` also in every sub-run under it (any depth), where `run_to_breakpoint` stops inside the
sub-run (see `workbench.stepping`). `on_tool` and `on_error` are ``"tree"`` by default (stop
before that tool runs, or where a tool failed, whoever calls it); the others are ``"run"`` by
default, since a step number or a phase means something different in each sub-run; each factory
takes ``scope=`` to choose.

A breakpoint that names a tool no agent of the tree has can never fire: `AgentRun.add_breakpoint`
(and so ``agent.start(breakpoints=...)`` and the Stepper) warns with a `BreakpointWarning`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from workbench._record import Record
from workbench._sync import call_user
from workbench.conditions import RunView
from workbench.redact import redacted
from workbench.state import ErrorInfo, Phase

__all__ = ["Break", "BreakpointWarning", "first_hit", "never_fires", "parse_break"]

BreakKind = Literal["tool", "step", "phase", "when", "error"]
Scope = Literal["run", "tree"]
_TREE_KINDS = ("tool", "error")
"""The kinds whose scope is the whole tree unless said otherwise."""


class BreakpointWarning(UserWarning):
    """A breakpoint that can never fire: it names a tool no agent of the run's tree has."""


class Break(Record):
    """One breakpoint; make them with `on_tool`, `on_error`, `at_step`, `before` or `when`."""

    kind: BreakKind
    tool: str | None = None
    step: int | None = None
    phase: Phase | None = None
    predicate: Callable[[RunView], bool] | None = None
    label: str = ""
    scope: Scope = "run"
    """Where it fires: the run it was given to ("run") or that run and its sub-runs ("tree")."""
    error: str | None = None
    """Set on the breakpoint `first_hit` returns when its predicate raised."""
    exception: ErrorInfo | None = None
    """What the predicate raised, with its traceback (set with ``error``)."""

    @property
    def traceback(self) -> str | None:
        """Where the predicate raised, if it did: the user's frames first, redacted."""
        return self.exception.traceback if self.exception is not None else None

    def __str__(self) -> str:
        where = ""
        if self.scope != ("tree" if self.kind in _TREE_KINDS else "run"):  # not the default
            where = " (sub-runs too)" if self.scope == "tree" else " (this run only)"
        return self.label + where + (f" (raised: {self.error})" if self.error else "")

    @classmethod
    def on_tool(cls, name: str, *, scope: Scope = "tree") -> Break:
        """Stop before a call to tool ``name`` runs (by default in sub-runs too)."""
        return cls(kind="tool", tool=name, label=f"on tool {name!r}", scope=scope)

    @classmethod
    def on_error(cls, *, scope: Scope = "tree") -> Break:
        """Stop after a tool call fails (by default in sub-runs too), before the model reads it.

        A failed call is one whose outcome is an error: the tool raised, timed out, or a
        sub-agent's run failed. Stopped there, look at the error, fix the tool and re-run from
        the step (`Agent.rerun`), or drop into the next phase.
        """
        return cls(kind="error", label="on a tool error", scope=scope)

    @classmethod
    def at_step(cls, step: int, *, scope: Scope = "run") -> Break:
        """Stop once step ``step`` is prepared, before its model call."""
        if step < 1:
            raise ValueError(f"steps count from 1, got {step}")
        return cls(kind="step", step=step, label=f"at step {step}", scope=scope)

    @classmethod
    def before(cls, phase: Phase, *, scope: Scope = "run") -> Break:
        """Stop before every ``phase``."""
        label = f"before {Phase(phase).value}"
        return cls(kind="phase", phase=Phase(phase), label=label, scope=scope)

    @classmethod
    def when(
        cls,
        predicate: Callable[[RunView], bool],
        label: str | None = None,
        *,
        scope: Scope = "run",
    ) -> Break:
        """Stop after any phase where ``predicate(view)`` is true."""
        name = label or getattr(predicate, "__name__", "predicate")
        return cls(kind="when", predicate=predicate, label=f"when {name}", scope=scope)

    async def hits(
        self, view: RunView, ran: Phase, following: Phase | None, *, failed: bool = False
    ) -> bool:
        """Whether this breakpoint fires after phase ``ran``, with ``following`` next.

        ``failed``: a tool call of the phase that ran failed (what `on_error` watches).

        A predicate is the user's code: it runs in a worker thread (`call_user`), so one that
        blocks holds up only the run it watches, never the loop every other run is on.
        """
        state = view.state
        match self.kind:
            case "tool":
                calls = state.unanswered_calls() if following is Phase.TOOLS else ()
                return any(c.name == self.tool for c in calls)
            case "step":
                return ran is Phase.PREPARE and state.step == self.step
            case "phase":
                return following is self.phase
            case "error":
                return ran is Phase.TOOLS and failed
            case "when":
                assert self.predicate is not None
                return bool(await call_user(self.predicate, view))


def parse_break(text: str) -> Break:
    """A breakpoint from its short form: ``tool:NAME``, ``step:N``, ``before:PHASE`` or ``error``.

    Typed by hand (the Stepper's text box), so the kind and the phase ignore case and spaces;
    a tool's name is kept as written, since names are compared exactly.

    >>> parse_break("tool:delete_file").label, parse_break("before: TOOLS").label
    ("on tool 'delete_file'", 'before tools')
    """
    kind, _, value = text.partition(":")
    kind, value = kind.strip().lower(), value.strip()
    if kind == "error" and not value:
        return Break.on_error()
    if kind == "tool" and value:
        return Break.on_tool(value)
    if kind == "step":
        if not value.isdigit():
            raise ValueError(f"not a breakpoint: {text!r} (step:N takes a step number)")
        try:
            return Break.at_step(int(value))
        except ValueError as exc:
            raise ValueError(f"not a breakpoint: {text!r} ({exc})") from None
    if kind == "before":
        phases = {p.value: p for p in Phase}
        if value.lower() not in phases:
            raise ValueError(
                f"not a breakpoint: {text!r} (before:PHASE takes one of {', '.join(phases)})"
            )
        return Break.before(phases[value.lower()])
    raise ValueError(f"not a breakpoint: {text!r} (write tool:NAME, step:N, before:PHASE or error)")


async def first_hit(
    breakpoints: Sequence[Break],
    view: RunView,
    ran: Phase,
    following: Phase | None,
    redact: Callable[[str], str] = redacted,
    *,
    failed: bool = False,
) -> Break | None:
    """The first breakpoint that fires after phase ``ran``, or None.

    ``redact`` is the run's redactor: what a predicate raised is kept through it. ``failed``: a
    tool call of that phase failed.
    """
    for breakpoint in breakpoints:
        try:
            if await breakpoint.hits(view, ran, following, failed=failed):
                return breakpoint
        except Exception as exc:  # a predicate that raises stops the run, recorded
            kept = ErrorInfo.of(exc, phase=ran, step=view.state.step, redact=redact)
            return breakpoint.model_copy(
                update={"error": f"{kept.type}: {kept.message}", "exception": kept}
            )
    return None


def never_fires(breakpoint: Break, tools: frozenset[str] | None) -> str | None:
    """Why ``breakpoint`` can never fire in a tree whose agents have ``tools``, or None.

    ``tools`` None: not all of them are known before a run lists them (an MCP server's), so
    nothing can be said.
    """
    if breakpoint.kind != "tool" or tools is None or breakpoint.tool in tools:
        return None
    known = ", ".join(sorted(tools)) or "none"
    missing = (
        f"this run has no tool {breakpoint.tool!r}"
        if breakpoint.scope == "run"
        else f"no agent of this run's tree has a tool {breakpoint.tool!r}"
    )
    return f"breakpoint {breakpoint} can never fire: {missing} (tools: {known})"
