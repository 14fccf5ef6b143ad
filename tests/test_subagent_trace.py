"""A run tree is one trace: a sub-run's invoke_agent span is a child of the calling execute_tool."""

from __future__ import annotations

import asyncio
from typing import Any

import workbench as wb
from workbench.telemetry.rebuild import spans_from_run

R = wb.ModelResponse


def _tree() -> tuple[wb.Agent, wb.Telemetry, wb.RunStore]:
    async def research(messages: list[wb.Message], info: object) -> str:
        await asyncio.sleep(0.05)  # long enough for the two calls to overlap
        return f"found {messages[-1].text}"

    store = wb.RunStore(":memory:")
    researcher = wb.Agent(model=wb.FunctionModel(research), name="researcher", store=store)
    telemetry = wb.Telemetry()
    lead = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_calls(
                    [("research", {"task": "tides"}), ("research", {"task": "wind"})],
                    call_ids=["r1", "r2"],
                ),
                "go swimming",
            ]
        ),
        name="lead",
        tools=[researcher.as_tool("research")],
        telemetry=telemetry,
        store=store,
    )
    return lead, telemetry, store


def _fold(spans: Any) -> list[Any]:
    """The span tree as nested {name: [children]} (parallel sub-runs in call order)."""
    children: dict[int | None, list[Any]] = {}
    for span in sorted(spans, key=lambda s: (s.start_time, s.name)):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def node(span: Any) -> Any:
        below = children.get(span.context.span_id, [])
        return {span.name: [node(c) for c in below]} if below else span.name

    return [node(s) for s in children.get(None, [])]


GOLDEN = [
    {
        "invoke_agent lead": [
            {
                "workbench.step 1": [
                    "workbench.prepare",
                    "chat scripted",
                    {
                        "execute_tool research": [
                            {
                                "invoke_agent researcher": [
                                    {
                                        "workbench.step 1": [
                                            "workbench.prepare",
                                            "chat function",
                                            "workbench.continuation",
                                        ]
                                    }
                                ]
                            }
                        ]
                    },
                    {
                        "execute_tool research": [
                            {
                                "invoke_agent researcher": [
                                    {
                                        "workbench.step 1": [
                                            "workbench.prepare",
                                            "chat function",
                                            "workbench.continuation",
                                        ]
                                    }
                                ]
                            }
                        ]
                    },
                    "workbench.continuation",
                ]
            },
            {
                "workbench.step 2": [
                    "workbench.prepare",
                    "chat scripted",
                    "workbench.continuation",
                ]
            },
        ]
    }
]


def test_a_two_level_run_with_parallel_sub_agents_is_one_trace() -> None:
    lead, telemetry, _ = _tree()
    result = lead.run_sync("plan")
    spans = telemetry.spans
    assert {format(s.context.trace_id, "032x") for s in spans} == {result.trace_id}
    assert all(c.trace_id == result.trace_id for c in result.children)
    assert _fold(spans) == GOLDEN
    subruns = [s for s in spans if s.name == "invoke_agent researcher"]
    first, second = sorted(subruns, key=lambda s: s.start_time)
    assert second.start_time < first.end_time  # the two calls ran in parallel


def test_the_stored_tree_exported_is_the_live_trace() -> None:
    lead, telemetry, store = _tree()
    result = lead.run_sync("plan")
    rebuilt = spans_from_run(store.load(result.run_id))
    assert _fold(rebuilt) == GOLDEN
    assert {format(s.context.trace_id, "032x") for s in rebuilt} == {result.trace_id}

    def ids(spans: Any) -> set[tuple[str, int, int | None]]:
        """The ids that tie the tree together: run spans with their parents, tool spans."""
        return {
            (s.name, s.context.span_id, s.parent.span_id if s.parent else None)
            if s.name.startswith("invoke_agent")
            else (s.name, s.context.span_id, None)
            for s in spans
            if s.name.startswith(("invoke_agent", "execute_tool"))
        }

    assert ids(rebuilt) == ids(telemetry.spans)  # a pushed tree keeps the live ids and parents


def _paused_tree(
    telemetry: wb.Telemetry, store: wb.RunStore | None = None
) -> tuple[wb.Agent, wb.RunResult]:
    """lead -> clean (cleaner) -> wipe, run until wipe waits for approval (w1, via c1)."""

    @wb.tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Wipe."""
        return "wiped"

    keep: wb.RunStore | bool = store if store is not None else False
    cleaner = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/"}, call_id="w1"), "clean"]),
        name="cleaner",
        tools=[wipe],
        store=keep,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("clean", {"task": "x"}, call_id="c1"), "ok"]),
        name="lead",
        tools=[cleaner.as_tool("clean")],
        telemetry=telemetry,
        store=keep,
    )
    return lead, lead.run_sync("go")


def test_a_sub_run_resumed_with_its_parent_stays_in_the_parents_trace() -> None:
    telemetry = wb.Telemetry()
    lead, paused = _paused_tree(telemetry)
    done = lead.resume_sync(paused.state, approvals={"w1": True})
    resumed_trace = done.trace_id
    assert resumed_trace is not None and resumed_trace != paused.trace_id
    cleaner_runs = [s for s in telemetry.spans if s.name == "invoke_agent cleaner"]
    assert [format(s.context.trace_id, "032x") for s in cleaner_runs] == [
        paused.trace_id,
        resumed_trace,
    ]  # each execution of the sub-run sits in the trace of the parent's execution that ran it


def test_a_stored_sub_run_paused_and_resumed_exports_as_the_live_traces() -> None:
    store, telemetry = wb.RunStore(":memory:"), wb.Telemetry()
    lead, paused = _paused_tree(telemetry, store)
    done = lead.resume_sync(paused.state, approvals={"w1": True})
    rebuilt = spans_from_run(store.load(done.run_id))

    def tree(spans: Any) -> set[tuple[str, str, str | None]]:
        """Run and tool spans with their trace and the name of their parent span."""
        names = {s.context.span_id: s.name for s in spans}
        return {
            (
                s.name,
                format(s.context.trace_id, "032x"),
                names.get(s.parent.span_id) if s.parent else None,
            )
            for s in spans
            if s.name.startswith(("invoke_agent", "execute_tool"))
        }

    expected = {
        ("invoke_agent lead", paused.trace_id, None),
        ("execute_tool clean", paused.trace_id, "workbench.step 1"),
        ("invoke_agent cleaner", paused.trace_id, "execute_tool clean"),  # the first execution
        ("execute_tool wipe", paused.trace_id, "workbench.step 1"),
        ("invoke_agent lead", done.trace_id, None),
        ("execute_tool clean", done.trace_id, "workbench.step 1"),
        ("invoke_agent cleaner", done.trace_id, "execute_tool clean"),  # the resumed one
        ("execute_tool wipe", done.trace_id, "workbench.step 1"),
    }
    assert tree(telemetry.spans) == expected
    assert tree(rebuilt) == expected
