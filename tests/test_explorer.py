"""The trace explorer's builders and widget, without a browser.

Traces come from real runs (the demo agent, with and without telemetry) and from small
`wb.Trace`s of another tracer's spans made here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests._report_page import (
    detail_numbers,
    drawn,
    numbers,
    page_data,
    page_detail,
    page_parent,
    page_piece,
)
from tests.test_trace_cli import foreign_trace
from workbench.demo import DEMO_PROMPT, demo_agent
from workbench.notebook import (
    ExplorerView,
    SpanFilter,
    TraceExplorer,
    explorer_page_html,
    genai_messages_html,
)
from workbench.notebook.explorer_data import visible_positions
from workbench.notebook.explorer_html import StepRecords, safe_text
from workbench.notebook.explorer_page import WHERE, ExplorerPage
from workbench.telemetry.tree import SpanTree


def span(
    span_id: str,
    parent_id: str | None,
    name: str,
    start_ns: int,
    end_ns: int,
    attributes: dict[str, Any] | None = None,
    **fields: Any,
) -> wb.SpanData:
    """A span of another tracer's (its own resource and scope), in trace ``t1``."""
    return wb.SpanData(
        trace_id="t1",
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        start_ns=start_ns,
        end_ns=end_ns,
        attributes=attributes or {},
        resource={"service.name": "other"},
        scope="someone-else",
        **fields,
    )


def small_trace() -> wb.Trace:
    """agent → two steps → a chat and a tool each; the second tool failed."""
    ms = 1_000_000
    spans = [
        span("a", None, "invoke_agent lead", 0, 100 * ms),
        span("s1", "a", "workbench.step 1", 0, 40 * ms),
        span("c1", "s1", "chat gpt", 1 * ms, 30 * ms, {"gen_ai.usage.input_tokens": 10}),
        span("t1", "s1", "execute_tool search", 31 * ms, 39 * ms, {"q": "needle"}),
        span("s2", "a", "workbench.step 2", 40 * ms, 100 * ms),
        span("c2", "s2", "chat gpt", 41 * ms, 60 * ms),
        span(
            "t2",
            "s2",
            "execute_tool delete",
            61 * ms,
            99 * ms,
            {"error.type": "tool_error"},
            events=(wb.SpanEvent(name="exception", time_ns=62 * ms,
                                 attributes={"exception.message": "disk full"}),),
            links=(wb.SpanLink(trace_id="t0", span_id="x0",
                               attributes={"workbench.link.reason": "resume"}),),
            status="error",
            status_message="boom",
        ),
    ]  # fmt: skip
    return wb.Trace.of(reversed(spans))  # any order in, tree order out


def view_of(*spans: wb.SpanData) -> ExplorerView:
    return ExplorerView(wb.Trace.of(spans))


def names(view: ExplorerView, rows: int = 100) -> list[str]:
    return [r["id"] for r in view.rows(0, rows)]


def test_tree_is_depth_first_with_children_by_start_and_subtree_ends() -> None:
    tree = small_trace().tree
    order = [tree.span_at(p).span_id for p in range(len(tree.order))]
    assert order == ["a", "s1", "c1", "t1", "s2", "c2", "t2"]
    assert list(tree.depths) == [0, 1, 2, 2, 1, 2, 2]
    assert list(tree.ends) == [7, 4, 3, 4, 7, 6, 7]
    assert tree.ancestors(tree.positions["t2"]) == [tree.positions["s2"], tree.positions["a"]]


def test_orphans_and_parent_cycles_still_show_every_span() -> None:
    spans = [
        span("x", "missing", "orphan", 5, 6),
        span("p", "q", "loop one", 1, 2),
        span("q", "p", "loop two", 2, 3),
    ]
    tree = SpanTree.of(spans)
    assert sorted(tree.positions) == ["p", "q", "x"]
    assert len(tree.order) == 3
    assert tree.ancestors(tree.positions["q"]) == [tree.positions["p"]]  # no endless walk
    assert [s.span_id for s in tree.spans] == ["p", "q", "x"]  # in start order


