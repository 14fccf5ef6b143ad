"""The notebook builders without a browser or a kernel: tables, figures, HTML, editing, the report.

The widgets are thin layers over these functions; they are driven end to end in a real kernel in
``test_widgets_kernel.py`` and in a browser in ``test_browser.py``.
"""

from __future__ import annotations

import doctest
import json
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests._report_page import page_table
from workbench import report as report_module
from workbench.cli import main
from workbench.demo import DEMO_PROMPT, demo_agent, run_demo
from workbench.models import prices as prices_module
from workbench.notebook import (
    MessageFormatError,
    message_html,
    messages_diff_html,
    messages_from_json,
    messages_from_text,
    messages_to_json,
    messages_to_text,
    status_html,
    step_html,
    timing_breakdown,
    timing_figure,
    tokens_figure,
    trace_figures,
    waterfall_figure,
)
from workbench.notebook import edit as edit_module
from workbench.notebook import tables as tables_module
from workbench.notebook.edit import keep_provenance
from workbench.notebook.html import FAILED_COLOUR
from workbench.notebook.tables import TIMING_PARTS
from workbench.report import report_html
from workbench.telemetry import derive as derive_module
from workbench.telemetry import spandata as spandata_module
from workbench.telemetry.frames import STEP_COLUMNS
from workbench.traces import combine_results


@pytest.fixture(scope="module")
def demo() -> wb.RunResult:
    """The demo run (paused for approval, then resumed), as one result."""
    return combine_results(run_demo(demo_agent(store=False)))


@pytest.fixture(scope="module")
def traced() -> tuple[wb.RunResult, wb.Telemetry]:
    """The demo run with telemetry, and the telemetry."""
    telemetry = wb.Telemetry(capture_content=True)
    return combine_results(run_demo(demo_agent(store=False, telemetry=telemetry))), telemetry


@pytest.mark.parametrize(
    "module",
    [tables_module, edit_module, derive_module, spandata_module, report_module, prices_module],
)
def test_docstring_examples_run(module: object) -> None:
    failures, tried = doctest.testmod(module, raise_on_error=False)  # type: ignore[arg-type]
    assert tried > 0 and failures == 0


# -- step table, timing, tokens -------------------------------------------------------------------


def test_the_step_table_has_a_row_per_record_with_resumed_label(demo: wb.RunResult) -> None:
    table = wb.trace_of(demo).steps_df()
    assert tuple(table.columns) == STEP_COLUMNS
    assert list(table["label"]) == ["1", "2", "3", "3 (resumed)", "4"]
    assert list(table["status"]) == ["running", "running", "paused", "running", "completed"]
    assert table["tools"].iloc[0] == "add (retry)" and table["errors"].iloc[0] == 1
    assert table["tools"].iloc[2] == "multiply, save_result (waits)"
    assert list(table["tool_calls"]) == [1, 1, 2, 1, 0]
    assert table["stop_reason"].iloc[-1] == "completed"
    assert list(table["input_tokens"]) == [s.usage.input_tokens for s in demo.steps]
    for part in ("prepare", "inference", "tools", "continuation"):
        recorded = [getattr(s.timing, part) * 1e3 for s in demo.steps]
        assert table[f"{part}_ms"].tolist() == pytest.approx(recorded)
    assert set(table["agent"]) == {"calculator"} and not table["in_progress"].any()


def test_timing_breakdown_adds_up_to_each_steps_time(demo: wb.RunResult) -> None:
    frame = timing_breakdown(wb.trace_of(demo))
    assert list(frame.columns) == list(TIMING_PARTS)
    assert frame.sum(axis=1).tolist() == pytest.approx([s.timing.total * 1e3 for s in demo.steps])


def _with_hooks(step: wb.StepRecord, *hooks: tuple[str, float]) -> wb.StepRecord:
    per_hook = tuple(
        wb.HookTiming(event=event, hook="h", duration=seconds) for event, seconds in hooks
    )
    timing = step.timing.model_copy(
        update={"tools": 0.004, "continuation": 0.002, "per_hook": per_hook}
    )
    return step.model_copy(update={"timing": timing})


