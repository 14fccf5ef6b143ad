"""`Record`: the one kind of internal data, a frozen pydantic model.

Messages and their parts, the run state, step records, snapshots, views and events are all
`Record`s. They are built with their constructor, which validates; they are copied with
``model_copy(update=...)``, which does not (what is copied in is already one of ours); they are
never mutated. Validation happens where data comes in: a constructor called by a user or with a
model's answer, ``model_validate``/``from_json`` for files and the store. pydantic keeps an
instance given for a field of its own type as it is (``revalidate_instances="never"``), so the
loop pays for checking what it builds, not for re-checking what it passes on.
"""

from __future__ import annotations

import functools
import gc
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Record", "collector_paused", "html_view"]

_R = TypeVar("_R", bound="Record")
_HTML_VIEWS: dict[type, Callable[[Any], str]] = {}
"""How Jupyter shows a record of each type, registered by the notebook views when imported."""
VIEWS = "workbench.notebook.reprs"
"""The module whose import registers the records' HTML views, loaded by name the first time
Jupyter asks a record for HTML. The views sit far above the records and import them; named, not
imported, they stay out of the records' dependencies (no layer crossed, no cycle) and out of
``import workbench`` (the notebook extra's ipywidgets and plotly), and a cell's result is drawn
without ``import workbench.notebook`` first."""


def html_view(cls: type[_R]) -> Callable[[Callable[[_R], str]], Callable[[_R], str]]:
    """Register the function that renders ``cls`` as HTML in Jupyter (``_repr_html_``).

    The views sit far above the records, so they register themselves here instead of being
    imported by the records (`VIEWS` names their module); without them a record shows its
    short text repr.
    """

    def register(render: Callable[[_R], str]) -> Callable[[_R], str]:
        _HTML_VIEWS[cls] = render
        return render

    return register


class Record(BaseModel):
    """Frozen data with a validated constructor; copy with ``model_copy(update=...)``."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    def __str__(self) -> str:  # pydantic's lists every field: a short repr is what prints
        return repr(self)

    def _repr_html_(self) -> str | None:
        render = _HTML_VIEWS.get(type(self)) or _loaded_views().get(type(self))
        return render(self) if render is not None else None


@functools.cache
def _loaded_views() -> dict[type, Callable[[Any], str]]:
    """The registered HTML views, `VIEWS` imported first.

    Without the notebook extra (ipywidgets, plotly) a record shows its short text repr; a view
    of ours that fails to import raises, for Jupyter to show.
    """
    try:
        importlib.import_module(VIEWS)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("workbench"):
            raise
    return _HTML_VIEWS


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block, leaving it as it was after.

    For building many records at once (the spans of a big trace): they are hundreds of
    thousands of small containers that cannot form a cycle, yet making them starts full
    collections, each of which walks every object alive again (quadratic in the trace).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
