"""The journeys' harness: a person at JupyterLab (or Notebook 7) in headless Debian chromium.

`Jupyter` is one server on a free loopback port with a clean home (its own HOME, config, data,
runtime, settings and workspaces), serving a temporary root folder; JupyterLab's ``/lab`` and
Notebook 7's ``/notebooks`` are both served by it, so every journey shares it. `Jupyter.open`
writes a notebook from a list of cell sources (one action per cell, as a person types them),
opens it in a page, and returns a `Notebook`: `Notebook.run` runs the next cell as a person does,
clicking into it and pressing Shift+Enter, then waits until its prompt shows its execution number
and fails with the cell's error if it printed one. Widgets are found in a cell's output by role
and text (Playwright locators); waits are on what the page shows, never sleeps. `Notebook.shot`
keeps a screenshot under ``test-artifacts/journeys/``.

`click_latency` times one click in the page itself, from the click event to the first moment the
page shows the new state (a `MutationObserver`), for ``bench/journey_latency.py``.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``scripts/install-browser``), driven by
Playwright through ``executable_path``: Playwright's own browser download does not work here.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import nbformat

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "journeys"
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 120_000
"""How long a wait on the page may take: a kernel starting on a busy two-core machine."""

Interface = Literal["lab", "notebook"]

_SETTINGS = {  # what a person's JupyterLab would not have: news toasts, cells drawn lazily
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Every cell stays in the page, so a cell scrolled away keeps its widgets to click.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def free_port() -> int:
    """A port nobody listens on now (the OS picks it), for one server."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Jupyter:
    """A running Jupyter server: JupyterLab at ``/lab``, Notebook 7 at ``/notebooks``."""

    base: str
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path

    def url(self, path: str) -> str:
        """``path`` on this server, with the token (the page keeps it as a cookie)."""
        return f"{self.base}/{path}?token={self.token}"

    def open(
        self, page: Any, name: str, cells: Sequence[str], *, ui: Interface = "lab"
    ) -> Notebook:
        """Write ``name``.ipynb from ``cells`` and open it in ``page``, nothing run yet."""
        book = nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(source) for source in cells],
            metadata={
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
        )
        nbformat.write(book, self.root / f"{name}.ipynb")
        # Each notebook in a workspace of its own: nothing restored from the journey before.
        path = (
            f"lab/workspaces/{name}/tree/{name}.ipynb" if ui == "lab" else f"notebooks/{name}.ipynb"
        )
        page.goto(self.url(path))
        notebook = Notebook(page, name)
        from playwright.sync_api import expect

        expect(notebook.cells).to_have_count(len(cells))
        # A person waits for the kernel indicator to say idle before pressing Shift+Enter (a
        # key pressed while the notebook is still being set up is lost).
        page.wait_for_function(_KERNEL_IDLE, timeout=TIMEOUT_MS)
        return notebook

    def shut_down_kernels(self, name: str) -> None:
        """End the kernels of ``name``.ipynb (a finished journey's kernel holds memory)."""
        headers = {"Authorization": f"token {self.token}"}
        sessions = httpx.get(f"{self.base}/api/sessions", headers=headers, timeout=10).json()
        for session in sessions:
            if session.get("path", "").endswith(f"{name}.ipynb"):
                url = f"{self.base}/api/sessions/{session['id']}"
                httpx.delete(url, headers=headers, timeout=30)


_KERNEL_IDLE = """() => {
  const panel = window.jupyterapp?.shell.currentWidget;
  return panel?.sessionContext?.isReady && panel.sessionContext.session?.kernel?.status === "idle";
}"""


@contextmanager
def jupyter_server(home: Path) -> Iterator[Jupyter]:
    """JupyterLab on a free loopback port, everything it keeps under ``home``."""
    root = home / "notebooks"
    root.mkdir(parents=True)
    settings = home / "settings"
    for name, values in _SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "HOME": str(home),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "WORKBENCH_STORE": "off",  # nothing written into the repository's .workbench/
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # no debugger warning in every kernel's stderr
    }
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
        "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.extension_manager=readonly",
        "--JupyterNotebookApp.expose_app_in_browser=True",
        f"--JupyterNotebookApp.user_settings_dir={settings}",
        "--allow-root",  # CI and the dev machines run as root
    ]  # fmt: skip
    log = home / "jupyter.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
        server = Jupyter(f"http://127.0.0.1:{port}", token, root, process, log)
        try:
            _wait_until_up(server)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