def test_hook_time_is_taken_out_of_the_phase_it_ran_in(demo: wb.RunResult) -> None:
    step = _with_hooks(
        demo.steps[1], ("PreToolUse", 0.001), ("Stop", 0.0005), ("SessionStart", 0.002)
    )
    run = demo.model_copy(update={"steps": (step,)})
    row = timing_breakdown(wb.trace_of(run)).iloc[0]
    assert row["tools"] == pytest.approx(3.0)
    assert row["continuation"] == pytest.approx(1.5)
    assert row["hooks"] == pytest.approx(1.5)  # SessionStart runs before the step, on the run
    assert row["prepare"] == pytest.approx(step.timing.prepare * 1e3)


def test_timing_figure_stacks_the_parts(demo: wb.RunResult) -> None:
    fig = timing_figure(wb.trace_of(demo))
    assert [t.name for t in fig.data] == ["prepare", "inference", "tools", "continuation"]
    hooked = demo.model_copy(update={"steps": (_with_hooks(demo.steps[1], ("Stop", 0.0005)),)})
    assert [t.name for t in timing_figure(wb.trace_of(hooked)).data] == list(TIMING_PARTS)
    assert fig.layout.barmode == "stack"
    inference = next(t for t in fig.data if t.name == "inference")
    assert list(inference.x) == ["1", "2", "3", "3 (resumed)", "4"]
    assert list(inference.y) == pytest.approx([s.timing.inference * 1e3 for s in demo.steps])


def test_tokens_figure_has_tokens_and_a_cost_line_only_when_there_is_a_cost(
    demo: wb.RunResult,
) -> None:
    free = tokens_figure(wb.trace_of(demo))
    assert [t.name for t in free.data] == ["input tokens", "output tokens"]
    assert list(free.data[1].y) == [s.usage.output_tokens for s in demo.steps]
    priced = [
        s.model_copy(update={"usage": s.usage.model_copy(update={"cost": 0.01})})
        for s in demo.steps[:3]
    ]
    priced[2] = priced[2].model_copy(
        update={"usage": priced[2].usage.model_copy(update={"cost": None})}
    )
    fig = tokens_figure(wb.trace_of(demo.model_copy(update={"steps": tuple(priced)})))
    cost = fig.data[2]
    assert cost.name == "cost so far (USD)"
    assert list(cost.y) == [pytest.approx(0.01), pytest.approx(0.02), None]


# -- spans and the waterfall ----------------------------------------------------------------------


def _step(n: int, *below: str) -> dict[str, list[str]]:
    return {f"workbench.step {n}": list(below)}


CHAT, PREPARE, CONTINUATION = (
    "chat scripted-calculator",
    "workbench.prepare",
    "workbench.continuation",
)
DEMO_TREE = [
    {
        "invoke_agent calculator": [
            _step(1, PREPARE, CHAT, "execute_tool add", CONTINUATION),
            _step(2, PREPARE, CHAT, "execute_tool add", CONTINUATION),
            _step(3, PREPARE, CHAT, "execute_tool multiply", "execute_tool save_result"),
        ]
    },
    {
        "invoke_agent calculator": [
            _step(3, "execute_tool save_result", CONTINUATION),
            _step(4, PREPARE, CHAT, CONTINUATION),
        ]
    },
]
"""The demo's trace: paused at step 3 for the save, resumed in a second execution."""


def fold(trace: wb.Trace) -> list[Any]:
    """The trace's tree as nested {name: [children]}, children by start."""
    tree = trace.tree

    def node(position: int) -> Any:
        below = []
        child = position + 1
        while child < tree.ends[position]:
            below.append(node(child))
            child = tree.ends[child]
        name = tree.span_at(position).name
        return {name: below} if below else name

    roots, position = [], 0
    while position < len(tree):
        roots.append(node(position))
        position = tree.ends[position]
    return roots


def test_a_run_without_telemetry_has_the_exact_spans_of_a_paused_and_resumed_run(
    demo: wb.RunResult,
) -> None:
    trace = wb.trace_of(demo)
    assert fold(trace) == DEMO_TREE
    assert trace.steps == demo.steps
    runs = [s for s in trace.spans if s.parent_id is None]
    assert [r.attributes["workbench.run.status"] for r in runs] == ["paused", "completed"]
    assert len({r.trace_id for r in runs}) == 2  # each execution is a trace of its own
    saves = [s for s in trace.spans if s.name == "execute_tool save_result"]
    assert [s.attributes["workbench.tool.status"] for s in saves] == ["pending", "ok"]
    retry = next(s for s in trace.spans if s.name == "execute_tool add")
    assert retry.attributes["error.type"] == "tool_retry" and retry.is_error
    by_id = {s.span_id: s for s in trace.spans}
    for span in trace.spans:
        assert span.end_ns >= span.start_ns and not span.in_progress
        if span.parent_id is not None:
            assert by_id[span.parent_id].start_ns <= span.start_ns


