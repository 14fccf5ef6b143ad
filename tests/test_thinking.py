"""`wb.ThinkingPart`: a model's reasoning kept as a part, through every place a message goes.

Stored, JSON round-trip, diffed, in the request diff, replayed strictly, in cassettes, drawn
folded by every view, written to spans as the conventions' ``reasoning`` part and read back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import TypeAdapter

import workbench as wb
from tests._report_page import drawn
from workbench.history import approx_tokens
from workbench.hooks.transcript import transcript_line
from workbench.notebook.edit import keep_provenance, messages_from_text, messages_to_text
from workbench.notebook.html import message_html, messages_diff_html
from workbench.telemetry.recover import messages_of_chat

SIGNATURE = "EqQBCkgIARABGAIiQL2b" + "x" * 40
THOUGHT = wb.ThinkingPart(
    text="The user wants 17 + 25; the add tool does that.",
    signature=SIGNATURE,
    provider="anthropic",
)
REDACTED = wb.ThinkingPart(signature="ZW5jcnlwdGVk" * 8, provider="anthropic", redacted=True)
REASONING = wb.ThinkingPart(
    text="Summing.", signature="gAAAAB" + "q" * 30, provider="openai", id="rs_1"
)


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def thinking_model(thought: wb.ThinkingPart = THOUGHT) -> wb.ScriptedModel:
    """A model that thinks before each answer: a call, then the sum."""
    return wb.ScriptedModel(
        [
            wb.ModelResponse(
                parts=(thought, REDACTED, wb.ToolCall(name="add", arguments={"a": 17, "b": 25})),
                finish_reason=wb.FinishReason.TOOL_CALLS,
            ),
            wb.ModelResponse(parts=(REASONING, wb.TextPart(text="17 + 25 = 42"))),
        ]
    )


def calculator(model: wb.Model, **options: object) -> wb.Agent:
    options.setdefault("store", False)
    return wb.Agent(
        model=model,
        name="calculator",
        tools=[add],
        stop=wb.MaxSteps(4),
        **options,  # type: ignore[arg-type]
    )


def run(model: wb.Model | None = None, **options: object) -> wb.RunResult:
    result = calculator(model or thinking_model(), **options).run_sync("What is 17 + 25?")
    assert result.status is wb.ExecutionStatus.COMPLETED, result.error
    return result


def test_thinking_is_a_part_of_the_answer_not_its_text() -> None:
    result = run()
    answer = result.state.messages[1]
    assert answer.parts[:2] == (THOUGHT, REDACTED)
    assert answer.text == "" and answer.tool_calls[0].name == "add"
    assert result.output == "17 + 25 = 42"  # the reasoning is not the answer


def test_a_message_with_thinking_round_trips_through_json() -> None:
    message = wb.Message(role="assistant", parts=(THOUGHT, REDACTED, REASONING))
    adapter = TypeAdapter(wb.Message)
    assert adapter.validate_json(adapter.dump_json(message)) == message
    dumped = message.model_dump(mode="json")["parts"]
    assert [p["kind"] for p in dumped] == ["thinking"] * 3
    assert dumped[1]["redacted"] is True and dumped[2]["id"] == "rs_1"


def test_a_state_with_thinking_round_trips_and_an_older_file_still_loads() -> None:
    result = run()
    state = wb.AgentState.from_json(result.state.to_json())
    assert state.messages == result.state.messages
    # a state written before thinking existed: no such part, same schema version, it loads
    older = json.loads(result.state.to_json())
    for message in older["messages"]:
        message["parts"] = [p for p in message["parts"] if p["kind"] != "thinking"]
    assert wb.AgentState.from_json(json.dumps(older)).messages[1].parts[0].kind == "tool_call"


def test_thinking_is_stored_and_loaded(tmp_path: Path) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    result = run(store=store)
    loaded = store.load(result.run_id)
    assert loaded.state.messages == result.state.messages
    assert loaded.steps[0].response is not None
    assert loaded.steps[0].response.parts[:2] == (THOUGHT, REDACTED)
    assert loaded.steps[1].messages_in[1].parts[0].signature == SIGNATURE


def test_thinking_is_in_the_spans_in_the_conventions_shape() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    run(telemetry=telemetry)
    chats = [s for s in telemetry.spans if s.name.startswith("chat")]
    output = json.loads(str(chats[0].attributes["gen_ai.output.messages"]))
    thought, redacted = output[0]["parts"][:2]
    assert thought == {
        "type": "reasoning",
        "content": THOUGHT.text,
        "signature": SIGNATURE,
        "provider": "anthropic",
    }
    assert redacted["type"] == "reasoning" and redacted["redacted"] is True
    assert redacted["content"] == ""
    # the next call was sent the reasoning back: it is in its input messages too
    sent = json.loads(str(chats[1].attributes["gen_ai.input.messages"]))
    assert sent[1]["parts"][0] == thought


def test_thinking_read_back_from_spans_is_the_part_it_was() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    result = run(telemetry=telemetry)
    chats = [s for s in telemetry.spans if s.name.startswith("chat")]
    messages = messages_of_chat(dict(chats[1].attributes or {}))
    assert messages[1].parts[:2] == (THOUGHT, REDACTED)
    assert messages[-1].parts == result.state.messages[-1].parts  # the answer, with REASONING
    # pydantic-ai writes its thinking as "thinking": read as a thinking part, not as text
    theirs = {
        "gen_ai.input.messages": "[]",
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "thinking", "content": "hmm"}]}]
        ),
    }
    assert messages_of_chat(theirs)[0].parts == (wb.ThinkingPart(text="hmm"),)


def test_a_span_without_the_reasoning_keys_is_read_as_plain_thinking() -> None:
    attributes = {
        "gen_ai.input.messages": "[]",
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "reasoning", "content": "why"}]}]
        ),
    }
    (part,) = messages_of_chat(attributes)[0].parts
    assert part == wb.ThinkingPart(text="why")


def test_views_draw_thinking_folded() -> None:
    html = message_html(wb.Message(role="assistant", parts=(THOUGHT, REDACTED)))
    assert html.count('<details class="wb-thinking"') == 2
    assert "<details open" not in html  # folded by default
    assert "thinking · 47 characters (anthropic, signature kept)" in html
    assert "redacted thinking (anthropic, 96 characters)" in html
    assert SIGNATURE not in html  # the signature is opaque: said to be there, not shown


def test_thinking_text_is_escaped_in_views() -> None:
    hostile = wb.ThinkingPart(text='<img src=x onerror="alert(1)"> </details><b>out</b>')
    html = message_html(wb.Message(role="assistant", parts=(hostile,)))
    assert "<img" not in html and "</details><b>" not in html
    assert "&lt;img src=x" in html


def test_the_step_diff_shows_a_signature_that_changed_under_the_same_text() -> None:
    before = [wb.Message(role="assistant", parts=(THOUGHT,))]
    resigned = THOUGHT.model_copy(update={"signature": SIGNATURE[:-4] + "ABCD"})
    html = messages_diff_html(before, [wb.Message(role="assistant", parts=(resigned,))])
    assert "signature …xxxxxxxxABCD" in html and "signature …xxxxxxxxxxxx" in html


def test_diff_of_two_runs_names_the_thinking_that_changed() -> None:
    original = run()
    other = thinking_model(THOUGHT.model_copy(update={"text": "Adding with a tool."}))
    changes = str(wb.diff(original, run(other)))
    assert "thinking 'The user wants 17 + 25; the add tool does that.'" in changes
    assert "thinking 'Adding with a tool.'" in changes


def test_strict_replay_names_a_thinking_part_that_was_not_sent_back() -> None:
    recorded = run()
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    assert run(replay).output == recorded.output  # sent back unchanged: it replays

    def drop_signatures(messages: Sequence[wb.Message]) -> list[wb.Message]:
        return [
            m.model_copy(
                update={
                    "parts": tuple(
                        p.model_copy(update={"signature": "forged"})
                        if isinstance(p, wb.ThinkingPart) and not p.redacted
                        else p
                        for p in m.parts
                    )
                }
            )
            for m in messages
        ]

    replay = wb.ReplayModel.from_run(recorded, strict=True)
    result = calculator(replay, history_processors=[drop_signatures]).run_sync("What is 17 + 25?")
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "ReplayDivergence"
    assert "message 1 (assistant), part 0" in result.error.message
    assert "- recorded: thinking signature 'EqQBCkgIARABGAIiQL2b" in result.error.message
    assert "+ sent:     thinking signature 'forged'" in result.error.message


def test_a_cassette_keeps_thinking_and_replays_it(tmp_path: Path) -> None:
    path = tmp_path / "thinking.json"
    live = run(wb.cassette(path, thinking_model(), mode="record"))
    recorded = json.loads(path.read_text())
    answer = recorded["interactions"][0]["response"]["parts"]
    assert answer[0]["signature"] == SIGNATURE and answer[1]["redacted"] is True
    replayed = run(wb.cassette(path, wb.ScriptedModel([]), mode="replay"))
    assert replayed.state.messages[1].parts == live.state.messages[1].parts


def test_the_text_form_carries_thinking_and_an_unchanged_one_keeps_its_signature() -> None:
    messages = [wb.Message(role="assistant", parts=(THOUGHT, REDACTED, REASONING))]
    text = messages_to_text(messages)
    assert "@thinking anthropic\nThe user wants" in text
    assert "@redacted_thinking anthropic" in text and "@thinking openai #rs_1" in text
    assert SIGNATURE not in text
    assert keep_provenance(messages, messages_from_text(text)) == messages  # signatures back
    edited = messages_from_text(text.replace("Summing.", "Adding."))
    kept = keep_provenance(messages, edited)
    assert kept[0].parts[2] == wb.ThinkingPart(text="Adding.", provider="openai", id="rs_1")


def test_the_hook_transcript_has_claude_codes_thinking_blocks() -> None:
    message = wb.Message(role="assistant", parts=(THOUGHT, REDACTED))
    line = transcript_line(message, 0, session_id="s", cwd="/", timestamp="t")
    assert line["message"]["content"] == [
        {"type": "thinking", "thinking": THOUGHT.text, "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED.signature},
    ]


def test_thinking_counts_against_a_token_window() -> None:
    plain = wb.Message(role="assistant", parts=(wb.TextPart(text="x"),))
    thinking = wb.Message(role="assistant", parts=(wb.TextPart(text="x"), THOUGHT))
    assert approx_tokens(thinking) > approx_tokens(plain)


@pytest.mark.parametrize("part", [THOUGHT, REDACTED, REASONING], ids=["signed", "redacted", "id"])
def test_describe_part_tells_thinking_parts_apart(part: wb.ThinkingPart) -> None:
    from workbench.models.request_diff import describe_part

    text = describe_part(part)
    assert part.provider is not None and part.provider in text
    if part.id is not None:
        assert part.id in text
    assert text.startswith("redacted thinking" if part.redacted else "thinking '")


def test_the_explorer_and_the_report_draw_thinking_folded() -> None:
    from workbench.notebook.explorer_html import genai_messages_html
    from workbench.report import report_html

    telemetry = wb.Telemetry(capture_content=True)
    result = run(telemetry=telemetry)
    chat = next(s for s in telemetry.spans if s.name.startswith("chat"))
    # a span read from elsewhere (no records): the explorer draws the conventions' parts
    html = genai_messages_html(chat.attributes["gen_ai.output.messages"])
    assert html.count('<details class="wb-thinking"') == 2 and "<details open" not in html
    assert "thinking · 47 characters (anthropic, signature kept)" in html
    # the run's report (from its records) and a trace's report (from captured content)
    for report in (report_html(result), report_html(telemetry.trace())):
        page = drawn(report)  # its step sections filled, as in a browser
        assert '<details class="wb-thinking' in page and "<details open" not in page
        assert "The user wants 17 + 25" in page
