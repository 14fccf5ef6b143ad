"""The look shared by the figures: a light template small enough to copy for free.

plotly deep-copies a figure's template; its built-in ``plotly_white`` costs tens of milliseconds
per figure (and a third of a second the first time), which matters for a view of three figures
rebuilt after every phase. This one sets only what the views use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TEMPLATE"]

_AXIS = {"gridcolor": "#ebedf0", "zerolinecolor": "#d0d4da", "linecolor": "#d0d4da"}

TEMPLATE: dict[str, Any] = {
    "layout": {
        "font": {"color": "#2a3f5f"},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hoverlabel": {"align": "left"},
        "hovermode": "closest",
        "title": {"x": 0.02},
        "xaxis": {**_AXIS, "automargin": True},
        "yaxis": {**_AXIS, "automargin": True},
    }
}
"""The template of every workbench figure."""