def test_waterfall_orders_children_under_parents_and_colours_by_category(
    demo: wb.RunResult,
) -> None:
    fig = waterfall_figure(wb.trace_of(demo), title="demo")
    assert fig.layout.title.text == "demo"
    names = {t.name for t in fig.data}
    assert names == {"agent", "step", "phase", "model", "tool", "failed"}
    labels = list(fig.layout.yaxis.ticktext)
    assert labels[0] == " invoke_agent calculator"
    assert labels[1] == "· workbench.step 1"
    assert labels[2] == "·· workbench.prepare"
    tool = next(t for t in fig.data if t.name == "tool")
    assert any("gen_ai.tool.call.id" in h for h in tool.hovertext)
    assert all(w == 0.75 for w in [tool.width])
    failed = next(t for t in fig.data if t.name == "failed")  # the retried call: red, not orange
    assert failed.marker.color == FAILED_COLOUR and len(failed.y) == 1
    assert "execute_tool add</b> (tool) · failed" in failed.hovertext[0]


def test_waterfall_of_a_big_trace_drops_row_labels() -> None:
    spans = [
        wb.SpanData(
            trace_id="t", span_id=str(i), name=f"execute_tool t{i}", start_ns=i, end_ns=i + 1
        )
        for i in range(400)
    ]
    fig = waterfall_figure(wb.Trace.of(spans))
    assert fig.layout.yaxis.showticklabels is False
    assert fig.layout.yaxis.title.text == "400 spans"
    assert len(fig.data[0].y) == 400


def test_waterfall_draws_telemetry_spans(traced: tuple[wb.RunResult, wb.Telemetry]) -> None:
    result, telemetry = traced
    trace = wb.trace_of(result, telemetry=telemetry)
    recorded = {f"{s.context.span_id:016x}" for s in telemetry.spans if s.context}
    assert {s.span_id for s in trace.spans} == recorded  # the recorded spans, not rebuilt ones
    assert {"agent", "step", "model", "tool", "phase"} <= {s.category for s in trace.spans}
    by_id = {s.span_id: s for s in trace.spans}
    chat_parents = [by_id[s.parent_id].name for s in trace.model_calls() if s.parent_id]
    assert chat_parents and all(p.startswith("workbench.step") for p in chat_parents)
    assert set(trace_figures(trace)) == {"waterfall", "timing", "tokens"}


def test_a_telemetry_alone_is_a_trace(traced: tuple[wb.RunResult, wb.Telemetry]) -> None:
    _, telemetry = traced
    trace = wb.trace_of(telemetry)
    assert trace.steps == ()
    bars = trace_figures(trace)["timing"].data[0]
    assert len(bars.x) == len(telemetry.steps_df())
    with pytest.raises(wb.UsageError, match="a Telemetry has its own spans"):
        wb.trace_of(telemetry, telemetry=telemetry)


def test_combine_results_joins_executions() -> None:
    results = run_demo(demo_agent(store=False))
    combined = combine_results(results)
    assert combined.state == results[-1].state
    assert len(combined.steps) == sum(len(r.steps) for r in results)
    with pytest.raises(ValueError, match="no results"):
        combine_results([])


# -- HTML -----------------------------------------------------------------------------------------


def test_message_html_colours_roles_and_escapes() -> None:
    html = message_html(wb.Message.user("<script>alert(1)</script>"))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "wb-role-user" in html and "#e3f2fd" in html
    retry = wb.Message(role="tool", parts=(wb.RetryPrompt(content="fix b", name="add"),))
    assert "wb-retry" in message_html(retry) and "#fffde7" in message_html(retry)
    error = wb.Message(role="tool", parts=(wb.ToolResult(call_id="c", content="x", is_error=True),))
    assert ">error<" in message_html(error)