def test_the_page_reads_parents_off_the_depths_and_stores_a_line_it_cannot_draw() -> None:
    """The page writes no parents: read off the depths (depth-first order), they are the tree's.
    A span whose parent is not the one the tree puts it under (outside the trace, in a loop)
    has its line of ids stored with its detail."""
    loops = [
        span("x", "missing", "orphan", 5, 6),
        span("y", "x", "under the orphan", 5, 6),
        span("p", "q", "loop one", 1, 2),
        span("q", "p", "loop two", 2, 3),
    ]
    for trace in (small_trace(), wb.Trace.of(loops)):
        view = ExplorerView(trace)
        data = page_data(explorer_page_html(view))
        tree = view.tree
        columns = data["spans"]
        for position, parent in enumerate(tree.parents):
            assert page_parent(data, position) == (-1 if parent is None else parent)
            assert page_detail(data, position) == view.detail(tree.span_at(position).span_id)
            (row,) = view.rows(position, 1)
            kind = [row["category"], row["status"], tree.span_at(position).status, 0]
            assert columns["kinds"][columns["kind"][position]] == kind
        assert len(columns["kinds"]) < len(tree)  # each distinct kind once
    stored = [p for p in range(len(tree)) if WHERE not in detail_numbers(data, p)]
    assert sorted(tree.span_at(p).span_id for p in stored) == ["p", "x"]
    assert "parent <code>missing</code>" in page_detail(data, tree.positions["x"])


def test_a_trace_keeps_the_spans_given_in_another_order_and_reads_them_right() -> None:
    """`Trace.of` puts the spans in start order; a `Trace` made directly keeps the order given,
    and its tree, tables and categories still line up with its spans."""
    ordered = small_trace()
    given = wb.Trace(trace_id=ordered.trace_id, spans=tuple(reversed(ordered.spans)))
    assert given.spans[0].span_id == "t2" and given.tree.spans is given.spans
    assert [s.span_id for s in given.tree.in_order()] == ["a", "s1", "c1", "t1", "s2", "c2", "t2"]
    frame = given.spans_df().set_index("span_id").sort_index()
    assert frame.equals(ordered.spans_df().set_index("span_id").sort_index())
    assert frame.loc["t2", "category"] == "tool" and frame.loc["c1", "category"] == "model"


def test_folding_hides_a_subtree_and_opening_brings_it_back() -> None:
    view = ExplorerView(small_trace())
    view.toggle("s1")
    assert names(view) == ["a", "s1", "s2", "c2", "t2"]
    row = next(r for r in view.rows(0, 10) if r["id"] == "s1")
    assert row["folded"] and row["children"] == 2
    view.toggle("s1")
    assert len(view.visible) == 7
    view.toggle("no such span")  # ignored
    assert len(view.visible) == 7


def test_search_matches_attribute_values_and_keeps_ancestors() -> None:
    view = ExplorerView(small_trace())
    view.set_filter(SpanFilter(query="NEEDLE"))
    assert names(view) == ["a", "s1", "t1"]
    assert [r["match"] for r in view.rows(0, 10)] == [False, False, True]


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        (SpanFilter(status="error"), ["a", "s2", "t2"]),
        (SpanFilter(errors_only=True), ["a", "s2", "t2"]),
        (SpanFilter(slowest=2), ["a", "s2"]),
        (SpanFilter(query="chat", slowest=1), ["a", "s1", "c1"]),
        (SpanFilter(query="nothing like this"), []),
    ],
)
def test_filters_by_status_errors_and_slowest(spec: SpanFilter, shown: list[str]) -> None:
    view = ExplorerView(small_trace())
    view.set_filter(spec)
    assert names(view) == shown
    view.set_filter(SpanFilter())
    assert len(view.visible) == 7 and view.matches is None


def test_a_fold_inside_a_filter_still_folds() -> None:
    tree = small_trace().tree
    matches = {tree.positions["t2"], tree.positions["c2"]}
    shown = visible_positions(tree, {"s2"}, matches)
    assert [tree.span_at(p).span_id for p in shown] == ["a", "s2"]


def test_rows_are_a_window_with_times_from_the_trace_start() -> None:
    view = ExplorerView(small_trace())
    rows = view.rows(2, 3)
    assert [r["id"] for r in rows] == ["c1", "t1", "s2"]
    assert rows[0]["start"] == 1.0 and rows[0]["duration"] == 29.0
    assert rows[0]["category"] == "model" and rows[1]["category"] == "tool"
    assert view.rows(7, 10) == []


