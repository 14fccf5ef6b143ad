"""Click-to-render latency of the journeys' clicks: JupyterLab, Notebook 7, the report offline.

    .venv/bin/python bench/journey_latency.py [--trials 5] [--steps 25] [--read 0]

What is measured: the time from a click in the page to the widget showing the new state, per
kind of click a person makes in the journeys (tests/journeys/):

- **Stepper buttons** (Continue to a breakpoint two sub-agents down, Step over, Step out, Next
  phase, Step into, Run to end), each on a fresh three-level team per trial; "shown" is the
  Stepper's status line saying something new with its buttons enabled again (or "completed");
  ``--read S`` waits S seconds before each click, as a person reading the Stepper does (its
  timeline is redrawn a moment after the presses pause: with 0 the clicks come too fast for it);
- **explorer row click**: a span row of `TraceExplorer` over a run of ``--steps`` steps (six spans
  a step); "shown" is the row drawn selected and the detail pane naming the span;
- **explorer filter**: the "errors only" box checked or unchecked; "shown" is the count line
  changing;
- **explorer search typed**: a word typed into the search box (from the input event; the box
  waits 150 ms for the typing to stop before asking the kernel, which is in the figure);
- the same three explorer clicks in **Notebook 7** (journey 6) and in the **report opened
  offline** (journey 5: the page's own script, no kernel).

Both ends are timed by the page (`tests.journeys.harness.click_latency`: the click event and
the DOM change a `MutationObserver` sees), so the browser driver's polling is not in the figure;
the kernel's work, the comm round trip and the page's drawing are. Medians, 90th percentiles and
maxima in seconds. Issue 30's targets: Stepper clicks 0.1-0.2 s, explorer clicks 0.1-0.5 s.
Not asserted anywhere: the machine is shared and slow.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.journeys.harness import (
    Notebook,
    button,
    chromium,
    chromium_missing,
    click_latency,
    jupyter_server,
)

TEAM = '''@wb.tool
def search(query: str) -> str:
    """Search the catalogue."""
    return f"found: {query}"


def team():
    """A fresh lead -> researcher -> digger team (scripted models are used up by a run)."""
    R = wb.ModelResponse
    digger = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "coat"}), "120"]),
        name="digger", tools=[search],
    )
    researcher = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("dig", {"task": "coat"}), "120", "80"]),
        name="researcher", tools=[digger.as_tool("dig")],
    )
    return wb.Agent(
        model=wb.ScriptedModel([
            R.tool_call("research", {"task": "coat"}),
            R.tool_call("research", {"task": "shoes"}),
            "120 and 80",
        ]),
        name="lead", tools=[researcher.as_tool("research")],
    )'''

LONG_RUN = '''@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def adder(messages, request):
    """Two calls a step, until {steps} steps; one of them with a bad argument."""
    steps = sum(1 for m in messages if m.role == "assistant")
    if steps >= {steps}:
        return "done"
    b = "two" if steps == 3 else 2
    calls = [wb.ToolCall(name="add", arguments={{"a": steps, "b": b}}) for _ in range(2)]
    return wb.ModelResponse(parts=tuple(calls))


agent = wb.Agent(model=wb.FunctionModel(adder), tools=[add], stop=wb.MaxSteps({steps} + 1))
result = agent.run_sync("go")
explorer = TraceExplorer(result)
explorer'''

REPORT_FILE = "journey-latency-report.html"
REPORT = f"from workbench.report import write_report\nwrite_report(result, {REPORT_FILE!r})"

STEPPER = """stepper = Stepper(team(), "Prices?", breakpoints=[wb.Break.on_tool("search")])
stepper"""

CLICKS = [
    "Continue",
    "Step over",
    "Step out",
    "Step out",
    "Next phase",
    "Next phase",
    "Next phase",
    "Step into",
    "Run to end",
]
"""One trial of the Stepper: the clicks of journey 2, without the approval."""

_STEPPER_SHOWN = """() => {
  const root = document.querySelector("[data-wb-bench='%s']");
  const status = root.querySelector(".wb-status").textContent;
  const next = [...root.querySelectorAll("button")]
    .find((b) => b.textContent.trim() === "Next step");
  return status !== %s && (!next.disabled || status.includes("completed"));
}"""

_ROW_SHOWN = """() => {
  const root = document.querySelector("[data-wb-bench='%s']");
  const row = root.querySelector(".wbx-row.wbx-selected");
  return row !== null && row.dataset.id === %s
    && root.querySelector(".wbx-detail").textContent.includes(%s);
}"""

_COUNT_CHANGED = """() => {
  const count = document.querySelector("[data-wb-bench='%s'] .wbx-count");
  return count.textContent !== %s;
}"""


def _mark(cell: Any, name: str) -> None:
    cell.evaluate("(node, name) => { node.dataset.wbBench = name; }", name)


def stepper_trial(
    notebook: Notebook, trial: int, figures: dict[str, list[float]], read: float
) -> None:
    """Show a fresh Stepper and click one trial's buttons, timing each."""
    cell = notebook.run()
    _mark(cell, f"stepper-{trial}")
    for name in CLICKS:
        target = button(cell, name)
        target.wait_for()
        notebook.page.wait_for_timeout(read * 1000)
        status = cell.locator(".wb-status").text_content()
        shown = _STEPPER_SHOWN % (f"stepper-{trial}", json.dumps(status))
        figures[f"Stepper: {name}"].append(click_latency(notebook.page, target, shown))