def _wait_until_up(server: Jupyter) -> None:
    """Poll the server's status (bounded) until it answers."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = "\n".join(server.log.read_text().splitlines()[-8:])
            raise RuntimeError(f"Jupyter exited with {server.process.returncode}:\n{tail}")
        try:
            if httpx.get(server.url("api/status"), timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)  # a bounded poll for a server to come up, not synchronisation
    raise TimeoutError(f"Jupyter did not answer at {server.base} within 90 s")


def chromium_missing() -> str | None:
    """Install chromium with scripts/install-browser if it is missing; None, or why it is not."""
    if CHROMIUM.exists():
        return None
    done = subprocess.run(
        [str(ROOT / "scripts" / "install-browser")],
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    if CHROMIUM.exists():
        return None
    why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return f"chromium could not be installed by scripts/install-browser: {why[0]}"


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """Headless Debian chromium with an empty profile, driven by Playwright: a browser context."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        context.set_default_timeout(TIMEOUT_MS)
        try:
            yield context
        finally:
            context.close()


_PROMPT = re.compile(r"\[(\d+)\]")
_ERROR_OUTPUT = "[data-mime-type='application/vnd.jupyter.stderr']"


class CellError(AssertionError):
    """A cell printed an error (its traceback is the message)."""


@dataclass
class Notebook:
    """An open notebook in a page; cells run one at a time, as a person presses Shift+Enter."""

    page: Any
    name: str
    ran: int = 0
    """How many cells have run (the next one to run is ``cells.nth(ran)``)."""

    @property
    def cells(self) -> Any:
        """Every cell of the notebook, a Playwright locator."""
        return self.page.locator(".jp-Notebook .jp-Cell")

    def cell(self, index: int) -> Any:
        """The cell at ``index`` (negative: from the end of those run)."""
        return self.cells.nth(index if index >= 0 else self.ran + index)

    def run(self) -> Any:
        """Run the next cell (click into it, Shift+Enter) and wait until it has run; the cell.

        A cell that prints an error (or anything on stderr) fails the journey with it.
        """
        from playwright.sync_api import expect

        index = self.ran
        cell = self.cells.nth(index)
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Shift+Enter")
        self.ran += 1
        # The prompt shows [*] while the kernel works, then the count of cells run so far.
        expect(cell.locator(".jp-InputPrompt")).to_have_text(
            re.compile(rf"\[{self.ran}\]"), timeout=TIMEOUT_MS
        )
        errors = cell.locator(f".jp-OutputArea-output{_ERROR_OUTPUT}")
        if errors.count():
            self.shot(f"error-in-cell-{index + 1}")
            raise CellError(f"cell {index + 1} of {self.name}:\n{errors.first.inner_text()}")
        return cell

    def run_until(self, count: int) -> Any:
        """Run cells until ``count`` have run; the last one run."""
        cell = None
        while self.ran < count:
            cell = self.run()
        return cell

    def shot(self, step: str, target: Any = None) -> Path:
        """A screenshot as ``<notebook>-<step>.png``: of ``target``, or what the page shows.

        A target taller than the window is shown as a person sees it: scrolled to its top, the
        window's worth of it (an element screenshot of it would be cut by JupyterLab's panel).
        """
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.name}-{step}.png"
        if target is None:
            self.page.screenshot(path=str(path))
            return path
        box = target.bounding_box()
        if box is not None and box["height"] <= self.page.viewport_size["height"]:
            target.scroll_into_view_if_needed()
            target.screenshot(path=str(path))
        else:
            target.evaluate("node => node.scrollIntoView({block: 'start'})")
            self.page.screenshot(path=str(path))
        return path


FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
"""Resolves two frames on: what the page does on a change (its resize observers) is drawn."""

