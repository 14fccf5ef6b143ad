"""The tool side of a replay: what each recorded call did, and the sub-runs it made.

A `ReplayModel` built from a run keeps, beside each recorded response, the final outcome of every
call that response asked for (a call paused and resumed counts once, as it ended) and the sub-runs
the call started. When the model gives a recorded response it says so (`ToolRecording.given`), and
the loop's tool runner asks about each call of that response (`ToolRecording.for_call`):

- with ``tools="replay"``, a plain tool's call is answered with its recorded outcome and nothing
  runs; a call whose name or arguments differ from the recorded one, or that the recording has
  no result for, is a `ReplayDivergence`, never a silent live call;
- a sub-agent's call runs the sub-agent, on a replay of the sub-run it made (`SubrunRecording`),
  so a whole tree replays from its own recordings, each sub-run keyed by the call that started it;
- a response the live model gave (after ``until_step``) has nothing recorded: its calls run live.

The recorded tool definitions of each replayed step are kept too: a toolset that cannot be listed
any more (an MCP server that is gone) is offered as recorded (`workbench.toolsets.choose_tools`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import Field

from workbench._record import Record
from workbench.errors import ReplayDivergence
from workbench.messages import JsonValue, ToolCall, ToolDefinition
from workbench.models.request_diff import RequestDiff
from workbench.records import RecordedRun, RunResult, ToolOutcome
from workbench.tools import SubrunRecording

__all__ = ["RecordedCalls", "ReplayedCall", "ToolRecording"]

_RESULTS = ("ok", "error", "retry")
"""Outcomes that are a result the model read; the others (denied, pending) ran nothing."""


class RecordedCalls(Record):
    """The calls of one recorded response: each call's final outcome and the sub-runs it made."""

    step: int
    kept: bool = True
    """False for a recording of responses alone (`ReplayModel(recording)`): nothing is known of
    its calls, so they run live (and cannot be answered from it)."""
    outcomes: dict[str, ToolOutcome] = Field(default_factory=dict)
    subruns: dict[str, tuple[RunResult, ...]] = Field(default_factory=dict)


class ReplayedCall(Record):
    """How the tool runner answers one call of a replayed response."""

    outcome: ToolOutcome | None = None
    """The recorded outcome to answer with (nothing runs); None: the tool runs."""
    subruns: SubrunRecording | None = None
    """For a tool that runs: the sub-runs a sub-agent tool replays (empty: it made none)."""


