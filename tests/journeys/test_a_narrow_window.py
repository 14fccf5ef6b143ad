"""Journey: the failing team read in a narrow window: 1,000 px, JupyterLab's file browser open.

The notebook's output is then ~550 px wide. What it shows must still read: the run list's
status badges and numbers whole (the table scrolls sideways in its own box rather than cut
them), its headings apart; a traceback whose source line is wider than the output scrolls in
its own box, and the error line above it wraps at the output's width (the traceback made the
whole output as wide as its longest line, the error line cut at the window's edge mid-word);
"Step through…" pressed with its button at the window's bottom brings what it opened into view.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import FRAMES, button, click
from tests.journeys.team import IMPORT, PROMPT, RUN, TEAM

LONG_LINE = '''@wb.tool
def apply_discount(price: float, discount: str) -> float:
    """Take a discount such as '25%' off a price."""
    return price * (1 - discount / 100)  # the discount as a person writes it: '25%', '10 %' or '5'
'''
"""The team's buggy tool with a source line as long as people write them: its traceback is
wider than the output."""

OWN_STORE = """import os
os.environ["WORKBENCH_STORE"] = "narrow.sqlite"  # this notebook's runs only"""
ENDED = """import subprocess, sys

ENDED = (  # a run started and stepped by hand in a process that has ended since
    "from workbench.demo import DEMO_PROMPT, demo_agent\\n"
    "run = demo_agent().start(DEMO_PROMPT)\\n"
    "for _ in range(9): run.next_phase()"
)
subprocess.run([sys.executable, "-c", ENDED], check=True)"""
VIEW = """from workbench.notebook import RunsBrowser, TraceView

TraceView(result)"""
BROWSER = """browser = RunsBrowser(wb.RunStore.default())
browser"""
EXPLORER = """from workbench.notebook import RerunPanel, Stepper, TraceExplorer

TraceExplorer(result)"""
STEPPER = f"""stepper = Stepper(digger, {PROMPT!r}, breakpoints=[wb.Break.on_error()])
stepper"""  # the digger: the lead's scripted answers were all given in the run above
RERUN = "panel = RerunPanel(result.children[0].children[0], digger)\npanel"
RERUN_GO = "panel.step_picker.value = 0\npanel.rerun()\nawait panel.wait()"

_RUNS_FIT = """(table) => {  // what of the run list is cut, or beyond its box
  const box = table.parentElement;
  const cut = (node) => node.scrollWidth > node.clientWidth;
  const beyond = (inner, outer) => inner.getBoundingClientRect().right
    > outer.getBoundingClientRect().right + 0.5;
  return {
    badges: [...table.querySelectorAll('.wbr-badge')]
      .filter((badge) => beyond(badge, badge.closest('td'))).map((b) => b.textContent),
    numbers: [...table.querySelectorAll('td.wbr-num, td.wbr-started')].filter(cut)
      .map((cell) => cell.textContent),
    headings: [...table.querySelectorAll('th')].filter(cut).map((th) => th.textContent),
    untold: [...table.querySelectorAll('td')].filter(cut)
      .filter((cell) => !cell.title && !cell.querySelector('[title]'))
      .map((cell) => cell.textContent),
    sideways: box.scrollWidth - box.clientWidth,
    outside: beyond(box, table.closest('.jp-OutputArea-output'))  // it scrolls, in its box
      || (getComputedStyle(box).overflowX === 'visible' && box.scrollWidth > box.clientWidth),
  };
}"""

_WIDER = """(output) => {  // how far an output's content reaches beyond the output's box
  const notebook = output.closest('.jp-WindowedPanel-outer');
  const right = notebook.getBoundingClientRect().left + notebook.clientWidth;
  const items = [...output.querySelectorAll('.wb-error-item, .wb-summary-line, .wb-traceback')];
  return Math.max(0, ...items.map((item) => item.getBoundingClientRect().right - right));
}"""


_AT_THE_TOP = """(node) => {  // at the top of the notebook's view, what the buttons opened under it
  const top = node.closest('.jp-WindowedPanel-outer').getBoundingClientRect().top;
  return Math.abs(node.getBoundingClientRect().top - top) < 20;
}"""


_CUT_BUTTONS = """(output) => [...output.querySelectorAll('button')]  // a label cut: 'Ste…'
  .filter((button) => button.scrollWidth > button.clientWidth).map((b) => b.textContent)"""


_SPACED = """(node) => {  // the most its lines of text stand apart, in lines of its font
  const range = document.createRange();
  range.selectNodeContents(node);
  const tops = [...new Set([...range.getClientRects()].map((r) => Math.round(r.top)))];
  tops.sort((a, b) => a - b);
  const gaps = tops.slice(1).map((top, i) => top - tops[i]);
  return Math.max(0, ...gaps) / parseFloat(getComputedStyle(node).fontSize);
}"""