def explorer_clicks(
    page: Any, root: Any, where: str, figures: dict[str, list[float]], rows: int
) -> None:
    """Click span rows, toggle "errors only", type searches in the explorer ``root``: each timed."""
    root.evaluate("(node, name) => { node.dataset.wbBench = name; }", where)
    for index in range(rows):
        row = root.locator(".wbx-row").nth(index)
        span, label = row.get_attribute("data-id"), row.locator(".wbx-label").inner_text()
        shown = _ROW_SHOWN % (where, json.dumps(span), json.dumps(label))
        figures[f"{where}: row click"].append(click_latency(page, row, shown))
    errors = root.get_by_role("checkbox", name="errors only")
    for _ in range(2 * max(rows // 4, 1)):  # an even count: the box ends unchecked
        before = root.locator(".wbx-count").text_content()
        changed = _COUNT_CHANGED % (where, json.dumps(before))
        figures[f"{where}: errors-only filter"].append(click_latency(page, errors, changed))
    search = root.locator(".wbx-search")
    for word in ["add", "", "chat", "", "step", "", "tool", ""][: max(rows // 2, 2)]:
        before = root.locator(".wbx-count").text_content()
        changed = _COUNT_CHANGED % (where, json.dumps(before))
        figures[f"{where}: search typed"].append(
            click_latency(page, search, changed, start="input", act=lambda w=word: search.fill(w))
        )


def report(figures: dict[str, list[float]]) -> None:
    print(f"{'click':40} {'n':>3} {'median s':>9} {'p90 s':>7} {'max s':>7}")
    for kind, values in figures.items():
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        median = statistics.median(ordered)
        print(f"{kind:40} {len(ordered):>3} {median:>9.3f} {p90:>7.3f} {ordered[-1]:>7.3f}")
    stepper = [x for k, values in figures.items() if k.startswith("Stepper") for x in values]
    explorer = [x for k, values in figures.items() if not k.startswith("Stepper") for x in values]
    print(
        f"\nall Stepper clicks: median {statistics.median(stepper):.3f} s (target 0.1-0.2 s); "
        f"all explorer clicks: median {statistics.median(explorer):.3f} s (target 0.1-0.5 s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5, help="fresh Steppers clicked through")
    parser.add_argument("--steps", type=int, default=25, help="steps of the explored run")
    parser.add_argument("--read", type=float, default=0, help="seconds before each Stepper click")
    args = parser.parse_args()
    if (why := chromium_missing()) is not None:
        print(f"journey latency skipped: {why}")
        return
    cells = [
        "import workbench as wb\nfrom workbench.notebook import Stepper, TraceExplorer",
        TEAM,
        LONG_RUN.format(steps=args.steps),
        REPORT,
        *[STEPPER] * args.trials,
    ]
    figures: dict[str, list[float]] = defaultdict(list)
    with (
        tempfile.TemporaryDirectory() as home,
        jupyter_server(Path(home)) as server,
        chromium(Path(home) / "chromium") as browser,
    ):
        notebook = server.open(browser.new_page(), "journey-latency", cells)
        notebook.run_until(2)
        page = notebook.page
        explorer_clicks(page, notebook.run().locator(".wbx"), "explorer", figures, rows=20)
        notebook.run()  # the same run's report, written for the offline clicks below
        for trial in range(args.trials):
            stepper_trial(notebook, trial, figures, args.read)
        # Journey 6's clicks in Notebook 7, and journey 5's in the report opened offline.
        classic = server.open(browser.new_page(), "journey-latency-nb7", cells[:3], ui="notebook")
        classic.run_until(2)
        root = classic.run().locator(".wbx")
        explorer_clicks(classic.page, root, "Notebook 7 explorer", figures, rows=10)
        offline = browser.new_page()
        offline.goto((server.root / REPORT_FILE).as_uri())
        root = offline.locator("#wb-explorer")
        explorer_clicks(offline, root, "report explorer", figures, rows=10)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"click to render, JupyterLab in headless chromium ({args.trials} Stepper trials, "
        f"{args.read} s read before each click, a {args.steps}-step run explored; "
        f"load average {load})"
    )
    report(figures)


if __name__ == "__main__":
    main()
