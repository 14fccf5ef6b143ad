"""A run list as a pandas DataFrame: from the listing query's rows, or from `RunSummary` rows.

A store lists every run of a filter (`RunStore.list_runs`: 100,000 of them in a second or two)
from its query's rows, turned into columns by pandas: a `RunSummary` each would be validated
for nothing, as the store wrote the rows. Sources that list `RunSummary` rows (a trace backend)
get the same frame from them; both end in `_typed`, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.store._query import (
    COLUMNS,
    FRAME,
    Extras,
    RunSummary,
    session_of,
    stored_metadata,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["frame_of_rows", "frame_of_summaries"]


def frame_of_rows(rows: Sequence[Sequence[Any]], found: Extras, *, rollup: bool) -> pd.DataFrame:
    """The frame of the listing query's ``rows`` (`COLUMNS`, then ``subruns`` if ``rollup``).

    ``found`` holds the listed runs' tools (and trees' first errors); each run's metadata JSON
    is read once (`stored_metadata`), and its session read from it.
    """
    import pandas as pd

    columns = [*COLUMNS, "subruns"] if rollup else list(COLUMNS)
    frame = pd.DataFrame.from_records(rows, columns=columns)

    def column(values: list[Any]) -> pd.Series:
        """Values as a column, its type inferred as the frame's were (object when empty)."""
        return pd.Series(values, index=frame.index)

    frame["tools"] = column([found.tools.get(row[0], ()) for row in rows])
    if rollup:  # a tree whose root had no error shows the first of its sub-runs'
        at = columns.index("first_error")
        frame["first_error"] = column(
            [
                row[at] if isinstance(row[at], str) else found.first_errors.get(row[0])
                for row in rows
            ]
        )
    at = columns.index("metadata")
    metadata = [stored_metadata(row[at], row[0]) for row in rows]
    frame["metadata"] = column(metadata)
    frame["session_id"] = column([session_of(m) for m in metadata])
    return _typed(frame, rollup)


def frame_of_summaries(summaries: Sequence[RunSummary], *, rollup: bool) -> pd.DataFrame:
    """The same frame from `RunSummary` rows (a source that lists them: a trace backend)."""
    import pandas as pd

    names = [*FRAME, "subruns", "tools"] if rollup else [*FRAME, "tools"]
    return _typed(
        pd.DataFrame([row.model_dump(include=set(names)) for row in summaries], columns=names),
        rollup,
    )


def _typed(frame: pd.DataFrame, rollup: bool) -> pd.DataFrame:
    """Times as datetimes, counts as whole numbers, the columns in their order."""
    import pandas as pd

    for column in ("created_at", "updated_at"):
        # a damaged time shows as NaT; the listing is how a user finds the runs still readable
        frame[column] = pd.to_datetime(
            pd.to_numeric(frame[column], errors="coerce"), unit="s", errors="coerce"
        )
    for column in ("errors", "tool_calls", "rerun_of_step"):  # counts stay whole numbers
        frame[column] = frame[column].astype("Int64")
    return frame[[*FRAME, *(["subruns"] if rollup else []), "tools"]]