def test_step_html_shows_calls_results_retries_and_a_diff(demo: wb.RunResult) -> None:
    first = step_html(demo.steps[0], demo.steps)
    assert "Step 1" in first and "wb-retry" in first and "twenty-five" in first
    assert "running" not in first  # the run went on from step 1: its header says nothing of it
    last = step_html(demo.steps[-1], demo.steps)
    assert "completed · stop: completed" in last  # the step that ended the run says how
    assert "What the model saw</h4>" in first
    second = step_html(demo.steps[1], demo.steps)
    assert "against step 1" in second
    added = re.findall(r"<span>\+</span> \[(\w+)\]", second)
    assert added == ["assistant", "tool"]  # step 1's call and its retry prompt
    resumed = step_html(demo.steps[3], demo.steps)
    assert "resumed after a pause" in resumed and "saved double = 84" in resumed


def test_step_html_shows_hook_errors_and_messages(demo: wb.RunResult) -> None:
    step = _with_hooks(demo.steps[1], ("PreToolUse", 0.001)).model_copy(
        update={
            "hook_errors": ("hook 'x' timed out",),
            "hook_messages": ("a Stop hook ended the run",),
        }
    )
    html = step_html(step, demo.steps)
    assert "PreToolUse" in html and "timed out" in html and "a Stop hook ended the run" in html


def _diff_text(before: list[wb.Message], after: list[wb.Message]) -> str:
    """A diff's lines as read on the page (its tags dropped)."""
    return re.sub(r"<[^>]+>", "", messages_diff_html(before, after))


def test_messages_diff_html_marks_added_and_removed_lines() -> None:
    before = [wb.Message.user("a"), wb.Message.assistant("b")]
    after = [wb.Message.user("a"), wb.Message.assistant("c")]
    html = _diff_text(before, after)
    assert "- [assistant] b" in html and "+ [assistant] c" in html
    assert "no change" in messages_diff_html(before, before)
    # a line's text is the same string added or removed: a page of every diff stores it once
    line = "</span> [assistant] c</div>"
    assert line in messages_diff_html(before, after) and line in messages_diff_html(after, before)


def test_a_long_conversations_diff_shows_what_changed_and_counts_the_rest() -> None:
    history = [wb.Message.user("q")] + [wb.Message.assistant(f"a{i}") for i in range(50)]
    grown = _diff_text(history, [*history, wb.Message.user("more?")])
    assert "51 unchanged lines" in grown  # every earlier line, the one shown as context too
    assert "+ [user] more?" in grown and "  [assistant] a49" in grown and "a48" not in grown
    edited = [*history[:10], wb.Message.assistant("X"), *history[11:]]
    changed = _diff_text(history, edited)
    assert "- [assistant] a9" in changed and "+ [assistant] X" in changed
    assert "50 unchanged lines" in changed and "a10" in changed and "a7" not in changed
    shorter = _diff_text(history, history[:-1])
    assert "- [assistant] a49" in shorter and "50 unchanged lines" in shorter
    first = _diff_text([], history[:1])  # a run's first step: nothing was there to keep
    assert "+ [user] q" in first and "unchanged" not in first
    assert "1 unchanged line  [user] q" in _diff_text(history[:1], history[:2])


def test_status_html_shows_status_step_budget_and_errors(demo: wb.RunResult) -> None:
    snapshot = demo.snapshots[0]
    html = status_html(demo.state, None, snapshot.budget, note="hello")
    assert "completed" in html and "stop reason <b>completed</b>" in html
    assert "10 steps" in html and "hello" in html
    failed = demo.state.model_copy(update={"error": wb.ErrorInfo(type="Boom", message="bad")})
    assert "Boom: bad" in status_html(failed, None, None)
    assert "not started" in status_html(failed, None, None)


# -- editing messages -----------------------------------------------------------------------------


def test_text_form_round_trips_every_kind_of_part(demo: wb.RunResult) -> None:
    messages = list(demo.messages)
    back = messages_from_text(messages_to_text(messages))
    assert [(m.role, m.parts) for m in back] == [(m.role, m.parts) for m in messages]
    kept = keep_provenance(messages, back)
    assert all(k is m for k, m in zip(kept, messages, strict=True))


def test_json_form_round_trips(demo: wb.RunResult) -> None:
    back = messages_from_json(messages_to_json(demo.messages))
    assert [(m.role, m.parts) for m in back] == [(m.role, m.parts) for m in demo.messages]
    assert all(m.run_id is None for m in back)


