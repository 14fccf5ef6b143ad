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
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.errors import ReplayDivergence, ReplayExhausted
from workbench.messages import ModelResponse
from workbench.models.base import ModelRequest
from workbench.models.replay import ReplayModel
from workbench.records import RunResult

__all__ = ["Replayer"]


class Replayer:
    """Answers each conversation from the recorded run it is (see the module docstring).

    ``live``: whether a conversation past its fork point can go on live (an upstream is there).
    """

    def __init__(self, runs: Sequence[RunResult], until_step: int | None, *, live: bool) -> None:
        self.runs = tuple(runs)
        self.until_step = until_step
        self._recordings = tuple(_with_model_setting(run) for run in self.runs)
        self._live = live and until_step is not None
        self._models: dict[str, ReplayModel | None] = {}
        """By the conversation's run id: its recording's model; None once it went live."""
        self._replayed: set[int] = set()
        self.forked = until_step == 0
        """A conversation went past its fork point (see the module docstring)."""

    @property
    def model_name(self) -> str:
        """The model the recordings answered as (what ``GET /models`` says when offline)."""
        steps = (s for run in self.runs for s in run.steps)
        return next((s.response.model_name for s in steps if s.response is not None), "replay")

    async def answer(self, conversation: str, request: ModelRequest) -> ModelResponse | None:
        """The recorded answer to ``request``, or None: the conversation goes on live.

        `ReplayDivergence` if the request departs from its recording (or from every recording,
        for a conversation's first request); `ReplayExhausted` if it asks for more than was
        recorded and cannot go live.
        """
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
            self._replayed.add(index)
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

    def _candidates(self) -> list[int]:
        """The runs a new conversation may be, those not replayed yet first, each in order."""
        indices = range(len(self.runs))
        return [i for i in indices if i not in self._replayed] + sorted(self._replayed)


def _with_model_setting(run: RunResult) -> RunResult:
    """``run`` with each snapshot's model name among its settings, for the proxy's replay.

    A strict replay compares settings, not the model name: the proxy puts the name in both the
    recorded settings and the request's, so that asking another model departs from the recording
    (runs recorded before the model left the settings already have it there).
    """
    snapshots = tuple(
        s.model_copy(update={"model_settings": {"model": s.model_name, **s.model_settings}})
        for s in run.snapshots
    )
    return run.model_copy(update={"snapshots": snapshots})
