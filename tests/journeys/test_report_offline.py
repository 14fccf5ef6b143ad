"""Journey 5: the same failing span, found in the standalone report opened offline.

The team's run is recorded in a store by a script, ``workbench report last -o`` writes the
report of the run the script started (the lead's), and the person opens the file in the browser
with every request that would leave the file refused. The report says at the top that a tool
failed and where; its explorer's "errors only" shows the failed call drawn red, and clicking it
shows the traceback, naming the user's function and line; the steps table links the failed
step to its messages. A long run's report draws only the table rows and step sections in view:
its failing step is still found by a sort and by the table's find box, and its link opens it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from html import unescape
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

import workbench as wb
from tests._report_page import page_data, page_detail
from tests.journeys.harness import ARTIFACTS, FRAMES, RED, fits
from tests.journeys.team import BUG_LINE, IMPORT, PROMPT, TEAM
from tests.test_browser import _only_files
from workbench.report import write_report

_TOP = "(element) => element.getBoundingClientRect().top"
_SECTIONS_HEIGHT = """() => {  // px from the first step section's top to the last one's bottom
  const all = document.querySelectorAll('section.wb-step-section');
  return all[all.length - 1].getBoundingClientRect().bottom - all[0].getBoundingClientRect().top;
}"""


def test_the_failing_span_in_the_report_opened_offline(browser: Any, tmp_path: Path) -> None:
    script = tmp_path / "team.py"
    script.write_text("\n\n".join([*TEAM, f"lead.run_sync({PROMPT!r})"]) + "\n")
    bug_line = len(IMPORT.splitlines()) + 1 + BUG_LINE  # the tool's cell follows a blank line
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite")}
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=120)
    report = tmp_path / "report.html"
    workbench = [sys.executable, "-m", "workbench.cli", "report", "last", "-o", str(report)]
    subprocess.run(workbench, env=env, check=True, timeout=120, capture_output=True)

    page = browser.new_page()
    refused = _only_files(page)
    page.goto(report.as_uri())
    expect(page.get_by_role("row", name="agents lead, researcher, digger")).to_be_visible()
    said = page.get_by_text(re.compile(r"1 tool error.*apply_discount in digger")).first
    expect(said).to_be_visible()
    steps = page.get_by_role("heading", name="Steps")
    assert said.bounding_box()["y"] < steps.bounding_box()["y"]  # at the top: before the steps
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-offline-1-summary.png"))

    explorer = page.locator("#wb-explorer")
    explorer.get_by_role("checkbox", name="errors only").check()
    failed = explorer.locator(".wbx-row", has_text="execute_tool apply_discount")
    expect(failed).to_have_count(1)
    expect(failed.locator(".wbx-bar")).to_have_css("background-color", RED)
    failed.click()
    detail = explorer.locator(".wbx-detail")
    expect(detail).to_contain_text("unsupported operand type(s) for /: 'str' and 'int'")
    frame = detail.get_by_text(re.compile(rf"team\.py.*line {bug_line}, in apply_discount")).first
    expect(frame).to_be_visible()
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report-offline-2-traceback.png"))

    # the steps' messages: the page fills each section from the boxes its explorer holds; the
    # steps table (drawn by the page from its columns, sorted by a click on a heading) links the
    # failed step to its section
    diggers = page.locator("section.wb-step-section").filter(
        has=page.locator(".wb-step-agent", has_text="digger")
    )
    dug = diggers.filter(has=page.locator(".wb-step-head", has_text="Step 1 · "))
    expect(dug).to_have_count(1)
    # its heading says the step once ("step 1 · digger" was above "Step 1 · 1.21 ms · ...")
    expect(dug.locator(".wb-step-head")).to_have_text(re.compile(r"^Step 1 · .* ms · "))
    said = re.compile(r"step 1 · ")  # a string would match "Step 1 · " too (case-insensitive)
    expect(page.locator("section.wb-step-section").filter(has_text=said)).to_have_count(0)
    table = page.locator("div.wb-table").first
    # nothing was priced (scripted and function models): no cost said, no column of 0.000
    expect(page.get_by_role("row", name=re.compile("^tokens"))).not_to_contain_text("$")
    expect(table.locator("th", has_text="cost")).to_have_count(0)
    # it fits the page: at 1,300 px every column is in view (the tokens and cost were beyond
    # it); at 1,000 px some texts are cut, each whole in its tooltip; no number is ever cut
    assert fits(page, table, 1300) == 0
    assert fits(page, table, 1000) > 0
    page.set_viewport_size({"width": 1400, "height": 1000})
    headings = table.locator("th")
    time = headings.all_inner_texts().index("time (ms)")
    times = table.locator(f"tbody td:nth-child({time + 1})")
    for arrow in ("▼", "▲"):  # a heading's click sorts by it: the slowest step first, then last
        headings.nth(time).click()
        expect(headings.nth(time)).to_have_text(f"time (ms) {arrow}")
        shown = [float(t) for t in times.all_inner_texts()]
        assert len(shown) >= 5 and shown == sorted(shown, reverse=arrow == "▼")
    failing = table.get_by_role("row").filter(has_text="apply_discount (error)")
    expect(failing).to_have_count(1)
    expect(failing.get_by_role("cell").nth(1)).to_have_text("digger")
    # the failed step stands out: its row red (the only one), its link above the messages red
    # (the links stand apart, with no dot between them as in their labels), its section marked
    expect(table.locator("tr.wb-failed")).to_have_count(1)
    expect(failing.get_by_role("cell").nth(1)).to_have_css("color", RED)
    nav = page.locator("nav")
    expect(nav.locator("a.wb-failed")).to_have_text("1 · digger")
    expect(nav.locator("a.wb-failed")).to_have_css("color", RED)
    between = nav.evaluate(
        "(nav) => [...nav.childNodes].filter((n) => n.nodeType === 3)"
        ".map((n) => n.textContent).join('')"
    )
    assert between.strip() == "steps:", between
    expect(dug).to_have_css("border-left-color", RED)
    expect(page.locator("section.wb-failed")).to_have_count(1)
    failing.get_by_role("link").click()
    expect(dug).to_be_in_viewport()
    expect(dug).to_have_css("box-shadow", re.compile(r"rgb\(144, 202, 249\) 0px 0px 0px 3px"))
    told = dug.locator(".wb-msg").filter(has_text="failed: TypeError: unsupported operand")
    expect(told).to_have_count(1)  # what the digger's model was told of its tool call
    dug.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report-offline-3-step-messages.png"))
    expect(page.locator(".wb-drawn-near")).to_be_hidden()  # a short run's page is drawn whole
    assert refused == []
    page.close()


LONG = 600
"""Steps of the long run: more than the page draws at once (``AT_ONCE``, explorer_static.js)."""
BROKEN = 451
"""The step whose tool call fails."""


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers (the one of step `BROKEN` breaks)."""
    if a == BROKEN:
        raise ValueError("the adder broke <b>here</b>")
    return a + b