def _in_view(page: Any, target: Any) -> bool:
    """Whether the top of ``target`` is in the window, with room below it to read some."""
    box = target.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and 0 <= box["y"] <= height * 2 / 3


def test_the_team_reads_in_a_narrow_window_beside_the_file_browser(
    open_notebook: OpenNotebook,
) -> None:
    cells = [OWN_STORE, IMPORT, LONG_LINE, *TEAM[2:], RUN, ENDED, VIEW, BROWSER, EXPLORER, STEPPER]
    cells += [RERUN, RERUN_GO]
    notebook = open_notebook("narrow", cells)
    page = notebook.page
    expect(page.locator("#filebrowser")).to_be_visible()
    page.set_viewport_size({"width": 1000, "height": 900})
    notebook.run_until(len(TEAM) + 1)
    result = notebook.run().locator(".jp-OutputArea-output")
    notebook.run()
    view = notebook.run().locator(".jp-OutputArea-output").first
    for output in (result, view):  # the traceback scrolls in its box; the rest wraps
        expect(output.locator("pre").first).to_contain_text("TypeError")
        page.evaluate(FRAMES)
        assert output.evaluate(_WIDER) == 0
        pre = output.locator("pre").first
        assert pre.evaluate("(pre) => pre.scrollWidth > pre.clientWidth")  # it scrolls
    notebook.shot("1-result-1000", result)
    notebook.shot("2-trace-view-1000", view)

    cell = notebook.run()
    table = cell.locator(".wbr-table")
    expect(cell.locator(".wbr-count")).to_have_text("1–4 of 4 runs")
    expect(table.locator(".wbr-badge", has_text="interrupted")).to_have_count(1)
    page.evaluate(FRAMES)
    found = table.evaluate(_RUNS_FIT)
    assert found["badges"] == [] and found["numbers"] == [], found  # never cut
    assert found["headings"] == [] and found["untold"] == [], found
    assert not found["outside"], found  # the table scrolls in its box, not the page
    notebook.shot("3-runs-1000", cell.locator(".wbr"))
    for width in (1300, 1920):  # room enough: nothing scrolls sideways
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate(FRAMES)
        found = table.evaluate(_RUNS_FIT)
        assert found["sideways"] == 0 and found["badges"] == found["numbers"] == [], found
        notebook.shot(f"4-runs-{width}", cell.locator(".wbr"))
    page.set_viewport_size({"width": 1000, "height": 900})

    table.locator(".wbr-row", has_text="lead").locator(".wbr-agent").click()
    steps = button(cell, "Step through…")
    expect(steps).to_be_visible()
    steps.evaluate("(node) => node.scrollIntoView({block: 'end'})")  # at the window's bottom
    steps.click()
    history = cell.locator(".wb-history")
    expect(history.locator(".wb-status")).to_be_visible()
    row = cell.locator(".wbr-buttons")  # brought into view: the buttons clicked at the top,
    # what they opened under them
    page.wait_for_function(_AT_THE_TOP, arg=row.element_handle())  # (it scrolls smoothly)
    assert _in_view(page, history)
    notebook.shot("5-stepped-through-1000")

    explorer = notebook.run().locator(".wbx")  # the failed span's name whole, not 'execute_t…'
    failed = explorer.locator(".wbx-row.wbx-error .wbx-name")
    expect(failed).to_contain_text("execute_tool apply_discount")
    assert failed.evaluate("(name) => name.scrollWidth <= name.clientWidth")
    notebook.shot("6-explorer-1000", explorer)

    stepper = notebook.run()  # its buttons whole ('Step into', '… over', '… out'), not 'Step…'
    assert stepper.evaluate(_CUT_BUTTONS) == []
    click(stepper, "Continue")
    took = stepper.locator(".wb-outcomes tr td:last-child").first  # a call's time on one line
    expect(took).to_contain_text("ms")
    assert (
        took.evaluate(
            "(cell) => { const r = document.createRange(); r.selectNodeContents(cell);"
            " return new Set([...r.getClientRects()].map((line) => line.top)).size; }"
        )
        == 1
    )
    for text in (".wb-status", ".wb-phase-log"):  # a line that wraps reads as one line
        assert stepper.locator(text).evaluate(_SPACED) < 1.8, text
    notebook.shot("7-stepper-1000", stepper)
    panel = notebook.run()  # 'Re-run' whole, not 'R'
    expect(button(panel, "Re-run")).to_be_visible()
    assert panel.evaluate(_CUT_BUTTONS) == []
    notebook.shot("8-rerun-panel-1000", panel)
    notebook.run()  # re-run from step 1: the diff's text wraps between words ('a f' over 'rom')
    diff = panel.locator("pre", has_text="b is a re-run of a from step 1")
    expect(diff).to_be_visible()
    assert diff.evaluate("(pre) => getComputedStyle(pre).wordBreak") != "break-all"
    notebook.shot("9-rerun-diff-1000", diff)