def test_detail_has_every_attribute_event_link_status_and_resource() -> None:
    view = ExplorerView(small_trace())
    html = view.detail("t2")
    for text in ("execute_tool delete", "error.type", "tool_error", "exception", "disk full",
                 "x0", "resume", "boom", "service.name", "someone-else", "61.000 ms"):  # fmt: skip
        assert text in html, text
    assert view.detail("unknown") == ""


def test_message_content_is_whole_rendered_as_messages_and_escaped() -> None:
    long_text = "word " * 5_000 + "<script>alert(1)</script> \x1b[31mred"
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": long_text}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1}}],
            "finish_reason": "tool_call",
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3"}]},
    ]
    chat = span("c", None, "chat m", 0, 1, {"gen_ai.input.messages": json.dumps(messages)})
    html = view_of(chat).detail("c")
    assert html.count("word ") == 5_000  # never cut
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert "\x1b" not in html
    assert 'class="wb-msg wb-role-user"' in html and "wb-role-assistant" in html
    assert "<b>add</b>" in html and "&quot;a&quot;: 1" in html  # arguments as indented JSON
    result = html[html.index('<div class="wb-tool-result">') :]
    assert result.index("<b>add</b>") < result.index("c1")  # the result names its call's tool
    assert "\\u" not in html and '\\"' not in html  # never an escaped JSON string
    assert "shown as content above" in html


def test_genai_messages_html_reads_system_instructions_and_bad_json() -> None:
    system = genai_messages_html('[{"type": "text", "content": "Be brief."}]')
    assert "wb-role-system" in system and "Be brief." in system
    assert "not json {" in genai_messages_html("not json {")
    assert "42" in genai_messages_html("42")


def test_live_run_spans_come_from_the_telemetry_with_content_from_the_records() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    agent = demo_agent(telemetry=telemetry, store=False)
    result = agent.run_sync(DEMO_PROMPT)
    other = demo_agent(telemetry=telemetry, store=False).run_sync(DEMO_PROMPT)  # not ours
    assert other.run_id != result.run_id
    explorer = TraceExplorer(result, telemetry=telemetry)
    tree = explorer.view.tree
    assert {s.attributes["workbench.run.id"] for s in tree.spans} == {result.run_id}
    assert tree.span_at(0).name.startswith("invoke_agent")
    tool = next(s for s in tree.spans if s.name == "execute_tool add" and s.is_error)
    explorer.select(tool.span_id)
    assert explorer.selected == tool.span_id
    assert "wb-outcomes" in explorer.detail and "twenty-five" in explorer.detail
    chat = next(s for s in tree.spans if s.name.startswith("chat"))
    explorer.select(chat.span_id)
    assert "Sent to the model" in explorer.detail and "wb-retry" in explorer.detail  # as such


def test_a_run_without_telemetry_and_a_telemetry_open_too() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    result = demo_agent(telemetry=telemetry, store=False).run_sync(DEMO_PROMPT)
    rebuilt = TraceExplorer(result)
    assert rebuilt.span_count > len(result.steps)
    step = next(r for r in rebuilt.rows if r["name"].startswith("workbench.step"))
    rebuilt.selected = step["id"]
    assert "wb-step" in rebuilt.detail  # the step record drawn whole
    whole = TraceExplorer(telemetry)
    assert whole.span_count == len(telemetry.spans)
    assert any(r["status"] == "error" for r in whole.view.rows(0, 100))
    spans = TraceExplorer(telemetry.spans)  # the SDK's spans as they are
    assert spans.span_count == len(telemetry.spans)


def test_the_explorer_says_first_what_went_wrong_as_every_view_does() -> None:
    from tests._failing_team import team

    result = team().run_sync("What does the hat cost?")
    explorer = TraceExplorer(result)
    assert explorer.summary == wb.trace_of(result).summary() == result.summary
    assert explorer.summary.startswith("completed, 1 tool error") and explorer.failed
    calm = TraceExplorer(wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("hi"))
    assert (calm.summary, calm.failed) == ("completed", False)


