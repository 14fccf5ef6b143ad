"""What a notebook shows of errors: the summary first, each error with its traceback, escaped.

A traceback holds untrusted text (an exception's message is whatever a tool put there): it is
text in every builder, and a secret in it never reaches the HTML.
"""

from __future__ import annotations

import json

import pytest

import workbench as wb
import workbench.notebook
from tests._failing_team import team
from workbench.notebook.html import (
    FAILED_COLOUR,
    errors_html,
    step_html,
    traceback_html,
)
from workbench.notebook.status_line import status_html

R = wb.ModelResponse
MARKUP = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


def _hostile_run() -> wb.RunResult:
    @wb.tool
    def render() -> str:
        """Fail quoting markup and a key."""
        raise ValueError(f"{MARKUP} key sk-abcdefghijklmnopqrstuvwx")

    agent = wb.Agent(model=wb.ScriptedModel([R.tool_call("render", {}), "ok"]), tools=[render])
    return agent.run_sync("x")


def test_a_result_shows_what_went_wrong_first_with_the_traceback_open() -> None:
    html = team().run_sync("price the hat")._repr_html_()
    assert html is not None
    summary = "completed, 1 tool error: step 3, apply_discount in digger"
    assert html.index(summary) < html.index("wb-errors") < html.index("stop reason")
    assert f"color:{FAILED_COLOUR}" in html.split(summary)[0]  # the line is red
    assert '<details class="wb-traceback" open>' in html
    assert "in apply_discount</b>" in html  # the user's frame, in bold


def test_a_result_without_errors_says_its_status_and_lists_nothing() -> None:
    html = wb.Agent(model=wb.ScriptedModel(["hi"])).run_sync("x")._repr_html_()
    assert html is not None and ">completed</div>" in html and "wb-errors" not in html


def test_a_traceback_is_text_in_every_builder_and_holds_no_secret() -> None:
    result = _hostile_run()
    (error,) = result.errors
    assert error.traceback is not None and MARKUP in error.traceback  # kept as it was raised
    shown = [
        result._repr_html_() or "",
        errors_html(result.errors),
        step_html(result.steps[0], result.steps),
        traceback_html(error.traceback),
    ]
    for html in shown:
        assert "<script>" not in html and "<img" not in html
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
        assert "sk-abcdefghijklmnopqrstuvwx" not in html


def test_many_errors_show_the_first_ten_and_a_count() -> None:
    @wb.tool
    def crash() -> str:
        """Crash."""
        raise OSError("disk")

    script: list[R | str] = [R.tool_call("crash", {}) for _ in range(12)] + ["done"]
    result = wb.Agent(model=wb.ScriptedModel(script), tools=[crash]).run_sync("x")
    html = errors_html(result.errors)
    assert html.count('class="wb-error-item"') == 10 and "and 2 more" in html
    assert html.count('<details class="wb-traceback" open>') == 1


def test_the_step_view_shows_what_a_hook_and_a_breakpoint_predicate_raised() -> None:
    def audit(data: wb.HookInput) -> None:
        raise ValueError("audit log is full")

    def when(view: wb.RunView) -> bool:
        return view.state.metadata["missing"] == 1  # type: ignore[no-any-return]

    agent = wb.Agent(model=wb.ScriptedModel(["hi"]), hooks=[wb.Hook("Stop", audit)], store=False)
    run = agent.start("x", breakpoints=[wb.Break.when(when)])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint is not None
    status = status_html(run.state, run.next_phase_name, None, traceback=event.breakpoint.traceback)
    assert "in when</b>" in status and '<details class="wb-traceback" open>' in status
    result = run.run_to_end()
    html = step_html(result.steps[0], result.steps)
    assert "breakpoint error" in html and "the predicate raised KeyError" in html
    assert "in when</b>" in html and "in audit</b>" in html  # both tracebacks, folded


def test_the_report_starts_with_what_went_wrong() -> None:
    from workbench.report import report_html

    html = report_html(team().run_sync("price the hat"))
    summary = "completed, 1 tool error: step 3, apply_discount in digger"
    assert html.index(summary) < html.index("wb-errors") < html.index('id="explorer"')
    top = html[: html.index('id="explorer"')]
    assert '<details class="wb-traceback" open>' in top and "in apply_discount</b>" in top


def test_trace_view_starts_with_what_went_wrong_and_draws_the_failure_red() -> None:
    from workbench.notebook import TraceView
    from workbench.notebook.trace_view import trace_top_html

    result = team().run_sync("price the hat")
    top = trace_top_html(wb.trace_of(result))
    assert top.startswith('<div class="wb-summary-line"')
    assert "completed, 1 tool error: step 3, apply_discount in digger" in top
    view = TraceView(result)
    failed = next(t for t in view.figures["waterfall"].data if t.name == "failed")
    assert failed.marker.color == FAILED_COLOUR
    assert "execute_tool apply_discount" in failed.hovertext[0]


