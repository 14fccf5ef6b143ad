"""Put figures and tables into ipywidgets ``Output`` areas, and run work off the kernel thread.

Outputs are set as data (`ipywidgets.Output.outputs`) rather than printed inside a ``with out:``
block: that works the same from a cell, a button callback or a background task, and a test can
read back exactly what is displayed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from workbench._sync import run_sync

__all__ = ["PLOTLY_MIME", "figure_output", "html_output", "schedule", "show", "table_output"]

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


def table_output(frame: pd.DataFrame, *, max_rows: int = 100) -> dict[str, Any]:
    """A ``display_data`` output for a DataFrame: its first ``max_rows`` rows as HTML."""
    shown = frame.head(max_rows)
    note = f"<p>first {max_rows} of {len(frame):,} rows</p>" if len(frame) > max_rows else ""
    return {
        "output_type": "display_data",
        "data": {
            "text/html": shown.to_html(index=False, float_format=_fmt, na_rep="") + note,
            "text/plain": f"<table: {len(frame):,} rows × {len(frame.columns)} columns>",
        },
        "metadata": {},
    }


def show(area: widgets.Output, *outputs: dict[str, Any]) -> None:
    """Replace what ``area`` displays."""
    area.outputs = tuple(outputs)


def schedule(
    work: Callable[[], Coroutine[Any, Any, None]],
    on_error: Callable[[BaseException], None],
) -> asyncio.Task[None] | None:
    """Run ``work`` without blocking the caller's thread when it can.

    In a Jupyter kernel (a button callback runs on the kernel's event loop) the work becomes a
    task on that loop, so the kernel keeps answering while a model call is under way; the task
    is returned. Without a running loop (a plain script) the work runs to the end on the
    workbench's portal loop and None is returned.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        try:
            run_sync(work())
        except Exception as exc:
            on_error(exc)
        return None
    task = loop.create_task(work())
    task.add_done_callback(lambda t: _report(t, on_error))
    return task


def _report(task: asyncio.Task[None], on_error: Callable[[BaseException], None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        exc = task.exception()
        assert exc is not None
        on_error(exc)


def _fmt(value: float) -> str:
    return f"{value:.3f}"