def test_edited_messages_lose_provenance_only_where_edited(demo: wb.RunResult) -> None:
    text = messages_to_text(demo.messages).replace("What is 17 + 25", "What is 18 + 25")
    kept = keep_provenance(demo.messages, messages_from_text(text))
    assert kept[0] is demo.messages[0]
    assert kept[1] is not demo.messages[1] and kept[1].run_id is None
    assert "18 + 25" in kept[1].text


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("hello\n## user\nhi", "line 1: text before the first message"),
        ("## robot\nhi", "line 1: unknown role 'robot'"),
        ('## assistant\n@call add #c1\n{"a": 1,', "line 3: the arguments of @call add are not"),
        ("## assistant\n@call add #c1\n[1]", "line 3: the arguments of @call add must be a JSON"),
        ("## assistant\n@call add\n{}", "line 2: @call needs a call id"),
        ("## tool\n@frobnicate x", "line 2: '@frobnicate x' is not a part"),
        ("## user\n\n## user\nhi", "line 1: the user message is empty"),
        ("", "no messages"),
    ],
)
def test_text_form_errors_say_where(text: str, error: str) -> None:
    with pytest.raises(MessageFormatError, match=re.escape(error)):
        messages_from_text(text)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[1,", "not valid JSON at line 1"),
        ('{"role": "user"}', "expected a JSON list of messages, got dict"),
        ('[{"role": "user", "parts": []}, {"role": "bot", "parts": []}]', "message 1: role"),
        ('[{"role": "user", "parts": [{"kind": "text"}]}]', "message 0: parts.0.text.text"),
    ],
)
def test_json_form_errors_say_which_message(text: str, error: str) -> None:
    with pytest.raises(MessageFormatError, match=re.escape(error)):
        messages_from_json(text)


# -- the report and the CLI -----------------------------------------------------------------------


def test_report_is_standalone_with_every_step(traced: tuple[wb.RunResult, wb.Telemetry]) -> None:
    result, telemetry = traced
    html = report_html(result, telemetry=telemetry)
    assert html.startswith("<!DOCTYPE html>")
    assert html.count('class="wb-step-section"') == len(result.steps)
    for name in ("explorer", "timing", "tokens"):
        assert f'<h2 id="{name}">' in html
    assert html.count('class="wb-bars"') == 2 and "staticModel(data)" in html
    assert not re.search(r"<script[^>]+src=", html)  # nothing is loaded from elsewhere
    assert "plotly" not in html.lower() and len(html) < 1_000_000  # it was 4.8 MB with plotly.js
    assert result.output is not None and escape(result.output) in html


def test_cli_report_writes_a_stored_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_path = tmp_path / "runs.sqlite"
    with wb.RunStore(store_path) as store:
        result = demo_agent(store=store).run_sync(DEMO_PROMPT)
    out = tmp_path / "run.html"
    assert main(["report", result.run_id[:10], "-o", str(out), "--store", str(store_path)]) == 0
    html = out.read_text(encoding="utf-8")
    assert result.run_id in html and html.count('class="wb-step-section"') == len(result.steps)
    assert "opens offline" in capsys.readouterr().out
    assert main(["report", "run_nope", "-o", str(out), "--store", str(store_path)]) == 2
    assert "no run 'run_nope'" in capsys.readouterr().err


def test_cli_demo_writes_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_STORE", "off")
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("step  ")).split("  ")
    assert {"prepare ms", "model ms", "tools ms", "tokens in/out"} <= {h.strip() for h in header}
    html = (tmp_path / "workbench-demo" / "report.html").read_text(encoding="utf-8")
    assert "Messages, step by step" in html and "saved double = 84" in html


def test_notebook_all_is_what_the_package_exports() -> None:
    import inspect

    import workbench.notebook as package

    exported = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(package.__all__) == exported
    assert {"Stepper", "TraceView", "RerunPanel"} <= exported


# -- polish found by trying it as a new user -------------------------------------------------------


def test_steps_text_counts_steps_and_says_when_one_resumed(demo: wb.RunResult) -> None:
    from workbench.notebook.tables import steps_text

    assert len(demo.steps) == 5
    assert steps_text(demo.steps) == "4 steps (5 records: 1 resumed after a pause)"
    assert steps_text(demo.steps[:1]) == "1 step"
    many = [demo.steps[0].model_copy(update={"index": i}) for i in range(1, 1201)]
    assert steps_text(many) == "1,200 steps"  # a long run's count reads at a glance


