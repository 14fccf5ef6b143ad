"""`Replayer`: the proxy's answers from a group of recorded runs, each conversation from its own.

A task is often several conversations: Claude Code's session (its main conversation, a title
asked of a small model, sub-agents), an agent that plans in one conversation and acts in
another, an eval's samples. The proxy replays a group of runs as one (several ``--replay``, or a
session id, which names the runs recorded under it): each conversation that comes in finds the
recorded run it is by its first request, strictly (a run not yet replayed before one that has
been), and is answered from that run's `ReplayModel` from then on. A request none of them
recorded departs: the client is told how it differs from the first run it could have been.

With ``until_step`` each conversation goes live after its step N (0: all of them from the
start). Once one has, the replay has forked: a conversation that none of the runs recorded is
taken to be the fork's doing (a sub-agent the new answers started) and goes live too, where
before the fork it would have departed.

A step the client tried more than once (it asked again after a failed try: an SDK's retries)
is answered as it went: each failed try with its recorded error and status, then the answer;
a step whose every try failed, each with its error and status. So the client retries (and
gives up) as it did, and the replay records the same steps, tried as often.

Some tools answer differently every time they run: Codex's ``exec_command`` says how long the
command took and gives its output a random chunk id. A replay stays strict about them only
through a tolerance the user declares, per tool (`Tolerance`): the results of that tool are
compared after it, on both sides, and a departure says which tolerances it was compared under.
Nothing is matched loosely that the user did not name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from workbench.errors import ReplayDivergence, ReplayExhausted
from workbench.messages import Message, ModelResponse, ToolResult
from workbench.models.base import ModelRequest
from workbench.models.replay import ReplayModel
from workbench.models.request_diff import messages_difference
from workbench.records import ModelTry, RunResult, StepRecord
from workbench.state import RerunOf

__all__ = ["Normalizer", "Replayer", "Tolerance"]

Normalizer = str | re.Pattern[str] | Callable[[str], str]
"""How a tool's results are compared: a pattern whose matches are left out, or a function."""

_OUT = "…"
"""What a pattern's match is replaced with on both sides."""


@dataclass(frozen=True)
class Tolerance:
    """A declared tolerance: the results of tool `tool` are compared after `normalize`."""

    tool: str
    normalize: Callable[[str], str]
    shown: str
    """How the tolerance reads in a departure's message (the pattern, or the function)."""

    @classmethod
    def of(cls, tool: str, normalizer: Normalizer) -> Tolerance:
        """A tolerance from a pattern (its matches replaced by ``…``) or a function."""
        if callable(normalizer):
            shown = getattr(normalizer, "__qualname__", repr(normalizer))
            return cls(tool, normalizer, shown)
        pattern = re.compile(normalizer)
        return cls(tool, lambda text: pattern.sub(_OUT, text), f"r{pattern.pattern!r} → {_OUT!r}")


def _tolerated(
    messages: Sequence[Message], tolerances: Mapping[str, Tolerance]
) -> tuple[Message, ...]:
    """``messages`` with each tolerated tool's results normalized (the others as they are)."""
    if not tolerances:
        return tuple(messages)
    return tuple(_message_tolerated(m, tolerances) for m in messages)


def _message_tolerated(message: Message, tolerances: Mapping[str, Tolerance]) -> Message:
    if message.role != "tool":
        return message
    parts = tuple(
        p.model_copy(update={"content": tolerances[p.name].normalize(p.content)})
        if isinstance(p, ToolResult) and p.name in tolerances
        else p
        for p in message.parts
    )
    return message if parts == message.parts else message.model_copy(update={"parts": parts})