def long_run(telemetry: wb.Telemetry) -> wb.RunResult:
    """A run of `LONG` steps, a tool call a step; the call of step `BROKEN` fails. Every third
    step the model says a few lines too: the steps' sections are not all as high."""
    calls = 0

    def answer(messages: Any, request: Any) -> wb.ModelResponse:
        nonlocal calls
        calls += 1
        if calls >= LONG:
            return wb.ModelResponse.text("done")
        cost = 0.00003 if calls == BROKEN else 0.00001  # reads 0.000 to three decimals
        call = wb.ModelResponse.tool_call("add", {"a": calls, "b": 1}, usage=wb.Usage(cost=cost))
        if calls % 3:
            return call
        said = wb.TextPart(text="\n".join(f"adding, line {line}" for line in range(12)))
        return call.model_copy(update={"parts": (said, *call.parts)})

    agent = wb.Agent(
        model=wb.FunctionModel(answer, name="adder"),
        tools=[add],
        stop=wb.MaxSteps(LONG + 1),
        history_processors=[wb.KeepLast(8)],
        hooks=[wb.Hook(wb.HookEvent.PRE_TOOL_USE, lambda given: None)],  # every column shown
        telemetry=telemetry,
        store=False,
    )
    return agent.run_sync("add")


def _spans_holding(html: str, query: str) -> int:
    """How many spans' name or detail, read as text, hold ``query``: what a search must find."""
    data = page_data(html)
    spans = data["spans"]
    names = [spans["words"][name] for name in spans["name"]]
    details = (unescape(re.sub("<[^>]*>", " ", page_detail(data, p))) for p in range(len(names)))
    return sum(
        query in f"{name} {detail}".lower() for name, detail in zip(names, details, strict=True)
    )