class ToolRecording:
    """What a recorded run's tool calls did, response by response, for a `ReplayModel`."""

    def __init__(
        self,
        responses: Sequence[RecordedCalls] = (),
        definitions: dict[int, tuple[ToolDefinition, ...]] | None = None,
        *,
        strict: bool = False,
        departs: Literal["fail", "live"] = "fail",
    ) -> None:
        self.responses = tuple(responses)
        """One entry per recorded response, in the order of the `ReplayModel`'s recording."""
        self.definitions = definitions or {}
        """The tool definitions of each replayed step, by step index."""
        self.strict = strict
        self.departs: Literal["fail", "live"] = departs
        """What the sub-runs' replays do where they depart (see `ReplayModel`)."""
        self._given: RecordedCalls | None = None
        self._asked = False
        """Whether the model has answered yet: until then, a run resumed mid-step (its response
        replayed before the pause, maybe in another process) finds the response by its step."""

    @classmethod
    def of_runs(
        cls,
        runs: Iterable[RecordedRun],
        until_step: int | None,
        *,
        strict: bool,
        departs: Literal["fail", "live"] = "fail",
    ) -> ToolRecording:
        """The recording of ``runs`` (one run, or the sub-runs of one call, in order)."""
        responses: list[RecordedCalls] = []
        definitions: dict[int, tuple[ToolDefinition, ...]] = {}
        for run in runs:
            responses += _responses(run)
            for snapshot in run.snapshots:
                if until_step is None or snapshot.step <= until_step:
                    definitions.setdefault(snapshot.step, snapshot.tool_definitions)
        return cls(responses, definitions, strict=strict, departs=departs)

    def given(self, index: int | None, step: int = 0) -> None:
        """The model answered with recorded response ``index`` of ``step`` (None: a live answer)."""
        self._asked = True
        if index is None:
            self._given = None
        elif index < len(self.responses):
            self._given = self.responses[index]
        else:  # a recording of responses alone (`ReplayModel(recording)`): no call was kept
            self._given = RecordedCalls(step=step, kept=False)

    def for_call(
        self, call: ToolCall, step: int, *, delegates: bool, results: bool
    ) -> ReplayedCall | None:
        """How to answer ``call`` of ``step``; None when its response was live (it runs live).

        ``delegates``: the tool is a sub-agent's; ``results``: plain tools are answered from the
        recording (``tools="replay"``). Raises `ReplayDivergence` when the call departs from the
        recorded one, or its tool now starts no sub-run where it started one.
        """
        given = self._given if self._asked else self._paused_at(step)
        if given is None or not (given.kept or results):
            return None
        outcome = given.outcomes.get(call.call_id)
        subruns = given.subruns.get(call.call_id, ())
        if subruns and not delegates:
            raise ReplayDivergence(
                given.step,
                f"tool call {call.call_id} ({call.name}) started a sub-run in the recording; "
                f"{call.name!r} is not a sub-agent now",
            )
        if results:
            self._check(given.step, call, outcome)
        if delegates:
            return ReplayedCall(
                subruns=SubrunRecording(
                    runs=subruns,
                    strict=self.strict,
                    tools="replay" if results else "live",
                    departs=self.departs,
                )
            )
        return ReplayedCall(outcome=outcome if results else None)

    def _paused_at(self, step: int) -> RecordedCalls | None:
        """The response of a replayed ``step`` that a run resumed before any answer paused in."""
        if step not in self.definitions:  # the definitions cover the replayed steps
            return None
        return next((r for r in reversed(self.responses) if r.step == step), None)

    def _check(self, step: int, call: ToolCall, outcome: ToolOutcome | None) -> None:
        """The call must be the recorded one, and the recording must hold its result."""
        if outcome is None:
            raise ReplayDivergence(
                step, f"the recording has no tool call {call.call_id} ({call.name}) to replay"
            )
        if (outcome.name, outcome.arguments) != (call.name, call.arguments):
            diff = RequestDiff(
                kind="tool_call",
                where=f"tool call {call.call_id}",
                recorded=_described(outcome.name, outcome.arguments),
                sent=_described(call.name, call.arguments),
            )
            raise ReplayDivergence.at(step, diff)
        if outcome.status not in _RESULTS:
            raise ReplayDivergence(
                step,
                f"the recording has no result for tool call {call.call_id} ({call.name}): it was "
                f"{outcome.status} ({outcome.content}), and a replay runs no tool",
            )


def _responses(run: RecordedRun) -> list[RecordedCalls]:
    """One entry per step with a response, with its calls' final outcomes and sub-runs."""
    final: dict[tuple[int, str], ToolOutcome] = {}
    for record in run.steps:
        for outcome in record.tool_outcomes:
            final[(record.index, outcome.call_id)] = outcome  # a resumed call's result wins
    unclaimed = list(run.children)
    responses = []
    for record in run.steps:
        if record.response is None:
            continue
        mine = {c: o for (s, c), o in final.items() if s == record.index}
        subruns = {}
        for call_id, outcome in mine.items():
            if outcome.subagent is not None:
                subruns[call_id] = _claim(unclaimed, call_id, outcome.subagent.run_id)
        responses.append(RecordedCalls(step=record.index, outcomes=mine, subruns=subruns))
    return responses


def _claim(unclaimed: list[RunResult], call_id: str, last_run_id: str) -> tuple[RunResult, ...]:
    """The sub-runs one call made (more than one when SubagentStop hooks gave extra turns)."""
    taken: list[RunResult] = []
    for child in list(unclaimed):
        if child.parent_call_id != call_id:
            continue
        taken.append(child)
        unclaimed.remove(child)
        if child.run_id == last_run_id:
            break
    return tuple(taken)


def _described(name: str, arguments: dict[str, JsonValue]) -> str:
    return f"{name}({json.dumps(arguments, sort_keys=True, ensure_ascii=False)})"
