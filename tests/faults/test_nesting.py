"""Fault table: JSON nested deeper than anything downstream can hold.

Already covered in ``tests/faults/test_state_files.py``: state JSON and edited messages nested
100,000 deep, and a hook's answer nested past the recursion limit. Here the rule is closed for
every reader at once (`workbench._json`): each document the workbench reads is refused past
`MAX_DEPTH` levels with its own typed error (a cassette and an OTLP document nested 100,000
deep once raised `RecursionError`), and each JSON value a record keeps nests at most
`VALUE_DEPTH` levels, so whatever is accepted can be stored, written and read back (session
metadata nested 300 deep was accepted, then could not be stored, and ``to_json`` raised).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.faults.traces import attribute, otlp, tagged
from workbench._json import MAX_DEPTH, VALUE_DEPTH, loads, text_depth, too_deep
from workbench.hooks.command import parse_output
from workbench.notebook.edit import messages_from_json


def nested(depth: int, leaf: Any = 1) -> Any:
    """A JSON value ``depth`` levels deep, alternating objects and lists."""
    value = leaf
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def paused_state() -> wb.AgentState:
    @wb.tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    script = [wb.ModelResponse.tool_call("delete_file", {"path": "/tmp/x"})]
    return wb.Agent(model=wb.ScriptedModel(script), tools=[delete_file]).run_sync("go").state


def cassette_reader(tmp_path: Path) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        path = tmp_path / "deep.json"
        path.write_text(text)
        return wb.cassette(path, mode="replay")

    return read


def a_cassette(tmp_path: Path) -> str:
    """A recorded cassette's text, with ``"DEEP"`` as the value of a request's setting."""
    path = tmp_path / "recorded.json"
    model = wb.cassette(path, wb.ScriptedModel([wb.ModelResponse.text("ok")]), mode="record")
    wb.Agent(model=model, settings={"temperature": 0}).run_sync("hi")
    recorded = json.loads(path.read_text())
    recorded["interactions"][0]["request"]["settings"]["temperature"] = "DEEP"
    return json.dumps(recorded)


def a_document_with(place: str, tmp_path: Path) -> tuple[Callable[[str], Any], str, type]:
    """A reader, a valid document with ``DEEP`` where the nesting goes, and the error."""
    state = json.loads(paused_state().to_json())
    session = json.loads(wb.SessionState().to_json())
    match place:
        case "state":
            state["metadata"] = "DEEP"
            return wb.AgentState.from_json, json.dumps(state), wb.StateFormatError
        case "session":
            session["metadata"] = "DEEP"
            return wb.SessionState.from_json, json.dumps(session), wb.SessionFormatError
        case "cassette":
            return cassette_reader(tmp_path), a_cassette(tmp_path), wb.CassetteError
        case "otlp":
            return wb.load_trace, otlp(attribute("DEEP")), wb.TraceLoadError
        case "jaeger":
            return wb.load_trace, tagged("DEEP"), wb.TraceLoadError
        case "edited messages":
            return messages_from_json, '[{"role": "user", "parts": "DEEP"}]', wb.MessageFormatError
    raise AssertionError(place)


PLACES = ["state", "session", "cassette", "otlp", "jaeger", "edited messages"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 100_000])
def test_a_document_nested_too_deeply_is_its_readers_own_error(
    place: str, depth: int, tmp_path: Path
) -> None:
    read, document, error = a_document_with(place, tmp_path)
    with pytest.raises(error, match="nested"):
        read(document.replace('"DEEP"', deep_text(depth)))


def test_a_hooks_answer_nested_too_deeply_is_a_hook_failure() -> None:
    answer = '{"reason": ' + deep_text(MAX_DEPTH) + "}"
    with pytest.raises(wb.HookFailure, match="not JSON"):
        parse_output(wb.HookEvent.PRE_TOOL_USE, answer)


def test_a_model_answering_arguments_nested_too_deeply_gets_a_retry_prompt() -> None:
    @wb.tool
    def echo(value: Any) -> str:
        """Echo."""
        return "ok"

    deep = json.dumps({"value": nested(VALUE_DEPTH)})
    script = [
        wb.ModelResponse(parts=(wb.ToolCall.parse("echo", deep, "c1"),)),
        wb.ModelResponse.text("done"),
    ]
    result = wb.Agent(model=wb.ScriptedModel(script), tools=[echo]).run_sync("go")
    assert result.output == "done"
    (outcome,) = result.steps[0].tool_outcomes
    assert outcome.status == "retry" and f"nested at most {VALUE_DEPTH} levels" in outcome.content


def test_session_metadata_nested_300_deep_is_refused_when_read() -> None:
    """The issue's case: it was accepted, then the next execution could not be stored."""
    raw = json.loads(wb.SessionState().to_json())
    raw["metadata"] = {"deep": nested(300)}
    with pytest.raises(wb.SessionFormatError, match="nested deeper than"):
        wb.SessionState.from_json(json.dumps(raw))


