"""One kind of internal record: frozen pydantic models, validated when built, copied plainly."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest
from pydantic import BaseModel, ValidationError

import workbench as wb
from workbench._record import Record


def _package_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(wb.__path__, "workbench."):
        if info.name.startswith(("workbench.notebook", "workbench.cli")):
            continue
        module = importlib.import_module(info.name)
        found += [
            c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == info.name
        ]
    return found


def test_records_are_frozen_and_copied_with_model_copy() -> None:
    outcome = wb.ToolOutcome(call_id="c1", name="add", arguments={"a": 1}, status="ok", content="3")
    with pytest.raises(ValidationError):
        outcome.content = "4"  # type: ignore[misc]
    copy = outcome.model_copy(update={"duration": 0.5})
    assert copy.duration == 0.5 and outcome.duration == 0.0
    assert copy.content == "3"


def test_constructors_validate_what_comes_in() -> None:
    with pytest.raises(ValidationError):
        wb.Message(role="robot", parts=())  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        wb.ToolOutcome(call_id="c1", name="add", arguments={}, status="maybe", content="")  # type: ignore[arg-type]


def test_no_frozen_dataclass_records_are_left() -> None:
    """Data records are `Record`s; the dataclasses left are configuration and builders."""
    frozen_dataclasses = {
        c.__qualname__
        for c in _package_classes()
        if dataclasses.is_dataclass(c) and c.__dataclass_params__.frozen  # type: ignore[attr-defined]
    }
    assert frozen_dataclasses <= {
        "LoopConfig",  # configuration of one execution
        "Tool",  # configuration: a tool and its options
        "SubagentTool",  # configuration: the tool `Agent.as_tool` makes
        "Hook",  # configuration: an in-process hook
        "CommandHook",  # configuration: a hook command
        "HookResult",  # what a user's hook returns
        "ParentHooks",
        "Instruments",
        "External",  # a stop condition (configuration) holding a flag
        "_RecordedTool",  # a Tool (configuration) that answers from a recording
        "ExportStats",  # the exporter's counters, read by the telemetry's own report
        "Tolerance",  # configuration: a proxy replay's declared normalizer (holds a function)
    }, frozen_dataclasses
    models = [c for c in _package_classes() if issubclass(c, BaseModel)]
    assert wb.StepRecord in models and wb.RunResult in models
    wire = (
        "workbench.hooks.events",
        "workbench.hooks.command",
        "workbench.models._wire",
        "workbench.models._openai_wire",
        "workbench.models._anthropic_wire",
        "workbench.models._responses_wire",
        "workbench._proxy.chat",
        "workbench._proxy.anthropic",
        "workbench._proxy.responses",
    )
    # JSON at a boundary (hook protocol, each model wire) has models of its own
    others = [c for c in models if not issubclass(c, Record) and not c.__module__.startswith(wire)]
    assert others == []


def test_a_step_record_round_trips_through_json() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel(
            [wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}), wb.ModelResponse.text("3")]
        ),
        tools=[wb.tool(lambda a, b: a + b, name="add")],
        store=False,
    )
    result = agent.run_sync("1 + 2?")
    for record in result.steps:
        again = wb.StepRecord.model_validate_json(record.model_dump_json())
        assert again == record
    snapshot = result.snapshots[-1]
    assert wb.StepContext.model_validate_json(snapshot.model_dump_json()) == snapshot
