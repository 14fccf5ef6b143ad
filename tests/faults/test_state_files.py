"""Fault table: state JSON, snapshot payloads and edited messages that cannot be read.

Already covered in ``tests/test_state.py``: a future or missing schema version, unknown fields,
unknown part kinds, garbage text and wrong types (all `StateFormatError`); in
``tests/test_store.py``, snapshots with wrong types or damaged references (`StoreError`); in
``tests/test_notebook_builders.py``, edited messages with bad JSON (`MessageFormatError`).

Here: what a hostile or damaged file does beyond that: nesting deep enough to exhaust Python's
recursion, bytes that are not UTF-8, a file cut at any point, and the same for the texts a user
edits in the notebook and for a hook's answer; a session file given where a state is read, and
the other way round.
"""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.notebook.edit import messages_from_json, messages_from_text

DEEP = "[" * 100_000 + "]" * 100_000


def a_paused_state() -> wb.AgentState:
    @wb.tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    script = [wb.ModelResponse.tool_call("delete_file", {"path": "/tmp/x"})]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[delete_file])
    return agent.run_sync("delete /tmp/x").state


# --- issue 15 #8 ---------------------------------------------------------------------------------


def test_state_json_nested_100000_deep_is_a_state_format_error() -> None:
    with pytest.raises(wb.StateFormatError, match="not valid JSON"):
        wb.AgentState.from_json('{"schema_version": 1, "metadata": ' + DEEP + "}")


@pytest.mark.parametrize("data", [b"\x80\x81{}", b'{"schema_version": 1, "\xff": 1}'])
def test_state_bytes_that_are_not_utf8_are_a_state_format_error(data: bytes) -> None:
    with pytest.raises(wb.StateFormatError):
        wb.AgentState.from_json(data)


def test_a_state_file_cut_anywhere_is_a_state_format_error() -> None:
    text = a_paused_state().to_json()
    for end in range(0, len(text) - 1, 7):
        with pytest.raises(wb.StateFormatError):
            wb.AgentState.from_json(text[:end])
    assert wb.AgentState.from_json(text).status is wb.ExecutionStatus.PAUSED


# --- the same holes where a user or a hook hands us JSON -----------------------------------------


def test_edited_messages_nested_too_deeply_are_a_message_format_error() -> None:
    with pytest.raises(wb.MessageFormatError, match="nested too deeply"):
        messages_from_json(DEEP)
    with pytest.raises(wb.MessageFormatError, match=r"line 3: .* nested too deeply"):
        messages_from_text(f"## assistant\n@call add #c1\n{DEEP}")


def test_a_hook_answering_with_json_nested_too_deeply_is_a_recorded_hook_error() -> None:
    command = "python3 -c \"print('{\\\"a\\\": ' + '['*100000 + ']'*100000 + '}')\""
    agent = wb.Agent(
        model=wb.ScriptedModel([wb.ModelResponse.text("ok")]),
        hooks=[wb.CommandHook("UserPromptSubmit", command)],
    )
    result = agent.run_sync("hi")
    assert result.output == "ok"
    (error,) = result.steps[0].hook_errors
    assert "stdout is not JSON" in error


def test_a_session_read_as_a_state_or_a_state_as_a_session_says_which_it_is() -> None:
    """A state read as a session was 'session schema version 4 is not supported ... (written by
    a newer workbench)': upgrading would not have helped. A session read as a state listed its
    fields as unknown."""
    agent = wb.Agent(model=wb.ScriptedModel(["hi", "again"]))
    session = wb.Session(agent)
    session.run_sync("hello")
    state = a_paused_state().to_json()
    with pytest.raises(wb.SessionFormatError, match=r"not a session but a run's state: read it"):
        wb.Session.from_json(state, agent)
    with pytest.raises(wb.StateFormatError, match=r"not a state but a session: read it with wb"):
        wb.AgentState.from_json(session.state.to_json())
    assert wb.Session.from_json(session.state.to_json(), agent).state.executions