def test_tables_a_person_sees_say_their_columns_as_a_person_would() -> None:
    from workbench.notebook.tables import for_people

    trace = wb.trace_of(team().run_sync("price the hat"))
    steps = for_people(trace.steps_df())
    columns = list(steps.columns)
    assert columns[:4] == ["step", "agent", "failed spans", "run after it"]
    assert not [c for c in columns if c.endswith("_ms") or c.endswith("_id") or "_" in c]
    failing = steps[steps["tool calls"] == "apply_discount (error)"].iloc[0]
    assert (failing["step"], failing["agent"], failing["failed spans"]) == ("3", "digger", 1)
    assert "tokens in" in list(for_people(trace.agents()).columns)


def test_the_explorer_names_each_agents_model_calls_and_says_what_failed_first() -> None:
    from workbench.notebook.explorer_view import ExplorerView

    view = ExplorerView(wb.trace_of(team().run_sync("price the hat")))
    names = [row["name"] for row in view.rows(0, 100)]
    assert "chat lead-model · lead" in names and "chat digger-model · digger" in names
    assert "execute_tool apply_discount" in names  # only model calls get the agent
    (failed,) = [r for r in view.rows(0, 100) if r["status"] == "error"]
    detail = view.detail(failed["id"])
    head, rest = detail.split("What went wrong", 1)
    assert ">failed</span>" in head and "unset" not in head
    assert rest.index("TypeError: unsupported operand") < rest.index("Tool call")
    assert rest.count('class="wb-traceback"') == 1  # open at the top, not again in the table
    ok = next(r for r in view.rows(0, 100) if r["name"].startswith("workbench.prepare"))
    assert ">unset<" not in view.detail(ok["id"])


def test_the_waterfall_names_each_agents_model_calls_as_the_explorer_does() -> None:
    """TraceView's waterfall and the Stepper's timeline: ``chat M`` alone reads the same for all."""
    from workbench.notebook.spans import waterfall_figure

    labels = list(
        waterfall_figure(wb.trace_of(team().run_sync("price the hat"))).layout.yaxis.ticktext
    )
    assert "·· chat lead-model · lead" in labels
    assert "········ chat digger-model · digger" in labels
    assert "········ execute_tool apply_discount" in labels  # only model calls get the agent
    alone = wb.Agent(model=wb.ScriptedModel(["hi"], name="m"), name="solo", store=False)
    labels = list(waterfall_figure(wb.trace_of(alone.run_sync("hi"))).layout.yaxis.ticktext)
    assert "·· chat m" in labels  # one agent: nothing to tell apart


@pytest.mark.parametrize("secret", ["sk-abcdefghijklmnopqrstuvwx", "acct-99887766"])
def test_a_secret_in_an_exception_reaches_no_view(secret: str) -> None:
    """Not the report, a result's HTML, TraceView's top, or the explorer widget's synced state."""
    from workbench.notebook import TraceExplorer
    from workbench.notebook.trace_view import trace_top_html
    from workbench.report import report_html

    @wb.tool
    def charge() -> str:
        """Fail quoting a key."""
        key = secret
        raise PermissionError(f"rejected key {key}")

    telemetry = wb.Telemetry(capture_content=True, redact=[r"acct-\d+"])
    model = wb.ScriptedModel([R.tool_call("charge", {}), "ok"])
    result = wb.Agent(model=model, tools=[charge], telemetry=telemetry).run_sync("x")
    (error,) = result.errors
    assert error.traceback is not None and "rejected key [REDACTED]" in error.traceback
    explorer = TraceExplorer(result, telemetry=telemetry)
    (failed,) = [s for s in explorer.trace.spans if s.name == "execute_tool charge"]
    explorer.select(failed.span_id)
    assert "rejected key [REDACTED]" in explorer.detail
    shown = {
        "report": report_html(result, telemetry=telemetry),
        "result's HTML": result._repr_html_() or "",
        "TraceView": trace_top_html(wb.trace_of(result, telemetry=telemetry)),
        "explorer state": json.dumps(explorer.get_state(), default=str),
    }
    assert [where for where, text in shown.items() if secret in text] == []


@pytest.mark.parametrize("tokens", [2**70, 1e300, "1e300"])
def test_a_count_no_whole_number_can_hold_is_shown_as_it_is(tokens: object) -> None:
    """A trace from elsewhere saying 2**70 tokens: the step table made its counts whole numbers
    and the cast raised TypeError, from TraceView and the report alike."""
    from workbench.notebook import TraceView
    from workbench.notebook.tables import for_people
    from workbench.report import report_html

    run = wb.SpanData(
        trace_id="a" * 32,
        span_id=f"{1:016x}",
        name="invoke_agent a",
        start_ns=0,
        end_ns=9,
        attributes={"gen_ai.operation.name": "invoke_agent"},
    )
    chat = run.model_copy(
        update={
            "span_id": f"{2:016x}",
            "parent_id": run.span_id,
            "name": "chat",
            "attributes": {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": tokens,
                "gen_ai.usage.output_tokens": 3,
            },
        }
    )
    trace = wb.Trace.of([run, chat])
    shown = for_people(trace.steps_df())
    assert shown["tokens in"].tolist() == [float(tokens)]  # type: ignore[arg-type]
    assert shown["tokens out"].tolist() == [3]
    (table,) = TraceView(trace).outputs["table"].outputs
    assert "wb-table" in table["data"]["text/html"]
    assert "chat" in report_html(trace)