class Replayer:
    """Answers each conversation from the recorded run it is (see the module docstring).

    ``live``: whether a conversation past its fork point can go on live (an upstream is there).
    """

    def __init__(
        self,
        runs: Sequence[RunResult],
        until_step: int | None,
        *,
        live: bool,
        tolerances: Mapping[str, Normalizer] | None = None,
    ) -> None:
        self.runs = tuple(runs)
        self.until_step = until_step
        self.tolerances = {t: Tolerance.of(t, n) for t, n in (tolerances or {}).items()}
        self._recordings = tuple(_prepared(run, self.tolerances) for run in self.runs)
        self._live = live and until_step is not None
        self._models: dict[str, ReplayModel | None] = {}
        """By the conversation's run id: its recording's model; None once it went live."""
        self._origins: dict[str, RerunOf] = {}
        """By the conversation's run id: the recorded run and step its first answer came from."""
        self._runs_of: dict[str, RunResult] = {}
        """By the conversation's run id: the recorded run it replays (as it is compared)."""
        self._tries: dict[str, _Tries] = {}
        """By the conversation's run id: a step tried more than once, what its tries get next."""
        self._replayed: set[int] = set()
        self.forked = until_step == 0
        """A conversation went past its fork point (see the module docstring)."""

    @property
    def model_name(self) -> str:
        """The model the recordings answered as (what ``GET /models`` says when offline)."""
        steps = (s for run in self.runs for s in run.steps)
        return next((s.response.model_name for s in steps if s.response is not None), "replay")

    async def answer(
        self, conversation: str, request: ModelRequest
    ) -> ModelResponse | ModelTry | None:
        """The recorded answer to ``request``, or None: the conversation goes on live.

        A failed try of a step the client tried more than once is answered with that try
        (its error, which the proxy gives the client). `ReplayDivergence` if the request
        departs from its recording (or from every recording, for a conversation's first
        request); `ReplayExhausted` if it asks for more than was recorded and cannot go live.
        """
        if self.tolerances:
            messages = _tolerated(request.messages, self.tolerances)
            request = request.model_copy(update={"messages": messages})
        tries = self._tries.get(conversation)
        if tries is not None:
            return self._tried_again(conversation, tries, request)
        failed = self._failed_step(conversation, request)
        if failed is not None:  # every try of it failed: each is answered with its error
            return self._given(conversation, failed, request, _last_try(failed))
        try:
            response = await self._answer(conversation, request)
        except ReplayDivergence as exc:
            raise self._told(exc) from None
        model = self._models.get(conversation)
        if response is None or model is None or model.last_step is None:
            return response
        step = self._step(conversation, model.last_step)
        return response if step is None else self._given(conversation, step, request, response)

    def _given(
        self,
        conversation: str,
        step: StepRecord,
        request: ModelRequest,
        last: ModelResponse | ModelTry,
    ) -> ModelResponse | ModelTry:
        """The step's first try, its failed tries and then ``last`` kept for the next ones."""
        if not step.failed_tries:
            return last
        left = [*step.failed_tries[1:], last]
        self._tries[conversation] = _Tries(step.index, request, left)
        return step.failed_tries[0]

    def _step(self, conversation: str, index: int) -> StepRecord | None:
        """The recorded step ``index`` of the run the conversation replays."""
        steps = self._runs_of[conversation].steps
        return next((s for s in steps if s.index == index), None)

    def _failed_step(self, conversation: str, request: ModelRequest) -> StepRecord | None:
        """The recorded step after the last one answered, if it failed and asked the same.

        Every try of it failed and it asked what ``request`` asks: a replay fails it again (a
        run's last step, or one the client went on from with another request).
        """
        model = self._models.get(conversation)
        if model is None or model.last_step is None:
            return None
        step = self._step(conversation, model.last_step + 1)
        if step is None or step.response is not None or step.model_error is None:
            return None
        asked = messages_difference(tuple(step.messages_in), tuple(request.messages)) is None
        return step if asked else None

    def _tried_again(
        self, conversation: str, tries: _Tries, request: ModelRequest
    ) -> ModelResponse | ModelTry:
        """The next try of a step tried more than once: the same request is asked again."""
        if request != tries.request:
            departed = ReplayDivergence(
                tries.step,
                f"the recording has step {tries.step} tried again after its failed try, the "
                "same request asked again; this request is not the same",
            )
            raise self._told(departed)
        given = tries.left.pop(0)
        if not tries.left:
            del self._tries[conversation]
        return given

    async def _answer(self, conversation: str, request: ModelRequest) -> ModelResponse | None:
        if conversation not in self._models:
            return await self._first(conversation, request)
        model = self._models[conversation]
        if model is None:
            return None
        try:
            return await model.request(request)
        except ReplayExhausted:
            if not self._live:
                raise
            self._models[conversation] = None  # the fork point is passed: the rest is live
            self.forked = True
            return None

    async def _first(self, conversation: str, request: ModelRequest) -> ModelResponse | None:
        """A conversation's first request: which recorded run it is, by trying each in turn."""
        departed: ReplayDivergence | None = None
        exhausted: ReplayExhausted | None = None
        for index in self._candidates():
            model = ReplayModel.from_run(
                self._recordings[index], until_step=self.until_step, strict=True
            )
            try:
                response = await model.request(request)
            except ReplayDivergence as exc:
                departed = departed or exc
                continue
            except ReplayExhausted as exc:  # found past the fork point: it goes on live
                exhausted = exhausted or exc
                continue
            self._models[conversation] = model
            self._runs_of[conversation] = self._recordings[index]
            self._replayed.add(index)
            self._origins[conversation] = _origin(self.runs[index], model.last_step or 1)
            return response
        if self._live and (exhausted is not None or self.forked):
            self._models[conversation] = None
            self.forked = True
            return None
        if exhausted is not None:
            raise exhausted
        assert departed is not None, "a replay has a run to replay"
        if len(self.runs) > 1:
            first = self.runs[self._candidates()[0]].run_id
            raise ReplayDivergence(
                departed.step,
                f"no run of the {len(self.runs)} replayed goes this way; against the first it "
                f"could be, {first}: {departed.detail}",
                diff=departed.diff,
            )
        raise departed

    def origin(self, conversation: str) -> RerunOf | None:
        """What the conversation re-runs: the recorded run and step it was first answered from."""
        return self._origins.get(conversation)

    def _told(self, departed: ReplayDivergence) -> ReplayDivergence:
        """``departed``, saying which tolerances the requests were compared under, if any."""
        if not self.tolerances:
            return departed
        said = "; ".join(f"{t.tool}'s results by {t.shown}" for t in self.tolerances.values())
        detail = f"{departed.detail}\n(compared with the tolerances declared: {said})"
        return ReplayDivergence(departed.step, detail, diff=departed.diff)

    def _candidates(self) -> list[int]:
        """The runs a new conversation may be, those not replayed yet first, each in order."""
        indices = range(len(self.runs))
        return [i for i in indices if i not in self._replayed] + sorted(self._replayed)


