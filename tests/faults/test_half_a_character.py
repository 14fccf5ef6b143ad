"""A model's answer with half a character in it (a lone UTF-16 surrogate) is kept as text.

A server that streams an emoji as two escapes in two chunks gives each chunk's text half of it;
a broken one sends half alone. JSON, SQLite and protobuf refuse such text: the run could not be
stored, its report not written, its steps not tabled.
"""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.report import report_html

R = wb.ModelResponse


@wb.tool
def fetch(url: str = "") -> str:
    """Fetch a page."""
    return "ok"


@pytest.mark.parametrize(
    "script",
    [
        [R.text("half \ud83d a face")],
        [R.tool_call("fetch", {"url": "x\ud800"}), R.text("done")],
        [R.tool_call("bad\ud800name", {}), R.text("done")],  # an unknown tool: the model is told
    ],
    ids=["text", "arguments", "tool name"],
)
def test_an_answer_with_half_a_character_is_stored_reported_and_tabled(
    script: list[wb.ModelResponse], caplog: pytest.LogCaptureFixture
) -> None:
    store = wb.RunStore(":memory:")
    telemetry = wb.Telemetry(capture_content=True)
    agent = wb.Agent(
        model=wb.ScriptedModel(script), tools=[fetch], telemetry=telemetry, store=store
    )
    result = agent.run_sync("go")
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert "could not record" not in caplog.text
    stored = store.load(result.run_id)
    assert len(stored.steps) == len(script)
    said = stored.steps[0].response
    assert said is not None and "\ufffd" in said.model_dump_json()  # shown where the half was
    assert "\ufffd" in report_html(result, telemetry=telemetry)
    assert len(wb.trace_of(result, telemetry=telemetry).steps_df()) == len(script)


def test_an_emoji_streamed_as_two_halves_is_put_back_together() -> None:
    split = R.text("a \ud83d" + "\ude00 face")  # each chunk's escape read alone, then joined
    assert split.writable().text_content == "a \U0001f600 face"
    whole = R.text("a \U0001f600 face")
    assert whole.writable() is whole  # nothing to mend: the same response