def test_unknown_sources_are_refused_with_what_is_read() -> None:
    with pytest.raises(TypeError, match="trace_of reads a run"):
        wb.trace_of(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="OpenTelemetry SDK spans; the sequence holds a object"):
        wb.trace_of([object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"got bytes \(a trace's JSON goes as text: decode it\)"):
        wb.trace_of(b'{"resourceSpans": []}')  # type: ignore[arg-type]


def test_widget_select_filters_keys_and_folds() -> None:
    explorer = TraceExplorer(small_trace(), page_size=3)
    assert explorer.total == 7 and len(explorer.rows) == 3
    explorer.select("t2")  # outside the first window: the window moves to it
    assert "t2" in [r["id"] for r in explorer.rows] and explorer.scroll_to == 6
    assert "disk full" in explorer.detail
    explorer._on_message(explorer, {"type": "move", "by": -1}, None)
    assert explorer.selected == "c2"
    explorer._on_message(explorer, {"type": "toggle", "id": "s2"}, None)
    assert explorer.total == 5
    explorer.select("t2")  # opens what hides it
    assert explorer.total == 7
    explorer.query = "needle"
    assert explorer.total == 3 and explorer.matched == 1 and explorer.offset == 0
    explorer.select("t2")  # filtered out: the filter goes, and the search box says so
    assert explorer.query == "" and explorer.total == 7
    explorer.status = "nonsense"  # a value the page cannot send is no filter
    assert explorer.total == 7
    explorer._on_message(explorer, {"type": "fold"}, None)
    explorer._on_message(explorer, {"type": "toggle"}, None)  # no id: ignored
    assert explorer.selected == "t2" and explorer.total == 7  # a leaf does not fold
    with pytest.raises(KeyError, match="no span"):
        explorer.select("missing")


def test_ten_thousand_spans_open_with_one_window_sent() -> None:
    ms = 1_000_000
    spans = [span("root", None, "invoke_agent big", 0, 10_000 * ms)]
    spans += [
        span(f"s{i}", "root", f"workbench.step {i}", i * ms, (i + 1) * ms, {"i": i})
        for i in range(10_000)
    ]
    explorer = TraceExplorer(wb.Trace.of(spans))
    state = json.dumps(explorer.get_state(), default=str)
    assert explorer.span_count == 10_001 and len(explorer.rows) == 40
    assert len(state) < 50_000
    explorer.offset = 9_990
    assert explorer.rows[0]["id"] == "s9989"


def test_the_page_fragment_inlines_data_that_cannot_close_its_script() -> None:
    html = explorer_page_html(view_of(span("r", None, "</script><script>alert(1)</script>", 0, 5)))
    assert html.count("</script>") == 2  # the data's and the module's own closing tags
    assert "\\u003c/script>\\u003cscript>alert(1)" in html
    assert "function staticModel" in html and "export default" not in html


def lead_with_researcher(telemetry: wb.Telemetry, tasks: list[str]) -> wb.Agent:
    """A lead agent that gives the researcher sub-agent each of ``tasks``, then answers "ok"."""
    researcher = wb.Agent(
        model=wb.ScriptedModel([f"found {task}" for task in tasks]),
        name="researcher",
        telemetry=telemetry,
        store=False,
    )
    calls = [wb.ModelResponse.tool_call("research", {"task": task}) for task in tasks]
    return wb.Agent(
        model=wb.ScriptedModel([*calls, "ok"]),
        name="lead",
        tools=[researcher.as_tool("research")],
        telemetry=telemetry,
        store=False,
    )


def test_a_sub_run_is_nested_under_the_tool_call_that_ran_it() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    result = lead_with_researcher(telemetry, ["look"]).run_sync("go")
    view = TraceExplorer(result, telemetry=telemetry).view
    rows = view.rows(0, 100)
    call = next(r for r in rows if r["name"] == "execute_tool research")
    sub = next(r for r in rows if r["name"] == "invoke_agent researcher")
    assert sub["depth"] == call["depth"] + 1
    assert rows.index(sub) == rows.index(call) + 1
    assert call["children"] == 5  # the sub-run: agent, step, prepare, chat, continuation
    chat = next(s for s in view.tree.spans if s.attributes.get("workbench.parent_run.id"))
    assert chat.attributes["workbench.run.id"] != result.run_id


def test_a_sub_run_recorded_as_a_trace_of_its_own_is_nested_under_its_call() -> None:
    """Older telemetry wrote each sub-run as a trace of its own, its root span naming its
    parent run: `Trace.of` puts it under the parent's tool call whose time holds its start."""
    lead = {"workbench.run.id": "r1"}
    spans = [
        span("run", None, "invoke_agent lead", 0, 100, lead),
        span("early", "run", "execute_tool ask", 10, 20, lead),
        span("call", "run", "execute_tool ask", 30, 90, lead),
        span("sub", None, "invoke_agent helper", 40, 80,
             {"workbench.run.id": "r2", "workbench.parent_run.id": "r1"}),
        span("subchat", "sub", "chat m", 45, 60, {"workbench.run.id": "r2"}),
    ]  # fmt: skip
    trace = wb.Trace.of(reversed(spans))
    tree = trace.tree
    assert [s.span_id for s in tree.in_order()] == ["run", "early", "call", "sub", "subchat"]
    assert tree.parent_of(tree.positions["sub"]) == tree.positions["call"]
    assert [s.span_id for s in trace.spans] == ["run", "early", "call", "sub", "subchat"]


def test_an_empty_trace_opens_empty() -> None:
    explorer = TraceExplorer(wb.Trace.of([]))
    assert (explorer.span_count, explorer.total, explorer.rows, explorer.axis_ms) == (0, 0, [], 0.0)
    explorer._on_message(explorer, {"type": "move", "by": 1}, None)
    explorer.query = "x"
    assert explorer.selected == "" and explorer.total == 0 and explorer.matched == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_building_a_view_leaves_the_collector_as_it_was(enabled: bool) -> None:
    import gc

    from workbench._record import collector_paused

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError("a bad source")
        assert gc.isenabled() is enabled
        wb.trace_of(lead_with_researcher(wb.Telemetry(), ["x"]).run_sync("go"))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_lone_surrogate_in_a_loaded_traces_messages_shows_as_a_replacement_character() -> None:
    """A tracer that cut a string inside a UTF-16 pair: the detail must still be UTF-8."""
    messages = '[{"role":"user","parts":[{"type":"text","content":"cut \\ud83d here"}]}]'
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "00000000000000c1",
        "name": "chat m",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": messages}},
        ],
    }
    trace = wb.load_trace(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    explorer = TraceExplorer(trace)
    explorer.select("00000000000000c1")
    assert "cut \N{REPLACEMENT CHARACTER} here" in explorer.detail.encode("utf-8").decode()


def test_the_page_details_joined_from_their_shared_parts_are_the_views_details() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    result = lead_with_researcher(telemetry, ["look", "look again"]).run_sync("go <b>")
    runs = TraceExplorer(result, telemetry=telemetry).view
    foreign = ExplorerView(wb.load_trace(json.dumps(foreign_trace(["Hello", "<b>x</b>", "bye"]))))
    for view in (runs, foreign):
        data = page_data(explorer_page_html(view))
        ids = [view.tree.span_at(p).span_id for p in range(len(view.tree))]
        assert data["spans"]["id"] == ids and len(data["details"]) == len(ids)
        for position, span_id in enumerate(ids):
            assert page_detail(data, position) == view.detail(span_id)
            assert WHERE in detail_numbers(data, position)  # its times and ids: from its row
        pieces = [page_piece(data, i) for i in range(len(data["shared"]))]
        assert len(pieces) == len(set(pieces))  # each piece once
        if view is runs:  # a run's spans of a kind (its phases, tool calls) share a template
            assert len(data["templates"]) < len(ids) / 2
            # a call's id, in its boxes, attribute rows and diff lines, is one run of its own
            calls = [o.call_id for step in result.steps for o in step.tool_outcomes]
            assert len(calls) == 2 and all(len(c) >= 16 for c in calls)
            for call in calls:
                assert [run for run in data["runs"] if call in run] == [call]
                assert sum(call in page_detail(data, p) for p in range(len(ids))) >= 3
        assert len(data["runs"]) == len(set(data["runs"]))  # each run of markup or text once
    boxes = [part for part in pieces if part.startswith('<div class="wb-msg wb-role-')]
    # sent: system, "Hi", "Hello", "More?", "<b>x</b>", and the last answer "bye": each box once
    # (an answer's box is the one the next call is sent)
    assert len(boxes) == 6
    numbered = {n for n, part in enumerate(pieces) if part.startswith('<div class="wb-msg')}
    first, third = detail_numbers(data, 0), detail_numbers(data, 2)  # model calls
    assert len(numbered & set(first) & set(third)) == 3  # sent to both: the same boxes, by number


_TAGS = st.sampled_from(["<b>", "</b>", "<div class='wb-msg'>", "</div>", "<code>", "<br>"])
_CHARS = st.one_of(st.sampled_from(" &<>\"'#:\n"), st.characters(exclude_categories=()))
_TEXT = st.text(_CHARS, max_size=40).map(safe_text)  # any text, as the views escape it
_WORDS = st.text("abcXYZ019_-é中", min_size=12, max_size=20)  # ids, and words nearly as long
_FEW = st.sampled_from([" ", "a", "&amp;", "call_" + "0" * 12, "call_" + "1" * 12])
_WORD = st.one_of(_FEW, _TEXT, _WORDS)
_PIECES = st.one_of(
    st.lists(st.one_of(_TAGS, _WORD), max_size=8).map("".join),
    st.tuples(_WORD, _WORD, _WORD).map("<b>{0[0]}<i>{0[1]}</i>{0[2]}</b>".format),  # templates
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=30))
def test_every_piece_the_page_stores_as_runs_is_joined_back_byte_for_byte(
    pieces: list[str],
) -> None:
    """Escaped text (quotes, ``&amp;``, lone surrogates shown as U+FFFD, non-ASCII), tags and
    ids of 16+ letters, digits, ``_`` and ``-``, cut into runs, templates and holes and
    written as the page's JSON, are the same HTML when the page joins them."""
    page = ExplorerPage(ExplorerView(wb.Trace.of([])))
    page.pieces(pieces)
    data = page_data(page.html())
    joined = [page_piece(data, n) for n in range(len(data["shared"]))]
    assert joined == list(dict.fromkeys(pieces))


