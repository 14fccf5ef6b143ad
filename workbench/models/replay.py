"""`ReplayModel`: the responses of a recorded run, in order, checked against what the model is sent.

A replay is only worth something if it is exact, so the model does not just hand back recorded
responses: before each one it checks that the conversation it is sent is the one that was recorded
for that step (role and parts of every message, and the tools offered), and raises
`ReplayDivergence` saying at which step and how it differs instead of returning an answer to a
question nobody asked. The check is cheap: a conversation that extends the previous request (the
usual case) is compared only from where the previous one ended.

The first request finds its place in the recording by content, so the same model serves a
replay from step 1 and a re-run from any snapshot (``agent.rerun(snapshot, model=replay)``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from workbench._record import Record
from workbench.errors import ReplayDivergence, ReplayExhausted
from workbench.messages import Message, ModelResponse, RetryPrompt, TextPart, ToolCall, ToolResult
from workbench.models.base import Model, ModelRequest
from workbench.models.offline import OfflineModel
from workbench.records import StepRecord

__all__ = ["RecordedCall", "ReplayDivergence", "ReplayExhausted", "ReplayModel"]


class RecordedCall(Record):
    """One recorded model call: the step, what the model was sent and offered, what it answered."""

    step: int
    messages: tuple[Message, ...]
    tools: tuple[str, ...]
    response: ModelResponse


class _Recorded(Protocol):
    @property
    def steps(self) -> Sequence[StepRecord]: ...


class ReplayModel(OfflineModel):
    """Answers with recorded responses, in order, then (optionally) hands over to a live model.

    Use `ReplayModel.from_run`. Every request is kept in `calls`; `replayed` counts the recorded
    responses given; `assert_complete()` checks every replayable response was used.
    """

    __test__ = False

    def __init__(
        self,
        recording: Sequence[RecordedCall],
        *,
        until_step: int | None = None,
        then: Model | None = None,
        name: str | None = None,
    ) -> None:
        self.recording = tuple(recording)
        self.until_step = until_step
        self.then = then
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
        cls, run: _Recorded, until_step: int | None = None, then: Model | None = None
    ) -> ReplayModel:
        """Replay ``run`` (a `RunResult`, or a run loaded from a `RunStore`).

        Responses of steps up to ``until_step`` (all, when None) are replayed; after that the
        ``then`` model answers live. Without ``then``, asking beyond them is a `ReplayExhausted`.
        """
        recording = [
            RecordedCall(
                step=s.index, messages=s.messages_in, tools=s.tools_offered, response=s.response
            )
            for s in run.steps
            if s.response is not None
        ]
        return cls(recording, until_step=until_step, then=then)

    async def request(self, request: ModelRequest) -> ModelResponse:
        """The recorded response for this step, after checking the request matches the recording."""
        self.calls.append(request)
        index = None if self._live else self._next(request)
        if index is None:
            return await self._handover(request)
        recorded = self.recording[index]
        sent = tuple(request.messages)
        self._check(recorded, sent, tuple(t.name for t in request.tools))
        self._cursor, self._last = index + 1, (recorded, sent)
        self.replayed += 1
        return recorded.response

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
        """The first request finds its place in the recording by content."""
        sent = tuple(request.messages)
        same_count = [i for i, r in enumerate(self.recording) if len(r.messages) == len(sent)]
        for i in same_count:
            if _first_difference(self.recording[i].messages, sent, 0) is None:
                return i
        if same_count and same_count[0] < self._limit:
            return same_count[0]  # the check then says how it differs
        if self.then is not None and self.until_step is not None:
            return None  # past the replayed part: the live model answers
        counts = sorted({len(r.messages) for r in self.recording})
        seen = f"{counts[0]}–{counts[-1]}" if counts else "no"
        first = self.recording[0].step if self.recording else 1
        raise ReplayDivergence(
            first,
            f"the model was sent {len(sent)} messages, which matches no recorded step (the "
            f"recorded steps were sent {seen} messages)",
        )

    def _check(
        self, recorded: RecordedCall, sent: tuple[Message, ...], tools: tuple[str, ...]
    ) -> None:
        if tools != recorded.tools:
            raise ReplayDivergence(
                recorded.step,
                f"tools offered differ: recorded {list(recorded.tools)}, sent {list(tools)}",
            )
        start = 0
        if self._last is not None:  # compare only what is new since the previous request
            last_recorded, last_sent = self._last
            n = len(last_sent)
            if (
                len(sent) >= n
                and len(last_recorded.messages) == n
                and sent[:n] == last_sent
                and recorded.messages[:n] == last_recorded.messages
            ):
                start = n
        problem = _first_difference(recorded.messages, sent, start)
        if problem is not None:
            raise ReplayDivergence(recorded.step, problem)

    async def _handover(self, request: ModelRequest) -> ModelResponse:
        self._live = True
        if self.then is None:
            raise ReplayExhausted("the replay has no live model to hand over to")
        return await self.then.request(request)


def _first_difference(
    recorded: tuple[Message, ...], sent: tuple[Message, ...], start: int
) -> str | None:
    """How ``sent`` differs from ``recorded`` (role and parts, not provenance), or None."""
    for i in range(start, min(len(recorded), len(sent))):
        a, b = recorded[i], sent[i]
        if a is b or (a.role == b.role and a.parts == b.parts):
            continue
        return f"message {i} differs: {_message_difference(a, b)}"
    if len(recorded) == len(sent):
        return None
    if len(sent) > len(recorded):
        extra = f"first extra: {_describe_message(sent[len(recorded)])}"
    else:
        extra = f"first missing: {_describe_message(recorded[len(sent)])}"
    return f"the model was sent {len(sent)} messages, the recording has {len(recorded)} ({extra})"


def _message_difference(recorded: Message, sent: Message) -> str:
    if recorded.role != sent.role:
        return f"recorded a {recorded.role} message, sent a {sent.role} message"
    for j, (a, b) in enumerate(zip(recorded.parts, sent.parts, strict=False)):
        if a != b:
            return f"({sent.role}) part {j}: recorded {describe_part(a)}, sent {describe_part(b)}"
    return f"({sent.role}) recorded {len(recorded.parts)} parts, sent {len(sent.parts)} parts"


def _describe_message(message: Message) -> str:
    first = describe_part(message.parts[0]) if message.parts else "no parts"
    return f"{message.role} message: {first}"


def describe_part(part: TextPart | ToolCall | ToolResult | RetryPrompt) -> str:
    """A one-line description of a part for error messages and diffs (long text clipped)."""
    match part:
        case TextPart():
            return f"text {_clip(part.text)}"
        case ToolCall():
            args = (
                json.dumps(part.arguments, sort_keys=True)
                if part.invalid_arguments is None
                else part.invalid_arguments
            )
            return f"call {part.name}({_clip(args, 60, quote=False)}) [{part.call_id}]"
        case ToolResult():
            error = " (error)" if part.is_error else ""
            return f"result of {part.call_id}{error} {_clip(part.content)}"
        case RetryPrompt():
            return f"retry prompt {_clip(part.content)}"


def _clip(text: str, limit: int = 60, *, quote: bool = True) -> str:
    cut = text if len(text) <= limit else f"{text[:limit]}…"
    return repr(cut) if quote else cut