@dataclass
class _Tries:
    """A step tried more than once, as far as its replay went: what its next tries are given."""

    step: int
    request: ModelRequest
    """What each try asks (the client asks the same again)."""
    left: list[ModelTry | ModelResponse]
    """The failed tries still to give, then the recorded answer."""


def _last_try(step: StepRecord) -> ModelTry:
    """The last try of a step whose every try failed, as its failed tries are kept."""
    assert step.model_error is not None
    started = step.model_started_at if step.model_started_at is not None else step.started_at
    return ModelTry(
        started_at=started,
        duration=step.model_duration,
        error=step.model_error,
        status=step.model_status,
    )


def _origin(run: RunResult, step: int) -> RerunOf:
    snapshot = next(s for s in run.snapshots if s.step == step)
    return RerunOf(run_id=run.run_id, step=step, snapshot_id=snapshot.id)


def _prepared(run: RunResult, tolerances: Mapping[str, Tolerance]) -> RunResult:
    """``run`` as the proxy's replay compares with it.

    The model is among each snapshot's settings, and each tolerated tool's results are
    normalized. A strict replay compares settings, not the model name: the proxy puts the name
    in both the recorded settings and the request's, so that asking another model departs from
    the recording (runs recorded before the model left the settings already have it there).
    """
    snapshots = tuple(
        s.model_copy(update={"model_settings": {"model": s.model_name, **s.model_settings}})
        for s in run.snapshots
    )
    steps = tuple(
        s.model_copy(update={"messages_in": _tolerated(s.messages_in, tolerances)})
        for s in run.steps
    )
    return run.model_copy(update={"snapshots": snapshots, "steps": steps})