def test_a_long_runs_report_grows_with_its_steps_not_their_square() -> None:
    from workbench.report import report_html

    @wb.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async def respond(messages: list[wb.Message], request: Any) -> wb.ModelResponse:
        done = sum(1 for m in messages if m.role == "tool")
        if done < 200:
            return wb.ModelResponse.tool_call("add", {"a": done, "b": 1})
        return wb.ModelResponse.text("done")

    agent = wb.Agent(
        model=wb.FunctionModel(respond), tools=[add], stop=wb.MaxSteps(300), store=False
    )
    result = agent.run_sync("go")
    assert len(result.steps) == 201
    assert len(report_html(result)) < 10_000_000


def test_the_reports_step_sections_are_the_boxes_the_details_hold() -> None:
    from workbench.report import report_html

    telemetry = wb.Telemetry(capture_content=True)
    run = lead_with_researcher(telemetry, ["look", "look again"]).run_sync("go <b>")
    foreign = wb.load_trace(json.dumps(foreign_trace(["Hello", "<b>x</b>", "bye"])))
    for source in (run, foreign):  # drawn from step records, and from captured content
        html = report_html(source, telemetry=telemetry if source is run else None)
        data = page_data(html)
        held = {n for p in range(len(data["details"])) for n in detail_numbers(data, p)}
        sections = [numbers(json.loads(s)) for s in re.findall(r'data-pieces="([^"]*)"', html)]
        assert len(sections) == html.count('class="wb-step-section"') >= 2
        for each in sections:
            shown = each if source is run else each[1:]  # after " · chat gpt-4o": the boxes
            assert shown and set(shown) <= held  # stored once, for the explorer's details
    page = drawn(html)  # as the browser fills it: what each call added, escaped
    second = page.split("<b>step 2</b>")[1].split("</section>")[0]
    assert second.startswith(" · chat gpt-4o") and "More?" in second and "Hello" not in second
    assert "&lt;b&gt;x&lt;/b&gt;" in second and "<b>x</b>" not in page


def test_a_steps_diff_is_against_its_own_runs_previous_step() -> None:
    from workbench.notebook.html import step_html

    telemetry = wb.Telemetry(capture_content=True)
    result = lead_with_researcher(telemetry, ["look", "look again"]).run_sync("go")
    steps = wb.trace_of(result).steps  # the run tree's: the researcher's between the lead's
    assert len({s.run_id for s in steps}) == 3
    records = StepRecords(steps)  # what a page of every step finds in one pass
    for step in steps:
        own = [s for s in steps if s.run_id == step.run_id]
        assert step_html(step, steps) == step_html(step, own) == "".join(records.pieces(step))