@pytest.mark.parametrize("where", ["run", "session"])
def test_metadata_nested_too_deeply_is_refused_when_given(where: str) -> None:
    agent = wb.Agent(model=wb.ScriptedModel([wb.ModelResponse.text("ok")]))
    deep = {"deep": nested(VALUE_DEPTH + 1)}
    give = {
        "run": lambda: agent.run_sync("hi", metadata=deep),
        "session": lambda: wb.Session(agent, metadata=deep),
    }[where]
    with pytest.raises(ValueError, match=f"at most {VALUE_DEPTH} levels"):
        give()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None)
@given(leaf=json_values, depth=st.integers(0, VALUE_DEPTH - 4))
def test_whatever_is_accepted_is_stored_written_and_read_back(leaf: Any, depth: int) -> None:
    """Metadata and tool arguments as deep as a record keeps, through a run, the store, JSON."""
    value = nested(depth, leaf)
    try:
        metadata = {"deep": wb.AgentState(metadata={"v": value}).metadata["v"]}
    except ValueError:  # the leaf added levels past the limit: refused when given, as it must be
        return

    @wb.tool
    def echo(value: Any) -> str:
        """Echo."""
        return "ok"

    store = wb.RunStore(":memory:")
    call = wb.ModelResponse.tool_call("echo", {"value": value})
    agent = wb.Agent(
        model=wb.ScriptedModel([call, wb.ModelResponse.text("ok")]), tools=[echo], store=store
    )
    session = wb.Session(agent, metadata=metadata)
    result = session.run_sync("hi", metadata=metadata)
    assert result.status is wb.ExecutionStatus.COMPLETED
    loaded = store.load(result.run_id)
    assert loaded.state == result.state
    assert wb.AgentState.from_json(result.state.to_json()) == result.state
    assert wb.SessionState.from_json(session.state.to_json()) == session.state


# Strings full of what the text check must see through: brackets, quotes, backslashes, escapes
# (control characters are written as ``\n``, ``\u0001``: an escape whose letter is a word's).
tricky_text = st.text(
    st.sampled_from('[]{}"\\\\/ a\u00e9\U0001f600\ud800\n\t\b\f\r\x01bfnrtu'), max_size=6
)
tricky_values = st.recursive(
    st.none() | st.integers() | st.floats(allow_nan=False) | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=20,
)


def walked_depth(value: Any) -> int:
    """The depth ``too_deep`` sees: the least limit it accepts."""
    depth = 0
    while too_deep(value, depth):
        depth += 1
    return depth


@settings(max_examples=300, deadline=None)
@given(value=tricky_values, ascii_only=st.booleans(), indent=st.none() | st.integers(0, 2))
def test_the_depth_read_off_the_text_is_the_depth_of_what_it_parses_to(
    value: Any, ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert text_depth(text) == walked_depth(json.loads(text))
    assert text_depth(text.encode("utf-16", "surrogatepass")) == text_depth(text)


@pytest.mark.parametrize("inside", ["]]]]", "[[[[", '"]', "\\", '\\"]', "\\\\]"])
def test_brackets_and_escapes_in_strings_do_not_move_the_limit(inside: str) -> None:
    for depth in (MAX_DEPTH, MAX_DEPTH + 1):
        text = json.dumps(nested(depth, inside))
        if depth <= MAX_DEPTH:
            assert loads(text) == json.loads(text)
        else:
            with pytest.raises(ValueError, match="nested deeper"):
                loads(text)
