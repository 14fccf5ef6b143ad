"""`LoopConfig`: everything one execution of the loop needs that is not run state.

An `Agent` turns its configuration (and a run's overrides: model, tools, settings) into one
`LoopConfig` per execution. It sits below the loop and the tool runner so that both read it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from workbench.conditions import StopCondition
from workbench.guards import ToolGuard
from workbench.history import HistoryProcessor
from workbench.hooks.runner import AnyHook
from workbench.models.base import Model, ModelSettings
from workbench.models.replay_tools import ToolRecording
from workbench.observing import RunObserver
from workbench.redact import Redactor
from workbench.subagent import SubagentLimits
from workbench.tools import Tool
from workbench.toolsets import Toolset

__all__ = ["DEFAULT_WRAP_UP", "LoopConfig"]

DEFAULT_WRAP_UP = (
    "This is your last step: tools are now disabled. Answer now with the best response you can "
    "give from what you already know."
)


@dataclass(frozen=True)
class LoopConfig:
    """Everything the loop needs that is not run state."""

    model: Model
    tools: Mapping[str, Tool]
    stop: StopCondition
    toolsets: tuple[Toolset, ...] = ()
    """Toolsets whose tools are chosen anew before every model call (`Toolset.resolve`)."""
    guards: tuple[ToolGuard, ...] = ()
    history_processors: tuple[HistoryProcessor, ...] = ()
    settings: ModelSettings = field(default_factory=lambda: ModelSettings())
    system_prompt: str | None = None
    wrap_up_message: str | None = DEFAULT_WRAP_UP
    grace_tool: str | None = None
    """A completion tool the model may call in one grace turn after a step or time limit."""
    response_retries: int = 1
    observers: tuple[RunObserver, ...] = ()
    on_text_delta: Callable[[str], None] | None = None
    hooks: tuple[AnyHook, ...] = ()
    max_hook_turns: int = 3
    """How many extra turns Stop hooks may force in one run (across pauses)."""
    subagents: SubagentLimits = field(default_factory=SubagentLimits)
    """How large the tree of sub-agents this run roots may grow."""
    subrun_observer: Callable[[Model], RunObserver] | None = None
    """Makes the telemetry observer of a sub-run whose agent has no telemetry of its own, so the
    whole tree lands in one trace (the root agent's `Telemetry.observer`)."""
    tool_recording: ToolRecording | None = None
    """In a replay: what the recorded tool calls did (the `ReplayModel`'s), for the calls of
    the responses it replays: their sub-runs replay from it, and their results with
    ``replay_tools``."""
    replay_tools: bool = False
    """Answer the replayed responses' tool calls from ``tool_recording``: nothing recorded runs."""
    tool_fixes: Mapping[str, Tool] = field(default_factory=dict)
    """A re-run's tools that replace others by name, in its sub-runs too (`Agent.start_rerun`):
    the tree the run roots carries them to each sub-agent's run."""
    redactor: Redactor = field(default_factory=Redactor)
    """The run's redactor (the telemetry's patterns and the model's key): what the run keeps of
    an exception (its message and traceback) goes through it."""
