"""Put figures and HTML into ``Output`` areas, controls in a row, a button's work on one loop.

Outputs are set as data (`ipywidgets.Output.outputs`) rather than printed inside a ``with out:``
block: that works the same from a cell, a button callback or a background task, and a test can
read back exactly what is displayed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
import plotly.io as pio

from workbench._sync import portal

__all__ = [
    "PLOTLY_MIME",
    "figure_output",
    "finished",
    "html_output",
    "row",
    "schedule",
    "show",
    "wrapping",
]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
"""The MIME type JupyterLab's plotly renderer draws."""


def figure_output(fig: go.Figure) -> dict[str, Any]:
    """A ``display_data`` output for a plotly figure (plain JSON, as the comm needs it)."""
    bundle = json.loads(pio.to_json(fig, validate=False))
    bundle.setdefault("config", {"responsive": True})
    title = fig.layout.title.text or "figure"
    return {
        "output_type": "display_data",
        "data": {PLOTLY_MIME: bundle, "text/plain": f"<plotly figure: {title}>"},
        "metadata": {},
    }


def html_output(html: str) -> dict[str, Any]:
    """A ``display_data`` output for an HTML fragment (a note where a figure will be)."""
    return {
        "output_type": "display_data",
        "data": {"text/html": html, "text/plain": "<note>"},
        "metadata": {},
    }


def row(children: list[widgets.Widget]) -> widgets.HBox:
    """Controls side by side, going on to the next line when the output is too narrow for them.

    An ipywidgets row does not wrap: it shrinks each button to what is left, so beside
    JupyterLab's file browser at a 1,000 px window the Stepper's read 'Ste…', 'Step…', 'Step…'
    (Step into, over and out could not be told apart) and the RerunPanel's 'Re-run' read 'R'.
    """
    return widgets.HBox(children, layout=wrapping())


def wrapping() -> widgets.Layout:
    """The layout of a `row`, for a row of controls that is a class of its own (`ApprovalRow`)."""
    return widgets.Layout(flex_flow="row wrap")


def show(area: widgets.Output, *outputs: dict[str, Any]) -> None:
    """Replace what ``area`` displays."""
    area.outputs = tuple(outputs)


def schedule(
    work: Callable[[], Coroutine[Any, Any, None]],
    on_error: Callable[[BaseException], None],
) -> Future[None]:
    """Run ``work`` on the workbench's portal loop, whatever thread or loop the caller is on.

    A kernel does not deliver every click on one thread: ipykernel 7 runs a comm message on the
    subshell the front end sent it on (JupyterLab sends widget messages on a subshell of their
    own), on that thread's own event loop, while a cell runs on the main thread's. A run stepped
    into a sub-run keeps its phase under way as a task on one loop, and a model keeps its
    connections per loop; work scheduled on whichever loop a click arrives on splits a run
    between loops. The portal (`workbench._sync`) is one loop that nothing blocks, so every
    button's work, from any click or cell, lives there, and the caller's thread is free at once:
    the kernel keeps answering (a Stop click, another cell) while a model call runs.

    An error ``work`` raises goes to ``on_error`` (on the portal's thread), so the future never
    fails. Without a running loop (a plain script) the call waits for the work to finish.
    """

    async def reported() -> None:
        try:
            await work()
        except Exception as exc:
            on_error(exc)

    future = asyncio.run_coroutine_threadsafe(reported(), portal())
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # a script: the click returns when its work is done
        future.result()
    return future


async def finished(work: Future[None] | None) -> None:
    """Wait, on the caller's loop, until ``work`` (from `schedule`) is done."""
    if work is not None and not work.done():
        await asyncio.wait({asyncio.wrap_future(work)})
