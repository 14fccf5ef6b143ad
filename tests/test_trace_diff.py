"""Two traces compared, and one stepped through: their top runs rebuilt from the spans alone.

`wb.diff` of two traces and `Stepper.of(trace)` read `result_of_trace`.

Each run's trace is written to an OTLP file and loaded back (`wb.load_trace`: no step records,
as a trace from a backend), then compared; the comparison must say what `wb.diff` of the two
runs themselves says, step by step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from tests.test_telemetry import run_with_pause
from workbench.notebook import Stepper, combine_results
from workbench.telemetry.records_of import result_of_trace

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@wb.tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


def _traced(
    folder: Path, name: str, answers: list[R | str], *, content: bool = True
) -> tuple[wb.RunResult, wb.Trace]:
    """A run of a scripted agent, and its trace as read back from an OTLP file."""
    telemetry = wb.Telemetry(capture_content=content)
    agent = wb.Agent(
        model=wb.ScriptedModel(answers), tools=[add, divide], telemetry=telemetry, store=False
    )
    result = agent.run_sync("Work it out.", metadata={"case": name})
    path = telemetry.write_otlp_json(folder / f"{name}.otlp.json")
    return result, wb.load_trace(path)


def _shape(found: wb.RunDiff) -> list[tuple[object, ...]]:
    """What a diff says of each step: its number, how it differs, the calls and their changes."""
    return [
        (s.step, s.status, s.calls_a, s.calls_b, [o.line for o in s.outcomes]) for s in found.steps
    ]


def test_two_traces_diff_as_their_runs_do(tmp_path: Path) -> None:
    a, trace_a = _traced(tmp_path, "a", [R.tool_call("add", {"a": 2, "b": 3}), "It is 5."])
    b, trace_b = _traced(
        tmp_path,
        "b",
        [R.tool_call("add", {"a": 2, "b": 4}), R.tool_call("divide", {"a": 1, "b": 0}), "No."],
    )
    assert not trace_a.steps  # read from a file: the spans only
    expected, found = wb.diff(a, b), wb.diff(trace_a, trace_b)
    assert _shape(found) == _shape(expected) and found.first_divergence == 1
    assert (found.a_final, found.b_final) == (expected.a_final, expected.b_final)
    assert found.a_id == a.run_id and found.b_id == b.run_id
    assert wb.diff(trace_a, a).first_divergence is None  # a trace and its own run: the same


def test_a_rebuilt_run_has_the_steps_calls_and_errors_the_spans_say(tmp_path: Path) -> None:
    _, trace = _traced(
        tmp_path, "c", [R.tool_call("divide", {"a": 1, "b": 0}, call_id="d1"), "Cannot."]
    )
    rebuilt = result_of_trace(trace)
    first, second = rebuilt.steps
    (outcome,) = first.tool_outcomes
    assert (outcome.call_id, outcome.name, outcome.arguments) == ("d1", "divide", {"a": 1, "b": 0})
    assert outcome.status == "error" and outcome.exception is not None
    assert outcome.exception.type == "ZeroDivisionError"
    assert [m.role for m in first.new_messages] == ["assistant", "tool"]
    assert second.new_messages[-1].text == "Cannot." and rebuilt.output == "Cannot."
    assert rebuilt.status is wb.ExecutionStatus.COMPLETED
    assert rebuilt.state.metadata == {"case": "c"}
    assert rebuilt.state.usage.total_tokens == sum(s.usage.total_tokens for s in rebuilt.steps) > 0
    assert [e.kind for e in rebuilt.errors] == ["tool"]


def test_a_paused_and_resumed_run_is_one_run(tmp_path: Path) -> None:
    telemetry = wb.Telemetry(capture_content=True)
    paused, done = run_with_pause(telemetry)  # the resumption in a trace of its own
    rebuilt = result_of_trace(wb.load_trace(telemetry.write_otlp_json(tmp_path / "p.otlp.json")))
    called = [s.index for s in (*paused.steps, *done.steps) if s.response is not None]
    assert [s.index for s in rebuilt.steps] == called and rebuilt.run_id == done.run_id
    assert (rebuilt.status, rebuilt.output) == (done.status, done.output)
    found = wb.diff(rebuilt, combine_results([paused, done]))
    # the one thing spans cannot say: the conventions have no retry prompt, so the retry the
    # model was sent at step 1 reads back as the tool's result
    assert [s.step for s in found.steps if s.status != "same"] == [1]
    assert "result of" in str(found) and "→ retry prompt" in str(found)


def test_a_trace_steps_through_in_the_stepper_history(tmp_path: Path) -> None:
    _, trace = _traced(
        tmp_path, "e", [R.tool_call("divide", {"a": 1, "b": 0}, call_id="d1"), "Cannot."]
    )
    history = Stepper.of(trace)
    assert history.trace is trace and [s.index for s in history.result.steps] == [1, 2]
    assert history.step_picker.label == "step 1"  # where the tool failed
    assert "ZeroDivisionError" in history.messages.value and "divide" in history.errors.value
    figure = history.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert "execute_tool divide" in str(figure["layout"]["yaxis"])  # the trace's own spans


def test_a_trace_without_content_cannot_be_compared(tmp_path: Path) -> None:
    _, trace = _traced(tmp_path, "d", ["Hi."], content=False)
    with pytest.raises(wb.TraceLoadError, match="no model call with captured messages"):
        wb.diff(trace, trace)