def test_the_failing_step_of_a_long_run_is_found_in_its_report(
    browser: Any, tmp_path: Path
) -> None:
    """A long run's page draws the rows in view and the sections near it: a person still finds
    the failing step by sorting and by finding, its link opens its messages, a section far down
    is drawn when scrolled to."""
    telemetry = wb.Telemetry(capture_content=True)
    result = long_run(telemetry)
    assert len(result.steps) == LONG
    report = write_report(result, tmp_path / "long.html", telemetry=telemetry)
    page = browser.new_page()
    refused = _only_files(page)
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(str(error)))
    page.goto(report.as_uri())

    table = page.locator("div.wb-table").first
    drawn = table.locator("tbody tr:not(.wb-gap)")
    expect(drawn.first).to_be_visible()
    assert drawn.count() < LONG / 3  # the rows in view, not all of them
    box = table.locator(".wb-table-scroll")
    row_height = drawn.first.bounding_box()["height"]
    assert box.evaluate("(box) => box.scrollHeight") > (LONG - 5) * row_height  # a true scrollbar
    for width in (1300, 1000, 1400):  # it fits the page
        fits(page, table, width)
    # its cost as every view says money: two significant digits (was "($0.006020)")
    expect(page.get_by_role("row", name=re.compile("^tokens"))).to_contain_text("($0.006)")

    failed = table.locator("th", has_text="failed spans")
    failed.click()  # the most failed spans first
    expect(failed).to_have_text("failed spans ▼")
    first = drawn.first
    expect(first.get_by_role("cell").first).to_have_text(str(BROKEN))
    expect(first).to_contain_text("add (error)")
    expect(first).to_have_class("wb-failed")  # drawn red, the one row that failed
    expect(table.locator("tr.wb-failed")).to_have_count(1)
    section = page.locator(f"#step-{BROKEN - 1}")
    assert section.locator(".wb-msg").count() == 0  # not drawn: far from the view
    at_load = page.evaluate(_SECTIONS_HEIGHT)
    first.get_by_role("link").click()
    expect(section).to_be_in_viewport()
    told = section.locator(".wb-msg").filter(has_text="failed: ValueError: the adder broke")
    expect(told).to_have_count(1)  # drawn when its link brought it into view
    expect(told).to_contain_text("<b>here</b>")  # as text
    page.evaluate(FRAMES)  # the link put it at the top; those drawn above it did not move it
    assert abs(section.evaluate(_TOP)) < 2
    after_link = page.evaluate(_SECTIONS_HEIGHT)
    assert page.locator("b").filter(has_text="here").count() == 0
    expect(page.locator(".wb-drawn-near")).to_be_visible()  # says Ctrl-F sees what is drawn
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-long-1-failing-step.png"))

    cost = table.locator("th", has_text="cost ($)")
    cost.focus()
    page.keyboard.press("Enter")  # the dearest first: a small cost is a number, not 0
    expect(cost).to_have_text("cost ($) ▼")
    expect(cost).to_have_attribute("aria-sort", "descending")
    expect(failed).not_to_have_attribute("aria-sort", re.compile(".*"))
    expect(first.get_by_role("cell").first).to_have_text(str(BROKEN))
    expect(first.get_by_role("cell").last).to_have_text("0.000030")
    expect(drawn.nth(1).get_by_role("cell").last).to_have_text("0.000010")

    find = table.get_by_role("searchbox")
    find.fill("error")  # the table's own find: every row, drawn or not
    expect(table.get_by_text(f"1 of {LONG} rows")).to_be_visible()
    expect(drawn).to_have_count(1)
    expect(drawn.first.get_by_role("cell").first).to_have_text(str(BROKEN))
    find.fill("")
    expect(drawn.first.get_by_role("cell").first).to_have_text(str(BROKEN))  # still sorted

    explorer = page.locator("#wb-explorer")
    explorer.get_by_role("searchbox").fill("the adder broke")  # the explorer's, over every step
    holding = _spans_holding(report.read_text(encoding="utf-8"), "the adder broke")
    assert holding > 5  # the failed call, its step, the model calls that were told of it
    expect(explorer.locator(".wbx-count")).to_contain_text(f" {holding} matched")
    explorer.get_by_role("checkbox", name="errors only").check()
    expect(explorer.locator(".wbx-count")).to_contain_text("1 matched")

    far = page.locator(f"#step-{LONG - 60}")
    assert far.locator(".wb-msg").count() == 0
    placed = far.evaluate(f"(element) => {{ element.scrollIntoView(); return ({_TOP})(element); }}")
    expect(far.locator(".wb-msg").first).to_be_visible()  # drawn when scrolled to
    page.evaluate(FRAMES)
    assert abs(far.evaluate(_TOP) - placed) < 2  # where it was put, the sections above drawn
    page.screenshot(path=str(ARTIFACTS / "report-long-2-far-section.png"))
    after_far = page.evaluate(_SECTIONS_HEIGHT)
    sections = page.locator("section.wb-step-section")
    assert 0 < sections.filter(has=page.locator(".wb-msg")).count() < LONG / 2
    page.evaluate("dispatchEvent(new Event('beforeprint'))")  # printed: every step drawn
    expect(sections.filter(has=page.locator(".wb-msg"))).to_have_count(LONG)
    whole = page.evaluate(_SECTIONS_HEIGHT)  # sized before they were drawn: the scrollbar
    assert abs(at_load - whole) < 0.3 * whole  # was about right from the start, and
    assert abs(after_link - whole) < 0.05 * whole and abs(after_far - whole) < 0.05 * whole
    page.emulate_media(media="print")
    expect(drawn).to_have_count(LONG)  # and every row of the table, out of its box
    assert box.evaluate("(box) => box.scrollHeight <= box.clientHeight")
    page.evaluate("dispatchEvent(new Event('afterprint'))")
    page.emulate_media(media="screen")
    expect(drawn).not_to_have_count(LONG)  # back to the rows in view
    assert failures == [] and refused == []
    page.close()


def test_the_reports_explorer_says_the_wait_on_the_person_it_left_out(
    browser: Any, tmp_path: Path
) -> None:
    """A run stepped by hand: the explorer's count line says the wait it left out, as the
    notebook's explorer does (the report says it at the top too)."""
    script = [wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}), "3"]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[add], store=False)
    run = agent.start("add")
    run.next_phase()
    time.sleep(1.0)  # the person reads
    while run.next_phase() is not None:
        pass
    report = write_report(run.result, tmp_path / "stepped.html")
    page = browser.new_page()
    page.goto(report.as_uri())
    count = page.locator("#wb-explorer .wbx-count")
    expect(count).to_contain_text(re.compile(r"spans shown · 1\.\d s waiting on you left out"))
    page.close()
