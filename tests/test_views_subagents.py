"""The views of a run tree: TraceView, the trace explorer and the report show the sub-runs.

Live or stored, with telemetry or without, a sub-run's spans sit under the ``execute_tool`` span
of the call that started it, and a sub-run's step and model spans show its messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pytest

import workbench as wb
from tests._report_page import page_table
from workbench.notebook import TraceExplorer, TraceView
from workbench.report import report_html

R = wb.ModelResponse


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found: {query} is at noon"


@wb.tool
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


def _team(
    store: wb.RunStore, telemetry: wb.Telemetry | None = None, answer: str = "The tables say noon."
) -> wb.Agent:
    """lead → research (researcher → dig (digger → search)) and clean (cleaner → wipe), parallel."""
    digger = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "tides"}, call_id="s1"), answer]),
        name="digger",
        tools=[search],
        telemetry=telemetry,
        store=store,
    )
    researcher = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_call("dig", {"task": "Read the tide tables."}, call_id="d1"), "Noon."]
        ),
        name="researcher",
        tools=[digger.as_tool("dig", "Dig through records.")],
        telemetry=telemetry,
        store=store,
    )
    cleaner = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_call("wipe", {"path": "/tmp/beach"}, call_id="w1"), "Wiped."]
        ),
        name="cleaner",
        tools=[wipe],
        telemetry=telemetry,
        store=store,
    )
    return wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_calls(
                    [("research", {"task": "When is high tide?"}), ("clean", {"task": "Clear."})],
                    call_ids=["r1", "c1"],
                ),
                "Swim at noon.",
            ]
        ),
        name="lead",
        tools=[researcher.as_tool("research"), cleaner.as_tool("clean")],
        telemetry=telemetry,
        store=store,
    )


def _fold(rows: Iterable[tuple[str, str | None, str]]) -> list[Any]:
    """(span id, parent id, name) in start order as nested {name: [children]}."""
    items = list(rows)
    known = {span_id for span_id, _, _ in items}
    children: dict[str | None, list[tuple[str, str | None, str]]] = {}
    for item in items:
        children.setdefault(item[1] if item[1] in known else None, []).append(item)

    def node(item: tuple[str, str | None, str]) -> Any:
        below = children.get(item[0], [])
        return {item[2]: [node(c) for c in below]} if below else item[2]

    return [node(item) for item in children.get(None, [])]


def _fold_trace(trace: wb.Trace) -> list[Any]:
    return _fold((s.span_id, s.parent_id, s.name) for s in trace.tree.in_order())


def _fold_explorer(explorer: TraceExplorer) -> list[Any]:
    return _fold_trace(explorer.trace)


def _run(name: str, *steps: Any) -> dict[str, Any]:
    return {f"invoke_agent {name}": list(steps)}


def _step(n: int, *calls: Any) -> dict[str, Any]:
    return {
        f"workbench.step {n}": [
            "workbench.prepare",
            "chat scripted",
            *calls,
            "workbench.continuation",
        ]
    }


GOLDEN = [
    _run(
        "lead",
        _step(
            1,
            {
                "execute_tool research": [
                    _run(
                        "researcher",
                        _step(
                            1,
                            {
                                "execute_tool dig": [
                                    _run(
                                        "digger",
                                        _step(1, "execute_tool search"),
                                        _step(2),
                                    )
                                ]
                            },
                        ),
                        _step(2),
                    )
                ]
            },
            {"execute_tool clean": [_run("cleaner", _step(1, "execute_tool wipe"), _step(2))]},
        ),
        _step(2),
    )
]
"""The live telemetry's tree of the team's run: every view shows this one, however it got it."""


@pytest.fixture(scope="module")
def live() -> tuple[wb.RunResult, wb.Telemetry, wb.RunStore]:
    """The team's run with telemetry (not capturing content) and a store."""
    store = wb.RunStore(":memory:")
    telemetry = wb.Telemetry()
    return _team(store, telemetry).run_sync("Plan a swim."), telemetry, store


@pytest.fixture(scope="module")
def plain() -> tuple[wb.RunResult, wb.RunStore]:
    """The team's run without telemetry, and its store."""
    store = wb.RunStore(":memory:")
    return _team(store).run_sync("Plan a swim."), store


def test_the_live_telemetry_tree_is_the_golden_one(
    live: tuple[wb.RunResult, wb.Telemetry, wb.RunStore],
) -> None:
    result, telemetry, _ = live
    assert _fold_explorer(TraceExplorer(result, telemetry=telemetry)) == GOLDEN


