"""Fault table: untrusted text (tool results, model output, names a model made up) in the views.

Plotly renders a few HTML tags in hover labels and axis labels (``<a href>``, ``<b>``, ``<br>``):
a tool result carrying ``<a href="https://...">`` became a live link in the report and the
notebook (issue 15 #11). Every piece of run data in a figure is escaped; the markup plotly is
meant to render is only ours. The messages HTML is escaped already (``tests/test_notebook_
builders.py``); this checks the figures, on their JSON and in a real browser.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.notebook import trace_figures
from workbench.report import write_report

LINK = '<a href="https://evil.example/steal">click me</a>'
NAME = "<b>fake</b><a href='https://evil.example/name'>tool</a>"


@wb.tool
def fetch(url: str) -> str:
    """Fetch a page (here: one that carries a link)."""
    return f"page {url}: {LINK}"


def a_run(telemetry: wb.Telemetry | None = None) -> wb.RunResult:
    script = [
        wb.ModelResponse.tool_call("fetch", {"url": LINK}),
        wb.ModelResponse.tool_call(NAME, {}),  # a tool the model made up: a retry prompt
        wb.ModelResponse.text(f"done {LINK}"),
    ]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[fetch], telemetry=telemetry)
    return agent.run_sync("go")


def figure_texts(figure: Any) -> list[str]:
    """Every string of a figure plotly may render as markup: hovers, names, tick labels."""
    data = json.loads(figure.to_json())
    texts: list[str] = []
    for trace in data["data"]:
        for key in ("hovertext", "text", "name"):
            value = trace.get(key)
            texts += value if isinstance(value, list) else [value] if value else []
    for axis in ("xaxis", "yaxis"):
        texts += [str(t) for t in data["layout"].get(axis, {}).get("ticktext") or []]
    return texts


@pytest.mark.parametrize("with_telemetry", [False, True], ids=["from-steps", "from-spans"])
def test_no_figure_renders_run_data_as_markup(with_telemetry: bool) -> None:
    telemetry = wb.Telemetry(capture_content=True) if with_telemetry else None
    result = a_run(telemetry)
    figures = trace_figures(wb.trace_of(result, telemetry=telemetry))
    texts = [t for f in figures.values() for t in figure_texts(f)]
    assert any("evil.example" in t for t in texts), "the run's data should be in the hovers"
    live = [t for t in texts if "<a" in t or "<b>fake" in t]
    assert not live, live[:3]
    assert any("&lt;a href=" in t for t in texts)  # shown as text


@pytest.mark.browser
def test_a_link_in_a_tool_result_is_text_in_the_reports_explorer(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    telemetry = wb.Telemetry(capture_content=True)
    result = a_run(telemetry)
    report = write_report(result, tmp_path / "run.html", telemetry=telemetry)
    page = browser.new_page()

    def only_the_file(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", only_the_file)
    page.goto(Path(report).as_uri())
    explorer = page.locator("#wb-explorer")
    explorer.locator(".wbx-row").filter(has_text="execute_tool fetch").first.click()
    detail = explorer.locator(".wbx-detail")
    expect(detail).to_contain_text('<a href="https://evil.example/steal">')  # shown as text
    # the steps table, drawn by the page from its columns, shows the made-up name as text
    made_up = page.locator("div.wb-table").first.get_by_role("row").filter(has_text="(retry)")
    expect(made_up.get_by_role("cell").nth(4)).to_have_text(f"{NAME} (retry)")
    assert page.locator("b").filter(has_text=re.compile(r"^fake$")).count() == 0  # no <b> made
    assert page.locator("a[href*='evil.example']").count() == 0  # never a live link
    page.close()


def test_the_cells_views_of_a_stop_an_error_and_a_diff_show_run_data_as_text() -> None:
    """Session 6's cell views: a phase stopped at a tool error (its agent, its failed calls),
    one `RunError`, a diff's failed ends: every name and message from the run is escaped."""

    @wb.tool(name="fetch")
    def broken(url: str) -> str:
        """Fetch a page (here: one that raises with a link in its message)."""
        raise ValueError(f"bad page {LINK}")

    def agent() -> wb.Agent:  # a lead whose sub-agent, named by a model, calls the tool
        script = [wb.ModelResponse.tool_call("fetch", {"url": "x"}), wb.ModelResponse.text("done")]
        helper = wb.Agent(model=wb.ScriptedModel(script), tools=[broken], name=NAME)
        calls = [wb.ModelResponse.tool_call("ask", {"task": "go"}), wb.ModelResponse.text("ok")]
        tools = [helper.as_tool("ask", "Ask the helper.")]
        return wb.Agent(model=wb.ScriptedModel(calls), tools=tools, name="lead")

    run = agent().start("go", breakpoints=[wb.Break.on_error()])
    stopped = run.run_to_breakpoint()
    assert stopped is not None
    views = [stopped._repr_html_()]
    run.run_to_end()
    result = run.result
    views.append(result.errors[0]._repr_html_())
    failed = result.state.model_copy(
        update={"status": wb.ExecutionStatus.FAILED, "error": wb.ErrorInfo(type=NAME, message=LINK)}
    )
    views.append(wb.diff(result, result.model_copy(update={"state": failed}))._repr_html_())
    for html in views:
        assert "evil.example" in html  # the run's data is shown...
        assert "<a href" not in html and "<b>fake" not in html  # ...as text
