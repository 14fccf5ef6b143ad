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

from pydantic import BaseModel, ConfigDict

__all__ = ["Record"]


class Record(BaseModel):
    """Frozen data with a validated constructor; copy with ``model_copy(update=...)``."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