def _heads_and_rows(trace: wb.Trace) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    def key(agent: Any, run_id: Any, step: Any, cost: Any) -> tuple[Any, ...]:
        return (agent, run_id, step, None if cost is None or cost != cost else cost)  # NaN: none

    rows = trace.step_rows()
    heads = [key(*head) for head in trace.step_heads()]
    return heads, [key(r["agent"], r["run_id"], r["step"], r.get("cost")) for r in rows]


@pytest.mark.parametrize("source", ["demo", "team", "pydantic-ai"])
def test_a_trace_as_a_cells_value_counts_its_steps_without_making_the_step_table(
    source: str, demo: wb.RunResult
) -> None:
    """A 100,000-span trace took 1.8 s to show as a cell, a second of it making the step table
    for the line that counts its steps. The steps counted are the table's, one by one."""
    from tests._failing_team import team
    from tests.foreign import pydantic_ai_agent

    traces = {
        "demo": lambda: wb.trace_of(demo),
        "team": lambda: wb.trace_of(team().run_sync("price the hat")),
        "pydantic-ai": lambda: wb.trace_of(pydantic_ai_agent.failing_spans()),
    }
    trace = traces[source]()
    html = trace._repr_html_()
    made = "_step_rows" in vars(trace)
    assert not made or source == "demo"  # counted; a resumed run's clocks are read of its rows
    heads, rows = _heads_and_rows(trace)
    assert heads == rows and rows
    said = {"demo": "4 steps (1 resumed after a pause)", "team": "8 steps of 3 agents"}
    assert said.get(source, f"{len(rows)} step") in html


def test_report_says_steps_and_links_the_resumed_part_by_its_label(demo: wb.RunResult) -> None:
    html = report_html(demo)
    assert "4 steps (1 resumed after a pause)" in html
    assert '<a href="#step-3">3 (resumed)</a>' in html
    assert '<div class="wb-table" data-table="wb-steps-data">' in html  # scrolls in its box
    steps = page_table(html, "wb-steps")  # drawn by the page, a link to its section a row
    assert [row[0] for row in steps] == ["step", "1", "2", "3", "3 (resumed)", "4"]
    assert steps[0][5:7] == ["time (ms)", "prepare (ms)"]
    assert re.fullmatch(r"\d+\.\d{3}", steps[1][5])  # the milliseconds shown to three places
    assert html.count("Time per step") == 1  # one heading, no figure title under it
    assert 'id="wb-explorer"' in html and "staticModel(data)" in html


@pytest.mark.parametrize("name", ["explorer.js", "explorer_static.js", "report_tables.js"])
def test_a_report_inlines_its_scripts_without_their_comments(name: str) -> None:
    from workbench.notebook.explorer_view import STATIC, page_script

    written = (STATIC / name).read_text(encoding="utf-8")
    inlined = page_script(name)
    assert "//" in written and "//" not in inlined  # every // was a comment: none in a string
    kept = []  # each line without its comment, a line of a comment alone left out
    for line in written.splitlines():
        if not line.lstrip().startswith("//"):
            kept.append(line.split("//")[0].rstrip())
    assert inlined.splitlines() == kept


def test_the_reports_steps_table_shows_a_small_cost_as_not_zero() -> None:
    @wb.tool
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    script = iter(
        [
            wb.ModelResponse.tool_call("echo", {"text": "x"}, usage=wb.Usage(cost=0.00001)),
            wb.ModelResponse.tool_call("echo", {"text": "y"}, usage=wb.Usage(cost=0.00003)),
            wb.ModelResponse.text("done", usage=wb.Usage(cost=0.0)),
        ]
    )
    model = wb.FunctionModel(lambda messages, request: next(script), name="m")
    agent = wb.Agent(model=model, tools=[echo], store=False)
    html = report_html(agent.run_sync("go"))
    steps = page_table(html, "wb-steps")
    cost = steps[0].index("cost ($)")
    assert [row[cost] for row in steps[1:]] == ["0.000010", "0.000030", "0.000"]
    start = html.index('id="wb-steps-data">')
    table = json.loads(html[html.index(">", start) + 1 : html.index("</script>", start)])
    assert table["columns"][cost] == [0.00001, 0.00003, 0.0]  # numbers: sorted as numbers