_TABLE_FIT = """(box) => {  // what of a drawn table is beyond its box, or cut
  const scroller = box.querySelector('.wb-table-scroll');
  const cells = [...box.querySelectorAll('tbody tr:not(.wb-gap) td')];
  const cut = cells.filter((cell) => cell.scrollWidth > cell.clientWidth);
  return {
    sideways: scroller.scrollWidth - scroller.clientWidth,
    beyond: scroller.getBoundingClientRect().right - box.getBoundingClientRect().right,
    numbers: cut.filter((cell) => cell.classList.contains('wb-number')).map((c) => c.textContent),
    untold: cut.filter((cell) => cell.title !== cell.textContent).map((c) => c.textContent),
    cut: cut.length,
    names: [...box.querySelectorAll('th')].map((heading) => heading.textContent),
    broken: [...box.querySelectorAll('th')].filter((heading) => {  // a word over two lines,
      if (heading.scrollWidth > heading.clientWidth) return true;  // or wider than its column
      const text = heading.firstChild;
      const range = document.createRange();
      let at = 0;
      return text.textContent.split(' ').some((word) => {
        range.setStart(text, at);
        range.setEnd(text, at + word.length);
        at += word.length + 1;
        return range.getClientRects().length > 1;
      });
    }).map((heading) => heading.textContent),
  };
}"""


def table_fit(page: Any, table: Any, width: int) -> dict[str, Any]:
    """A drawn table (``div.wb-table``, report_tables.js) in a window ``width`` px wide: how far
    it scrolls sideways and reaches beyond its box, its numbers cut, its cut texts whose title
    is not their whole text, how many texts are cut, its column names, and its headings with a
    word broken over two lines."""
    page.set_viewport_size({"width": width, "height": 900})
    page.evaluate(FRAMES)  # the page sized its columns for the new width
    found: dict[str, Any] = table.evaluate(_TABLE_FIT)
    return found


def fits(page: Any, table: Any, width: int) -> int:
    """In a window ``width`` px wide, the table fits its page: it does not scroll sideways, no
    number is cut, a text cut says itself whole in its tooltip, no heading breaks inside a
    word. How many texts are cut."""
    found = table_fit(page, table, width)
    assert found["sideways"] == 0 and found["beyond"] <= 0, (width, found)
    assert found["numbers"] == [] and found["untold"] == [], (width, found)
    assert found["broken"] == [], (width, found)  # a heading wraps between its words only
    cut: int = found["cut"]
    return cut


RED = "rgb(198, 40, 40)"
"""How a failed span or an error is drawn everywhere (#c62828)."""


def button(scope: Any, name: str) -> Any:
    """A widget button in ``scope`` by its text (its accessible name starts with the icon)."""
    return scope.get_by_role("button", name=re.compile(rf"(^|\s){re.escape(name)}$"))


def click(scope: Any, name: str) -> None:
    """Click the button ``name`` once it is enabled (not busy with the click before)."""
    from playwright.sync_api import expect

    target = button(scope, name)
    expect(target).to_be_enabled()
    target.click()


_LATENCY = """([shown, start]) => {
  const holds = new Function(`return (${shown})`)();
  window.wbLatency = new Promise((resolve) => {
    let began = null;
    const check = () => {
      if (began === null || !holds()) return;
      observer.disconnect();
      resolve(performance.now() - began);
    };
    const observer = new MutationObserver(check);
    const everything = {subtree: true, childList: true, characterData: true, attributes: true};
    observer.observe(document.body, everything);
    const begin = () => { began = performance.now(); check(); };
    document.addEventListener(start, begin, {capture: true, once: true});
  });
}"""


def click_latency(
    page: Any,
    target: Any,
    shown: str,
    *,
    start: str = "click",
    act: Callable[[], None] | None = None,
) -> float:
    """Seconds from a click on ``target`` (or ``act``'s ``start`` event) until ``shown`` holds.

    ``shown`` is the source of a JavaScript function of no arguments that says whether the page
    shows the new state. Both ends are timed by the page (the event, and the DOM change a
    `MutationObserver` sees), so Playwright's polling is not in the figure.
    """
    page.evaluate(_LATENCY, [shown, start])
    if act is None:
        target.click()
    else:
        act()
    ms: float = page.evaluate(_SHOWN_IN_TIME, TIMEOUT_MS)
    return ms / 1000


_SHOWN_IN_TIME = """(timeout) => Promise.race([
  window.wbLatency,
  new Promise((_, fail) => setTimeout(() => fail(new Error("never shown")), timeout)),
])"""
