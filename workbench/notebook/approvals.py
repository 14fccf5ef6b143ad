"""`ApprovalRow`: a tool call waiting on a person's approval, with its Approve and Deny buttons.

The Stepper shows one for each call a paused run waits on (a sub-run's too, saying which
sub-agent asks, `asked_by`), and so does the RerunPanel for a re-run that pauses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ipywidgets as widgets

from workbench.agent import RunResult
from workbench.notebook._output import wrapping
from workbench.notebook.html import pending_html
from workbench.notebook.stepping_html import asked_html
from workbench.state import AgentState, PendingCall

__all__ = ["ApprovalRow", "asked_by"]


class ApprovalRow(widgets.HBox):  # type: ignore[misc]  # ipywidgets is untyped
    """One pending tool call: what it is, a reason box, Approve and Deny buttons."""

    def __init__(
        self,
        pending: PendingCall,
        decide: Callable[[str, bool | str], None],
        path: Sequence[AgentState] = (),
    ) -> None:
        """A row for ``pending``; ``decide`` gets its call id and the decision.

        ``path``: for a call a sub-run asks, the states from this run down to that sub-run (the
        row says which sub-agent asks, and through which calls).
        """
        self.pending = pending
        asked = asked_html(path, pending.call_id) if len(path) > 1 else ""
        self.label = widgets.HTML(pending_html([pending]) + asked)
        self.reason = widgets.Text(placeholder="reason (sent to the model if denied)")
        self.approve_button = widgets.Button(description="Approve", button_style="success")
        self.deny_button = widgets.Button(description="Deny", button_style="danger")
        self.approve_button.on_click(lambda _: decide(pending.call_id, True))
        self.deny_button.on_click(
            lambda _: decide(pending.call_id, self.reason.value.strip() or False)
        )
        controls = [self.label, self.reason, self.approve_button, self.deny_button]
        super().__init__(controls, layout=wrapping())  # narrow: the buttons go under, whole


def asked_by(result: RunResult, call_id: str) -> list[AgentState]:
    """The states from ``result``'s run down to the sub-run that asks ``call_id`` itself."""
    for child in result.children:
        if any(p.call_id == call_id and p.via is None for p in child.state.pending):
            return [result.state, child.state]
        if below := asked_by(child, call_id):
            return [result.state, *below]
    return []
