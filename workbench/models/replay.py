"""`ReplayModel`: the responses of a recorded run, in order, checked against what the model is sent.

A replay is only worth something if it is exact, so the model does not just hand back recorded
responses: before each one it checks that the conversation it is sent is the one that was recorded
for that step (role and parts of every message, and the tools offered), and raises
`ReplayDivergence` saying at which step and how it differs instead of returning an answer to a
question nobody asked. The check is cheap: a conversation that extends the previous request (the
usual case) is compared only from where the previous one ended.

The first request finds its place in the recording by content, so the same model serves a
replay from step 1 and a re-run from any snapshot (``agent.rerun(snapshot, model=replay)``).

A model built from a run also keeps what its tool calls did (`ToolRecording`): the sub-runs they
made, which replay from their own recordings (the whole tree runs offline), and with
``tools="replay"`` their results, so a replay executes no tool at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from workbench._record import Record
from workbench.errors import ReplayDivergence, ReplayExhausted, UsageError
from workbench.messages import Message, ModelResponse
from workbench.models.base import Model, ModelRequest
from workbench.models.offline import OfflineModel
from workbench.models.replay_tools import ToolRecording
from workbench.models.request_diff import (
    RecordedRequest,
    describe_part,
    first_difference,
    messages_difference,
    tool_payload,
)
from workbench.records import RecordedRun, StepContext, StepRecord
from workbench.tools import SubrunRecording

__all__ = [
    "Departs",
    "RecordedCall",
    "ReplayDivergence",
    "ReplayExhausted",
    "ReplayModel",
    "ToolReplayMode",
    "describe_part",
    "tool_replay_of",
]

ToolReplayMode = Literal["live", "replay"]
"""``"live"``: tools run; ``"replay"``: the calls of replayed responses are answered from the
recording and nothing runs."""
Departs = Literal["fail", "live"]
"""What a replay does with a request that departs from the recording: ``"fail"`` raises
`ReplayDivergence` (an exact replay), ``"live"`` hands over to the live model from there on (a
re-run that forks: what is the same replays, what changed goes live)."""


class RecordedCall(Record):
    """One recorded model call: the step, what the model was asked, what it answered."""

    step: int
    request: RecordedRequest
    response: ModelResponse


def _recorded_call(step: StepRecord, snapshot: StepContext | None) -> RecordedCall:
    """A step as a recorded call; its snapshot adds the settings and the tool definitions.

    Snapshots keep each offered tool's definition, so strict replay names the tool and the field
    that changed; older snapshots kept only a hash of the agent's tools (kept only when all of
    them were offered).
    """
    assert step.response is not None
    settings = tools_hash = definitions = None
    if snapshot is not None:
        settings = snapshot.model_settings
        if tuple(d.name for d in snapshot.tool_definitions) == step.tools_offered:
            definitions = tuple(tool_payload(d) for d in snapshot.tool_definitions)
        elif snapshot.tool_names == step.tools_offered:
            tools_hash = snapshot.tool_schema_hash
    request = RecordedRequest(
        messages=step.messages_in,
        tools=step.tools_offered,
        definitions=definitions,
        tools_hash=tools_hash,
        settings=settings,
    )
    return RecordedCall(step=step.index, request=request, response=step.response)


class ReplayModel(OfflineModel):
    """Answers with recorded responses, in order, then (optionally) hands over to a live model.

    Use `ReplayModel.from_run`. Every request is kept in `calls`; `replayed` counts the recorded
    responses given; `assert_complete()` checks every replayable response was used.

    Every request is checked against the recorded one: the messages and the names of the tools
    offered always; with ``strict=True`` also the settings and the tool definitions, so a replay
    under changed settings or a changed tool schema fails at once instead of passing silently.

    ``tools="replay"`` answers the tool calls of each replayed response from the recording
    (``tool_recording``), so nothing recorded runs again; see `workbench.models.replay_tools`.

    ``departs="live"`` makes a request that departs from the recording (a tool now answers
    differently, a message was edited) the point where the ``then`` model takes over, here and
    in the sub-runs it replays (each hands over to its own agent's model): what `Agent.rerun`
    does by default. The default, ``"fail"``, raises `ReplayDivergence` there.
    """

    __test__ = False

    def __init__(
        self,
        recording: Sequence[RecordedCall],
        *,
        until_step: int | None = None,
        then: Model | None = None,
        name: str | None = None,
        strict: bool = False,
        tools: ToolReplayMode = "live",
        tool_recording: ToolRecording | None = None,
        departs: Departs = "fail",
    ) -> None:
        if tools not in ("live", "replay"):
            raise UsageError(f'tools= takes "live" or "replay", not {tools!r}')
        if departs not in ("fail", "live"):
            raise UsageError(f'departs= takes "fail" or "live", not {departs!r}')
        if departs == "live" and then is None:
            raise UsageError('departs="live" hands over to a live model: give it with then=')
        self.departs: Departs = departs
        self.recording = tuple(recording)
        self.until_step = until_step
        self.then = then
        self.strict = strict
        self.tools: ToolReplayMode = tools
        self.tool_recording = tool_recording or ToolRecording(strict=strict, departs=departs)
        """What the recorded calls did, for the calls of the responses this model replays."""
        self.calls: list[ModelRequest] = []
        self.replayed = 0
        first = self.recording[0].response.model_name if self.recording else ""
        self._name = name or f"replay:{first or 'model'}"
        self._limit = sum(1 for r in self.recording if until_step is None or r.step <= until_step)
        self._cursor: int | None = None
        self._live = False
        self._last: tuple[RecordedCall, tuple[Message, ...]] | None = None

    @classmethod
    def from_run(
        cls,
        run: RecordedRun,
        until_step: int | None = None,
        then: Model | None = None,
        *,
        strict: bool = False,
        tools: ToolReplayMode = "live",
        departs: Departs = "fail",
    ) -> ReplayModel:
        """Replay ``run`` (a `RunResult`, or a run loaded from a `RunStore`), sub-runs included.

        Responses of steps up to ``until_step`` (all, when None) are replayed; after that the
        ``then`` model answers live. Without ``then``, asking beyond them is a `ReplayExhausted`.
        ``until_step=0`` forks before step 1: nothing is replayed or checked, and every request,
        the first included, goes to ``then`` (the proxy's ``--until-step 0`` forwards them all).
        ``strict`` also compares settings and tool definitions (see the class); ``tools="replay"``
        answers the replayed responses' tool calls from the recording; ``departs="live"`` goes
        on with ``then`` from the first request that departs from the recording (see the class).
        """
        return cls._of_runs((run,), until_step, then, strict=strict, tools=tools, departs=departs)

    @classmethod
    def of_subruns(cls, recorded: SubrunRecording, then: Model | None = None) -> ReplayModel:
        """The replay of the sub-runs one tool call made (a sub-agent's model in a tree replay).

        ``then`` is the sub-agent's own model: where the recording departs (``departs="live"``)
        it answers from there on.
        """
        departs = recorded.departs if then is not None else "fail"
        return cls._of_runs(
            recorded.runs,
            None,
            then if departs == "live" else None,
            strict=recorded.strict,
            tools=recorded.tools,
            departs=departs,
        )

    @classmethod
    def _of_runs(
        cls,
        runs: Sequence[RecordedRun],
        until_step: int | None,
        then: Model | None,
        *,
        strict: bool,
        tools: ToolReplayMode,
        departs: Departs = "fail",
    ) -> ReplayModel:
        recording = []
        for run in runs:
            snapshots = {s.step: s for s in run.snapshots}
            recording += [
                _recorded_call(s, snapshots.get(s.index))
                for s in run.steps
                if s.response is not None
            ]
        return cls(
            recording,
            until_step=until_step,
            then=then,
            strict=strict,
            tools=tools,
            tool_recording=ToolRecording.of_runs(runs, until_step, strict=strict, departs=departs),
            departs=departs,
        )

    async def request(self, request: ModelRequest) -> ModelResponse:
        """The recorded response for this step, after checking the request matches the recording."""
        self.calls.append(request)
        index = None if self._live else self._next(request)
        if index is None:
            return await self._handover(request)
        recorded = self.recording[index]
        sent = tuple(request.messages)
        if self._departs(recorded, sent, request):
            return await self._handover(request)  # the run forks here: live from now on
        self._cursor, self._last = index + 1, (recorded, sent)
        self.replayed += 1
        self.tool_recording.given(index, recorded.step)
        return recorded.response

    def _departs(
        self, recorded: RecordedCall, sent: tuple[Message, ...], request: ModelRequest
    ) -> bool:
        """Whether the request departs from the recording and goes live (else ``"fail"`` raises).

        Answered before the handover, not inside an ``except`` around it: whatever the live model
        raises then (a dropped connection, a used-up script) would carry the divergence, which is
        no error, as the exception it happened "during the handling of" in every traceback.
        """
        try:
            self._check(recorded, sent, request)
        except ReplayDivergence:
            if self.departs == "fail":
                raise
            return True
        return False

    @property
    def last_step(self) -> int | None:
        """The recorded step whose response was given last (None before the first)."""
        return None if self._last is None else self._last[0].step

    def assert_complete(self) -> None:
        """Raise AssertionError unless every replayable response was used."""
        assert self.replayed == self._limit - (self._start or 0), (
            f"ReplayModel gave {self.replayed} of its {self._limit} replayable responses"
        )

    @property
    def _start(self) -> int | None:
        return None if self._cursor is None else self._cursor - self.replayed

    def _next(self, request: ModelRequest) -> int | None:
        """Which recorded call answers this request; None to hand over to the live model."""
        index = self._locate(request) if self._cursor is None else self._cursor
        if index is None or index < self._limit:
            return index
        if self.then is None:
            raise ReplayExhausted(
                f"the replay has {self._limit} recorded responses"
                + (f" up to step {self.until_step}" if self.until_step is not None else "")
                + " and was asked for another; pass then=<model> to go on live"
            )
        return None

    def _locate(self, request: ModelRequest) -> int | None:
        """Where the first request is in the recording, found by content; None if it is empty.

        A re-run may start at any step, so the step recorded with exactly these messages is it.
        A request that departs is placed at the step nearest by position (as many messages, else
        the nearest count, the earlier on a tie): inside the replayed part the check then names
        the first message that differs there; past it (``until_step``) the live model answers.
        """
        sent = tuple(request.messages)
        for i, recorded in enumerate(self.recording):
            messages = recorded.request.messages
            if len(messages) == len(sent) and messages_difference(messages, sent) is None:
                return i
        if not self.recording:
            return None
        return min(
            range(len(self.recording)),
            key=lambda i: abs(len(self.recording[i].request.messages) - len(sent)),
        )

    def _check(
        self, recorded: RecordedCall, sent: tuple[Message, ...], request: ModelRequest
    ) -> None:
        start = 0
        if self._last is not None:  # compare only what is new since the previous request
            last_recorded, last_sent = self._last
            n = len(last_sent)
            if (
                len(sent) >= n
                and len(last_recorded.request.messages) == n
                and sent[:n] == last_sent
                and recorded.request.messages[:n] == last_recorded.request.messages
            ):
                start = n
        diff = first_difference(
            recorded.request, sent, request.tools, request.settings, start=start, strict=self.strict
        )
        if diff is not None:
            raise ReplayDivergence.at(recorded.step, diff)

    async def _handover(self, request: ModelRequest) -> ModelResponse:
        self._live = True
        self.tool_recording.given(None)
        if self.then is None:
            raise ReplayExhausted("the replay has no live model to hand over to")
        return await self.then.request(request)


def tool_replay_of(model: Model, replay_tools: bool) -> tuple[ToolRecording | None, bool]:
    """The recording a run's tool calls are checked against, and whether it answers them.

    A `ReplayModel` brings its recording; ``tools="replay"`` on a re-run switches the model to
    answer the calls from it, and it stays so, so a paused fork resumed on the same model
    (``agent.resume(state, model=replay)``) does not run the approved calls live. Any other
    model answers live, so it has nothing recorded to answer with: asking for ``tools="replay"``
    then is a `UsageError` rather than a silent live call.
    """
    if isinstance(model, ReplayModel):
        if replay_tools:
            model.tools = "replay"
        return model.tool_recording, model.tools == "replay"
    if replay_tools:
        raise UsageError(
            f'tools="replay" answers tool calls from a recording, but the model {model.name!r} '
            "is not a ReplayModel: nothing it answers was recorded. Re-run with "
            'model=ReplayModel.from_run(run, until_step=N, then=<live model>, tools="replay") to '
            "replay steps up to N and go on live; without the recorded run (a trace from "
            "elsewhere), leave tools= unset and the tools run live"
        )
    return None, False