def test_the_reports_step_links_fold_past_a_hundred_steps() -> None:
    from tests._counting import counting_agent
    from workbench.report import NAV_OPEN

    few = report_html(counting_agent(3).run_sync("count"))
    assert '<nav>steps: <a href="#step-0">1</a>' in few  # open: a few links
    many = report_html(counting_agent(NAV_OPEN + 1).run_sync("count"))
    assert f"<nav><details><summary>{NAV_OPEN + 1:,} steps: go to one</summary>" in many
    assert f'<a href="#step-{NAV_OPEN}">{NAV_OPEN + 1}</a>' in many  # every step still linked


def test_a_failed_model_call_is_on_the_timeline() -> None:
    async def down(messages: object, request: object) -> wb.ModelResponse:
        raise RuntimeError("model down")

    result = wb.Agent(model=wb.FunctionModel(down, name="m"), store=False).run_sync("hi")
    assert result.status.value == "failed" and result.steps[0].timing.inference > 0
    chats = [s for s in wb.trace_of(result).spans if s.name == "chat m"]
    assert len(chats) == 1 and chats[0].status == "error"
    assert chats[0].attributes["error.type"] == "RuntimeError"  # what the model raised


def test_tokens_figure_without_tokens_starts_at_zero_and_says_why() -> None:
    async def quiet(messages: object, request: object) -> wb.ModelResponse:
        return wb.ModelResponse.text("hi", usage=wb.Usage())  # a server that counts nothing

    result = wb.Agent(model=wb.FunctionModel(quiet, name="m"), store=False).run_sync("hello")
    assert result.usage.total_tokens == 0
    figure = tokens_figure(wb.trace_of(result))
    assert figure.layout.yaxis.range == (0, 1)
    assert "reported no tokens" in figure.layout.title.text
    assert figure.layout.legend.y < 0  # under the plot, clear of the title


def test_stacked_bars_scale_to_the_largest_and_escape_labels() -> None:
    from workbench.notebook.bars import stacked_bars_html

    colours = {"a": "#111111", "b": "#222222"}
    html = stacked_bars_html(
        [("<one>", {"a": 1.0, "b": 1.0}, ""), ("two", {"a": 4.0, "b": 0.0}, " · note")],
        colours,
        unit="ms",
    )
    assert "&lt;one&gt;" in html and "<one>" not in html
    assert "width:25.000%" in html and "width:100.000%" in html  # 1 of 4, and the largest
    assert html.count("<div title=") == 3  # a part of zero draws nothing
    assert "2.000 ms" in html and "4.000 ms · note" in html
    assert "nothing here" in stacked_bars_html([("x", {"a": 0.0}, "")], colours, unit="ms",
                                                empty="nothing here")  # fmt: skip


def test_more_steps_than_bars_are_drawn_as_runs_of_steps_with_their_sums() -> None:
    from workbench.notebook.bars import MAX_BARS, grouped, stacked_bars_html

    rows = [(f"step {i}", {"a": 1.0, "b": 2.0}, f" · ${i}") for i in range(1, 1_201)]
    bars = grouped(rows)
    assert len(bars) == 400 <= MAX_BARS  # three steps a bar
    assert bars[0] == ("step 1 to 3", {"a": 3.0, "b": 6.0}, " (3 steps) · $3")
    assert bars[-1][0] == "step 1198 to 1200"
    assert sum(sum(parts.values()) for _, parts, _ in bars) == 1_200 * 3.0  # nothing lost
    assert grouped(rows[:MAX_BARS]) == rows[:MAX_BARS]  # as many bars as steps: one each
    assert stacked_bars_html(rows, {"a": "#111", "b": "#222"}, unit="ms").count("<tr>") == 400


def test_timing_and_token_bars_of_a_run(demo: wb.RunResult) -> None:
    from workbench.notebook.bars import timing_bars_html, tokens_bars_html

    timing = timing_bars_html(wb.trace_of(demo))
    assert "step 3 (resumed)" in timing and "inference" in timing
    tokens = tokens_bars_html(wb.trace_of(demo))
    assert f"{demo.steps[0].usage.total_tokens} tokens" in tokens
    assert "no steps yet" in timing_bars_html(wb.Trace.of([]))
