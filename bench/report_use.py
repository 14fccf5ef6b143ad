"""The report of a long run in chromium, used as a person would: this code beside ``--baseline``.

A run of ``--steps`` steps (`view_build.make_run`: two tool calls a step, six spans, content
captured; 16,666 steps = 99,995 spans) has its report drawn from its records
(``report_html(result, telemetry=...)``, what ``workbench report RUN`` draws of a stored run) by
this code and by the code at ``--baseline`` (``git archive`` of its ``workbench/``), each in a
fresh process. Both files are opened in the same chromium (``/usr/bin/chromium``, offline,
``file://``), one after the other, ``--trials`` times, and timed by the page itself, from the
action to the next frame drawn after the page shows its answer:

- **usable**: from ``goto`` until the steps table has rows and the explorer its spans;
- **sort**: a click on the steps table's "time (ms)" heading (the slowest step first);
- **link**: a click on the first row's link to its step's section, until that section shows
  its messages in view;
- **span**: a click on a model call in the explorer, until its detail is drawn;
- **search**: the explorer's search box, ``steps_left`` typed, until it says what matched (its
  150 ms wait for the typing to stop included).

Targets at 16,666 steps: usable < 5 s, sort < 1 s, link < 0.5 s, search < 2 s. Timers on a
shared 2-core machine vary with its load: compare the two columns of one run and read the load
average printed with them. Figures of past runs: ``bench/README.md``.

    .venv/bin/python bench/report_use.py                 # 16,666 steps (minutes: two runs)
    .venv/bin/python bench/report_use.py --steps 2000 --trials 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from view_build import code_at, make_run

BASELINE = "8149704"
TARGETS = {"usable": 5.0, "sort": 1.0, "link": 0.5, "search": 2.0}

_NEXT_FRAME = "new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)))"
_UNTIL = """async ([action, ready]) => {  // seconds from the action to a frame after ready
  const started = performance.now();
  new Function(action)();
  const check = new Function(`return (${ready})`);
  while (!check()) await new Promise((done) => setTimeout(done, 5));
  await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  return (performance.now() - started) / 1000;
}"""


def _worker(steps: int, out: str) -> None:
    """Write the report of a run of ``steps`` steps with whichever workbench is imported."""
    import workbench as wb
    from workbench.report import report_html

    telemetry = wb.Telemetry(capture_content=True)
    result = make_run(steps, telemetry)
    Path(out).write_text(report_html(result, telemetry=telemetry), encoding="utf-8")


def write_report(steps: int, out: Path, commit: str | None = None) -> None:
    """The report of a run of ``steps`` steps, by this code or the code at ``commit``."""
    with tempfile.TemporaryDirectory() as folder:
        env = code_at(commit, Path(folder)) if commit else dict(os.environ)
        worker = [sys.executable, __file__, "--worker", str(steps), str(out)]
        subprocess.run(worker, env=env, check=True)


def _timed(page: Any, action: str, ready: str) -> float:
    seconds: float = page.evaluate(_UNTIL, [action, ready])
    return seconds


def use(browser: Any, path: Path) -> dict[str, float]:
    """Open the report at ``path`` and time what a person does first (the module docstring)."""
    page = browser.new_context(offline=True, viewport={"width": 1300, "height": 950}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    started = time.perf_counter()
    page.goto(path.as_uri(), timeout=900_000)
    page.wait_for_function(
        "document.querySelector('div.wb-table tbody td') && document.querySelector('.wbx-row')",
        timeout=900_000,
        polling=50,
    )
    page.evaluate(f"() => {_NEXT_FRAME}")
    found = {"usable": time.perf_counter() - started}
    heading = (
        "[...document.querySelectorAll('div.wb-table th')]"
        ".find((h) => h.textContent.startsWith('time (ms)'))"
    )
    found["sort"] = _timed(page, f"{heading}.click()", f"{heading}.textContent.endsWith('\u25bc')")
    link = "document.querySelector('div.wb-table tbody a')"
    target = page.evaluate(f"{link}.getAttribute('href')")
    section = f"document.querySelector('{target}')"
    found["link"] = _timed(
        page,
        f"{link}.click()",
        f"{section}.querySelector('.wb-msg') && {section}.getBoundingClientRect().top < innerHeight"
        f" && {section}.getBoundingClientRect().bottom > 0",
    )
    chat = (
        "[...document.querySelectorAll('.wbx-row')]"
        ".filter((r) => r.textContent.includes('chat'))[2]"
    )
    found["span"] = _timed(
        page,
        f"{chat}.click()",
        "document.querySelector('.wbx-detail .wb-span-detail')",
    )
    found["search"] = _timed(
        page,
        "const box = document.querySelector('.wbx-search'); box.value = 'steps_left';"
        " box.dispatchEvent(new Event('input'))",
        "document.querySelector('.wbx-count').textContent.includes('matched')",
    )
    if errors:
        raise RuntimeError(f"{path.name}: {errors}")
    page.context.close()
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Write both reports, open them in turn, print the medians side by side and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16_666)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with")
    parser.add_argument("--keep", metavar="FOLDER", help="write the two reports there")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(int(args.worker[0]), args.worker[1])
        return 0
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(args.keep or temporary)
        folder.mkdir(parents=True, exist_ok=True)
        new, old = folder / f"report-{args.steps}.html", folder / f"report-{args.steps}-was.html"
        write_report(args.steps, new)
        write_report(args.steps, old, args.baseline)
        print(
            f"report of {args.steps:,} steps: {new.stat().st_size / 1e6:.1f} MB "
            f"(was {old.stat().st_size / 1e6:.1f}); load average {os.getloadavg()[0]:.1f}"
        )
        times: dict[str, list[dict[str, float]]] = {"new": [], "was": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            for _ in range(args.trials):
                times["new"].append(use(browser, new))
                times["was"].append(use(browser, old))
            browser.close()
    load = os.getloadavg()[0]
    print(f"load average {load:.1f}; medians of {args.trials}, this code (was {args.baseline})")
    met = True
    for what, target in TARGETS.items():
        now = statistics.median(t[what] for t in times["new"])
        was = statistics.median(t[what] for t in times["was"])
        met = met and now < target
        print(
            f"  {what:7s} {now:6.2f} s (was {was:6.2f} s)  target < {target:g} s: "
            f"{'met' if now < target else 'MISSED'}"
        )
    span = statistics.median(t["span"] for t in times["new"])
    print(
        f"  span    {span:6.2f} s (was {statistics.median(t['span'] for t in times['was']):6.2f} s)"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
