"""`frozen_record`: a frozen slotted dataclass in all but how ``__init__`` sets its fields."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from dataclasses import field

import pytest

import workbench
from workbench._record import frozen_record


@frozen_record
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False)


def test_a_record_is_a_frozen_dataclass() -> None:
    p = Point(1, tags=["a"])
    assert dataclasses.is_dataclass(p)
    assert (p.x, p.y, p.tags, p.note) == (1, 0, ["a"], "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    assert not hasattr(p, "__dict__")  # slotted
    assert Point(1) == Point(1, note="other")  # compare=False is honoured
    with pytest.raises(TypeError, match="unhashable"):
        hash(p)  # frozen and eq: hashed by its fields, and a list is not hashable
    assert repr(p) == "Point(x=1, y=0, tags=['a'], note='')"
    assert dataclasses.replace(p, y=5) == Point(1, 5, ["a"])
    assert dataclasses.asdict(p) == {"x": 1, "y": 0, "tags": ["a"], "note": ""}
    assert pickle.loads(pickle.dumps(p)) == p


def test_each_record_gets_its_own_default_from_the_factory() -> None:
    first, second = Point(1), Point(2)
    first.tags.append("mine")
    assert second.tags == []


def test_arguments_are_checked_as_dataclasses_check_them() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]


def _workbench_records() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and value.__module__ == module.__name__
                and getattr(value.__init__, "__module__", None) == module.__name__
                and dataclasses.is_dataclass(value)
                and value.__dataclass_params__.frozen  # type: ignore[attr-defined]
                and "__slots__" in value.__dict__
            ):
                found.append(value)
    return found


RECORDS = _workbench_records()


def test_the_workbenchs_frozen_dataclasses_are_frozen_records() -> None:
    names = {cls.__name__ for cls in RECORDS}
    assert {"PhaseEvent", "StepRecord", "Timing", "ToolOutcome", "RunView", "Budget"} <= names
    made_here = {cls.__name__ for cls in RECORDS if "_FACTORY" in cls.__init__.__globals__}
    assert made_here == names  # an __init__ of ours, not the one dataclasses wrote


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_the_signature_is_the_one_dataclasses_would_write(cls: type) -> None:
    plain = dataclasses.make_dataclass(
        cls.__name__,
        [(f.name, f.type, f) for f in dataclasses.fields(cls)],
        frozen=True,
    )
    assert str(inspect.signature(cls)) == str(inspect.signature(plain))


def test_what_it_cannot_do_it_refuses() -> None:
    with pytest.raises(TypeError, match="only plain fields"):

        @frozen_record
        class KeywordOnly:
            a: int = field(kw_only=True)

    with pytest.raises(TypeError, match="only plain fields"):

        @frozen_record
        class NotInInit:
            a: int = field(default=0, init=False)

    with pytest.raises(TypeError, match="__post_init__"):

        @frozen_record
        class PostInit:
            a: int

            def __post_init__(self) -> None:
                pass

    class Checked:
        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="__post_init__"):  # dataclasses would call it: refused

        @frozen_record
        class Inherited(Checked):
            a: int