def test_views_without_telemetry_nest_each_sub_run_under_its_call(
    plain: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, store = plain
    for run in (result, store.load(result.run_id)):
        assert _fold_trace(TraceView(run).trace) == GOLDEN
        assert _fold_explorer(TraceExplorer(run)) == GOLDEN


def test_a_rebuilt_sub_run_span_says_which_run_and_agent(
    plain: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, _ = plain
    spans = TraceView(result).trace.spans
    digger = next(s for s in spans if s.name == "invoke_agent digger")
    researcher = result.children[0]
    assert digger.attributes["workbench.run.id"] == researcher.children[0].run_id
    assert digger.attributes["workbench.parent_run.id"] == researcher.run_id
    call = next(s for s in spans if s.span_id == digger.parent_id)
    assert call.name == "execute_tool dig"
    assert call.attributes["workbench.run.id"] == researcher.run_id


def test_the_report_of_a_stored_run_shows_the_sub_runs(
    plain: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, store = plain
    html = report_html(store.load(result.run_id))
    for name in ("researcher", "digger", "cleaner"):
        assert f'"invoke_agent {name}"' in html  # among the explorer page's words
    assert "execute_tool search" in html


def test_trace_view_with_telemetry_shows_the_tree_the_explorer_shows(
    live: tuple[wb.RunResult, wb.Telemetry, wb.RunStore],
) -> None:
    result, telemetry, _ = live
    view = TraceView(result, telemetry=telemetry)
    assert _fold_trace(view.trace) == GOLDEN
    labels = list(view.figures["waterfall"].layout.yaxis.ticktext)
    assert "······ invoke_agent digger" in labels


def _detail_text(explorer: TraceExplorer, name: str, run_id: str) -> str:
    tree = explorer.view.tree
    span = next(
        s for s in tree.spans if s.name == name and s.attributes.get("workbench.run.id") == run_id
    )
    return " ".join(re.sub(r"<[^>]+>", " ", explorer.view.detail(span.span_id)).split())


@pytest.mark.parametrize("telemetry", [True, False])
def test_a_sub_runs_spans_show_its_messages_without_captured_content(
    live: tuple[wb.RunResult, wb.Telemetry, wb.RunStore], telemetry: bool
) -> None:
    result, tel, _ = live
    explorer = TraceExplorer(result, telemetry=tel if telemetry else None)
    digger = result.children[0].children[0]
    chat = _detail_text(explorer, "chat scripted", digger.run_id)
    assert "Sent to the model" in chat and "Read the tide tables." in chat
    step = _detail_text(explorer, "workbench.step 2", digger.run_id)
    assert "The tables say noon." in step
    lead_step = _detail_text(explorer, "workbench.step 2", result.run_id)
    assert "Swim at noon." in lead_step and "The tables say noon." not in lead_step


def test_the_report_shows_a_sub_runs_messages_without_captured_content(
    live: tuple[wb.RunResult, wb.Telemetry, wb.RunStore],
) -> None:
    result, telemetry, _ = live
    for html in (report_html(result, telemetry=telemetry), report_html(result)):
        assert "Read the tide tables." in html  # only the researcher's and digger's records say it


def test_trace_view_of_a_run_tree_shows_what_each_agent_took(
    plain: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, store = plain
    for run in (result, store.load(result.run_id), [result]):
        view = TraceView(run)
        assert view.agents is not None
        assert view.agents["agent"].tolist() == ["lead", "researcher", "digger", "cleaner"]
        assert view.agents["steps"].tolist() == [2, 2, 2, 2]
        assert list(view.outputs) == ["table", "agents", "waterfall", "timing", "tokens"]
    single = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("hello")
    assert TraceView(single).agents is None and "agents" not in TraceView(single).outputs


def test_the_report_of_a_run_tree_has_the_per_agent_table_and_escapes_sub_run_text() -> None:
    xss = "<img src=x onerror=alert(1)>"
    result = _team(wb.RunStore(":memory:"), answer=xss).run_sync("Plan a swim.")
    html = report_html(result)
    assert '<h2 id="agents">Per agent</h2>' in html
    agents = page_table(html, "wb-agents")
    assert agents[0][0] == "agent" and [row[0] for row in agents[1:]] == [
        "lead", "researcher", "digger", "cleaner"
    ]  # fmt: skip
    assert xss not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    single = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("hello")
    assert 'id="agents"' not in report_html(single)
