"""`RerunPanel`: pick a step of a run, edit its messages, pick a model, re-run, compare.

The panel is thin: snapshots come from the run, editing is `workbench.notebook.edit`, the re-run
is `Agent.rerun`, the comparison is `workbench.diff`, and the views are the HTML builders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from html import escape
from typing import Literal, TypeAlias

import ipywidgets as widgets

from workbench.agent import Agent, AgentRun, RunResult
from workbench.diff import RunDiff, diff
from workbench.messages import Message
from workbench.models.base import Model
from workbench.notebook._output import finished, row, schedule, show
from workbench.notebook.approvals import ApprovalRow
from workbench.notebook.drawn_tables import table_output
from workbench.notebook.edit import (
    MessageFormatError,
    keep_provenance,
    messages_from_json,
    messages_from_text,
    messages_to_json,
    messages_to_text,
)
from workbench.notebook.html import messages_html
from workbench.notebook.stepper import Stepper
from workbench.records import StepContext
from workbench.state import ExecutionStatus, PendingCall
from workbench.traces import combine_results

__all__ = ["RerunPanel"]

Format = Literal["text", "json"]
RunSource: TypeAlias = RunResult | AgentRun | Stepper | Sequence[RunResult]


class RerunPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Fork a run at any step: edit the messages the step starts from, pick a model, re-run.

    Shows the original and the fork side by side from that step on, and `workbench.diff` of the
    two. ``agent`` is the agent that made the run (a `Stepper` brings its own); ``models`` are
    the models offered besides the agent's, by name. With the agent's own model the re-run
    replays the step's recorded answer (unless the messages were edited) and goes on live from
    the next step, as `Agent.rerun` does by default; another model answers from the step on.

    "replay tool results" answers the fork's tool calls from the recording: the agent's model's
    replay of the run, or a `ReplayModel` picked (say ``ReplayModel.from_run(run,
    until_step=N, then=live)``). Nothing it replays runs again, also after an approval. Another
    model (a live one) says, in the panel, that it has nothing recorded.

    A fork asks for approval as the original run did: when it pauses, its calls are listed with
    Approve and Deny buttons, and nothing waiting runs until they are pressed. Approving every
    call is the user's visible choice: the "approve every call" checkbox (``approve_all``),
    which ``approve=True`` ticks from the start.
    """

    def __init__(
        self,
        run: RunSource,
        agent: Agent | None = None,
        *,
        models: Mapping[str, Model] | Sequence[Model] = (),
        approve: bool = False,
    ) -> None:
        if agent is None and isinstance(run, Stepper):
            agent = run.agent
        if agent is None:
            raise TypeError("RerunPanel needs the agent that made the run: RerunPanel(run, agent)")
        self.agent = agent
        self.original = _as_result(run)
        if not self.original.snapshots:
            raise ValueError("the run has no snapshots: it never started a step")
        self.fork: RunResult | None = None
        self.diff: RunDiff | None = None
        self.task: Future[None] | None = None
        named = models.items() if isinstance(models, Mapping) else ((m.name, m) for m in models)
        self.models: dict[str, Model] = {f"{agent.model.name} (the agent's)": agent.model}
        self.models.update(named)

        snapshots = self.original.snapshots
        self.step_picker = widgets.Dropdown(
            description="From step",
            options=[(f"step {s.step}", i) for i, s in enumerate(snapshots)],
            value=len(snapshots) - 1,
        )
        self.format_picker = widgets.ToggleButtons(options=["text", "json"], value="text")
        self.editor = widgets.Textarea(layout=widgets.Layout(width="100%", height="18em"))
        self.model_picker = widgets.Dropdown(description="Model", options=list(self.models))
        self.rerun_button = widgets.Button(description="Re-run", button_style="primary")
        self.approve_all = widgets.Checkbox(
            value=approve, description="approve every call the fork asks for", indent=False
        )
        self.replay_tools = widgets.Checkbox(
            value=False, description="replay tool results (from the recording)", indent=False
        )
        self.approval_rows: list[ApprovalRow] = []
        self.approvals = widgets.VBox()
        self._forked: list[RunResult] = []
        self._decisions: dict[str, bool | str] = {}
        self._model: Model | None = None
        self.error = widgets.HTML()
        self.status = widgets.HTML()
        self.original_view = widgets.HTML()
        self.fork_view = widgets.HTML()
        self.diff_view = widgets.HTML()
        self.diff_table = widgets.Output()
        self.step_picker.observe(lambda _: self._load_step(), names="value")
        self.format_picker.observe(self._reformat, names="value")
        self.rerun_button.on_click(lambda _: self.rerun())
        controls = row(
            [
                self.step_picker,
                self.model_picker,
                self.rerun_button,
                self.approve_all,
                self.replay_tools,
            ]
        )
        sides = widgets.HBox(
            [self.original_view, self.fork_view],
            layout=widgets.Layout(width="100%", align_items="flex-start"),
        )
        for side in (self.original_view, self.fork_view):
            side.layout = widgets.Layout(width="50%")
        super().__init__(
            [
                controls,
                self.format_picker,
                self.editor,
                self.error,
                self.status,
                self.approvals,
                sides,
                self.diff_view,
                self.diff_table,
            ]
        )
        self._load_step()

    @property
    def approve(self) -> bool:
        """Whether the fork's calls are approved without asking (the checkbox, as shown)."""
        return bool(self.approve_all.value)

    @property
    def snapshot(self) -> StepContext:
        """The snapshot of the chosen step (which a re-run with the agent's model replays)."""
        index: int = self.step_picker.value
        return self.original.snapshot(step=self.original.snapshots[index].step)

    def edited_messages(self) -> list[Message]:
        """The editor's messages; raises `MessageFormatError` with where and what is wrong."""
        read = messages_from_json if self.format_picker.value == "json" else messages_from_text
        return keep_provenance(self.snapshot.state.messages, read(self.editor.value))

    def rerun(self) -> None:
        """Re-run from the chosen step with the edited messages and the chosen model."""
        if self.task is not None and not self.task.done():
            return
        try:
            messages = self.edited_messages()
        except MessageFormatError as exc:
            self.error.value = _error_html(f"Cannot read the messages: {exc}")
            return
        self.error.value = ""
        self._show_approvals(())
        self.rerun_button.disabled = True
        self.status.value = "re-running…"
        model = self.models[self.model_picker.value]
        self.task = schedule(lambda: self._rerun(messages, model), self._failed)

    async def wait(self) -> None:
        """Wait for a re-run started by the button."""
        await finished(self.task)

    async def _rerun(self, messages: list[Message], model: Model) -> None:
        try:
            tools: Literal["replay"] | None = "replay" if self.replay_tools.value else None
            # The agent's own model: left to the re-run, which replays the step's recorded answer
            # (unless the messages were edited) and goes on live; another is used as given.
            chosen = None if model is self.agent.model else model
            run = self.agent.start_rerun(self.snapshot, messages, chosen, tools=tools)
            self._model = run.model  # a paused fork resumes on it (a replay keeps replaying)
            await self._go_on([await run.arun_to_end()])
        finally:
            self.rerun_button.disabled = False

    async def _go_on(self, results: list[RunResult]) -> None:
        """Approve and resume only if the checkbox says so; else show what waits, and wait."""
        while self.approve and results[-1].status is ExecutionStatus.PAUSED:
            approvals: dict[str, bool | str] = {p.call_id: True for p in results[-1].pending}
            resumed = self.agent.resume(results[-1].state, approvals=approvals, model=self._model)
            results.append(await resumed)
        self._forked = results
        self._show_fork(combine_results(results))
        last = results[-1]
        self._show_approvals(last.pending if last.status is ExecutionStatus.PAUSED else ())

    def _show_approvals(self, pending: Sequence[PendingCall]) -> None:
        self._decisions = {}
        self.approval_rows = [ApprovalRow(p, self._decide) for p in pending]
        self.approvals.children = tuple(self.approval_rows)
        if pending:
            self.status.value += (
                f" · {len(pending)} call(s) wait for your approval, as in the original run"
            )

    def _decide(self, call_id: str, decision: bool | str) -> None:
        """One Approve or Deny; when every waiting call has one, the fork goes on."""
        self._decisions[call_id] = decision
        if any(r.pending.call_id not in self._decisions for r in self.approval_rows):
            return
        decisions, results = self._decisions, self._forked
        self._show_approvals(())
        self.status.value = "resuming the fork…"
        self.task = schedule(lambda: self._resume(results, decisions), self._failed)

    async def _resume(self, results: list[RunResult], decisions: dict[str, bool | str]) -> None:
        resumed = await self.agent.resume(results[-1].state, approvals=decisions, model=self._model)
        await self._go_on([*results, resumed])

    def _failed(self, exc: BaseException) -> None:
        self.rerun_button.disabled = False
        self.status.value = ""
        self.error.value = _error_html(f"The re-run failed: {type(exc).__name__}: {exc}")

    def _load_step(self) -> None:
        messages = self.snapshot.state.messages
        write = messages_to_json if self.format_picker.value == "json" else messages_to_text
        self.editor.value = write(messages)
        self.error.value = ""
        later = self.original.messages[self.snapshot.message_count :]
        self.original_view.value = self._side("original (from this step on)", self.original, later)

    def _reformat(self, change: dict[str, object]) -> None:
        """Switch the editor between text and JSON, keeping the edits if they read."""
        old = messages_from_json if change["old"] == "json" else messages_from_text
        new = messages_to_json if change["new"] == "json" else messages_to_text
        try:
            self.editor.value = new(old(self.editor.value))
        except MessageFormatError as exc:
            self.error.value = _error_html(str(exc))

    @staticmethod
    def _side(title: str, result: RunResult, messages: Sequence[Message]) -> str:
        stop = f", {result.stop_reason.value}" if result.stop_reason else ""
        head = (
            f"<h4>{escape(title)}: {result.status.value}{stop} · run "
            f"<code>{escape(result.run_id)}</code></h4>"
        )
        return head + messages_html(messages, empty="no messages")

    def _show_fork(self, fork: RunResult) -> None:
        self.fork = fork
        self.diff = diff(self.original, fork)
        self.status.value = (
            f"fork <code>{escape(fork.run_id)}</code>: {fork.status.value}, "
            f"{len(fork.steps)} step records"
        )
        own = [m for m in fork.messages if m.run_id == fork.run_id]
        self.fork_view.value = self._side("fork (edited and new messages)", fork, own)
        self.diff_view.value = (
            "<h4>Diff: original → fork</h4>"
            # words whole: JupyterLab's output area breaks a <pre> anywhere ('a f' over 'rom')
            '<pre style="white-space:pre-wrap;word-break:break-word;font-size:12px">'
            f"{escape(self.diff.to_text())}</pre>"
        )
        frame = self.diff.to_df()  # headings that wrap between words: "inference ms a"
        show(self.diff_table, table_output(frame.rename(columns=lambda c: c.replace("_", " "))))


def _error_html(text: str) -> str:
    return f'<div class="wb-error" style="color:#c62828">{escape(text)}</div>'


def _as_result(run: RunSource) -> RunResult:
    """One `RunResult` for a result, a stepped run, a Stepper or the results of each execution."""
    if isinstance(run, RunResult):
        return run
    if isinstance(run, (AgentRun, Stepper)):
        return run.result
    return combine_results(list(run))
