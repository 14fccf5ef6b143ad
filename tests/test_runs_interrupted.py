"""A run whose process ended while it ran lists as interrupted, everywhere, from any process.

Runs are started and stepped in real child processes that then exit (or are killed with
SIGKILL); the lists are read here, another process, as a person's notebook would read them.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench as wb
from tests.test_runs_list import _as_version_5
from workbench import _processes, _storage
from workbench.cli import main
from workbench.notebook import RunsBrowser
from workbench.notebook.explorer_data import open_words
from workbench.notebook.html import summary_html
from workbench.notebook.spans import timeline_figure
from workbench.notebook.trace_view import trace_top_html
from workbench.report import report_html
from workbench.runlist import writer_note

ROOT = Path(__file__).resolve().parent.parent


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


STEPPED = textwrap.dedent(
    """
    import sys
    import workbench as wb

    @wb.tool
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    call = wb.ModelResponse.tool_call("add", {"a": 1, "b": 2})
    agent = wb.Agent(model=wb.ScriptedModel([call, call, call, "3"]), tools=[add],
                     store=wb.RunStore(sys.argv[1]))
    run = agent.start("What is 1 + 2?")
    for _ in range(9):  # two whole steps (four phases each), and step 3's prepare
        run.next_phase()
    print(run.state.run_id, flush=True)
    if sys.argv[2] == "wait":  # until it is killed
        sys.stdin.read()
    """
)
"""A run started and stepped by hand, as the README's tour does, in a process that then ends."""

DROPPED = textwrap.dedent(
    """
    import sys
    import workbench as wb
    from tests._failing_team import team

    run = team(store=wb.RunStore(sys.argv[1])).start("hat", breakpoints=[wb.Break.on_error()])
    run.run_to_breakpoint()  # stopped inside the digger, two sub-runs down
    print(run.state.run_id, flush=True)
    """
)


def _child(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _ran(script: str, path: Path) -> str:
    """Run ``script`` to its end in a child process; the run id it printed."""
    child = _child(script, str(path), "exit")
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return out.split()[-1]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_run_stepped_by_hand_whose_process_exited_is_interrupted_in_every_list(
    path: Path,
) -> None:
    run_id = _ran(STEPPED, path)
    with wb.RunStore(path) as store:
        (row,) = store.find()
        assert (row.run_id, row.status, row.steps) == (run_id, "interrupted", 2)
        assert store.find(wb.RunFilter(status="running")) == []
        assert store.count(wb.RunFilter(status="interrupted")) == 1
        frame = wb.runs(store)
        assert frame[["status", "steps"]].values.tolist() == [["interrupted", 2]]
        assert store.load(run_id).state.status.value == "running"  # the stored row is as written
        note = writer_note(store, row)
    assert "ended while it was running: it recorded 2 steps" in note
    listed = _cli("runs", "--store", str(path))
    assert f"{run_id}  agent  interrupted" in listed
    assert _cli("runs", "--store", str(path), "--status", "running").startswith("no matching")
    shown = _cli("show", run_id, "--store", str(path))
    assert shown.startswith(f"run {run_id} (agent): interrupted\nthe process that ran it (pid ")
    assert "steps 2;" in shown


def test_a_running_process_is_running_and_interrupted_once_it_is_killed(path: Path) -> None:
    child = _child(STEPPED, str(path), "wait")
    try:
        assert child.stdout is not None
        run_id = child.stdout.readline().strip()
        with wb.RunStore(path) as store:
            (row,) = store.find()
            assert (row.run_id, row.status, row.steps) == (run_id, "running", 2)
            assert writer_note(store, row) == ""  # running here: nothing to add
            before = store.version()
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)
            assert store.version() != before  # a live list redraws, though nothing was written
            assert [(r.status, r.steps) for r in store.find()] == [("interrupted", 2)]
            assert store.summary(run_id).status == "interrupted"
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=60)


def test_the_top_run_of_a_run_left_inside_a_sub_run_at_exit_is_interrupted(path: Path) -> None:
    """Its sub-runs are aborted as the process exits (`workbench.stepping`); the top run, still
    in hand, was running when it ended."""
    run_id = _ran(DROPPED, path)
    with wb.RunStore(path) as store:
        rows = {r.run_id: r for r in store.find()}
        assert rows.pop(run_id).status == "interrupted"
        assert {r.status for r in rows.values()} == {"aborted"} and len(rows) == 2
        (tree,) = store.find(wb.RunFilter(rollup=True))
        assert (tree.run_id, tree.status) == (run_id, "interrupted")


def _set_writer(path: Path, run_id: str, host: str, pid: object, started: object) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE summaries SET writer_host = ?, writer_pid = ?, writer_started = ? "
            "WHERE run_id = ?",
            (host, pid, started, run_id),
        )
    conn.close()


def test_a_pid_given_to_another_process_is_not_the_run_s_process(path: Path) -> None:
    """This test's own pid is alive, but it started later than the recorded process did."""
    run_id = _ran(STEPPED, path)
    here = _processes.this_process()
    assert here.started is not None  # Linux: /proc says when a process started
    boot, namespace, _ = here.started.split("/")
    _set_writer(path, run_id, here.host, here.pid, f"{boot}/{namespace}/1")
    with wb.RunStore(path) as store:
        assert store.summary(run_id).status == "interrupted"
    _set_writer(path, run_id, here.host, here.pid, here.started)  # this very process
    with wb.RunStore(path) as store:
        assert store.summary(run_id).status == "running"


def test_a_run_on_another_machine_stays_running_and_says_where(path: Path) -> None:
    run_id = _ran(STEPPED, path)
    _set_writer(path, run_id, "elsewhere.example", 4242, "boot/pid:[1]/77")
    with wb.RunStore(path) as store:
        row = store.summary(run_id)
        assert row.status == "running"
        assert writer_note(store, row) == (
            "running on another machine (pid 4242 on elsewhere.example), as far as the store "
            "knows: whether it still is cannot be checked from here"
        )


@pytest.mark.parametrize(
    ("pid", "started"),
    [("not a pid", None), (None, None), (-1, None), (4242, 17), (4242, "no/start")],
)
def test_a_damaged_writer_is_never_taken_as_gone(path: Path, pid: object, started: object) -> None:
    run_id = _ran(STEPPED, path)
    _set_writer(path, run_id, _processes.this_process().host, pid, started)
    with wb.RunStore(path) as store:
        assert [r.status for r in store.find()] == ["running"]
        assert wb.runs(store)["status"].tolist() == ["running"]


def test_a_process_of_an_earlier_boot_is_gone() -> None:
    here = _processes.this_process()
    assert here.started is not None
    _, namespace, ticks = here.started.split("/")
    assert _processes.gone(here.host, here.pid, f"another-boot/{namespace}/{ticks}")
    assert not _processes.gone(here.host, here.pid, here.started)
    assert not _processes.gone(here.host, here.pid, f"{here.started.split('/')[0]}/pid:[1]/1")


@pytest.fixture
def browser(path: Path) -> Iterator[RunsBrowser]:
    _ran(STEPPED, path)
    browser = RunsBrowser(wb.RunStore(path), live=False)
    yield browser
    browser.close()


def test_the_browser_lists_and_opens_an_interrupted_run_as_interrupted(
    browser: RunsBrowser,
) -> None:
    (row,) = browser.table.rows
    assert (row["status"], row["steps"]) == ("interrupted", 2)
    browser.table.status = "interrupted"
    assert [r["id"] for r in browser.table.rows] == [row["id"]]
    browser.table.status = "running"
    assert browser.table.rows == []
    browser.open_run(row["id"])
    heading = browser.pane.children[0].value
    assert "interrupted" in heading and "running" not in heading.split("process")[0]
    assert "ended while it was running: it recorded 2 steps" in heading
    history = browser.step_through()
    said = history.status.value  # not "running", "it goes on from its AgentRun"
    assert "This run will not end: the process that ran it (pid " in said
    assert "goes on" not in said and ">interrupted</span>" in said and ">running<" not in said
    assert history.run_picker.options[0][0] == "1. agent · interrupted · 2 steps"


def test_a_store_of_the_previous_version_opens_lists_and_records_processes_from_then_on(
    path: Path,
) -> None:
    """Its runs have no process recorded: one left running lists as it was stored, saying that
    whether its process is there cannot be told. Runs written after the migration have one."""
    old = _ran(STEPPED, path)
    _as_version_5(path)
    with wb.RunStore(path) as store:
        assert [(r.run_id, r.status, r.steps) for r in store.find()] == [(old, "running", 2)]
        assert store.writer(old) is None
        assert writer_note(store, store.summary(old)) == (
            "stored by an earlier workbench, which did not record the process running a run: "
            "whether it still runs cannot be told (if no process of yours is running it, it was "
            "interrupted)"
        )
    new = _ran(STEPPED, path)
    with wb.RunStore(path) as store:
        assert {r.run_id: r.status for r in store.find()} == {old: "running", new: "interrupted"}
    conn = sqlite3.connect(path)
    (version,) = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    conn.close()
    assert version == _storage.STORE_SCHEMA_VERSION


def test_a_writer_known_by_its_pid_alone_is_asked_again_as_its_pid_may_be_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the system does not say when a process started (not Linux), a writer is its pid:
    found gone once, a later writer given the same pid is not gone for it."""
    here = _processes.this_process()
    pid = 2_000_000_000  # no process has it (above pid_max), until the patch says one does
    assert _processes.gone(here.host, pid, None)
    monkeypatch.setattr(_processes, "_exists", lambda _: True)  # a new process, same pid
    assert not _processes.gone(here.host, pid, None)


@pytest.mark.parametrize("hidden", [PermissionError, FileNotFoundError])
def test_a_live_process_proc_will_not_show_is_not_taken_for_gone(
    monkeypatch: pytest.MonkeyPatch, hidden: type[OSError]
) -> None:
    """A ``/proc`` mounted ``hidepid=1`` refuses to read another user's processes, ``hidepid=2``
    hides them; signal 0 still finds one there (EPERM). Whether it is the run's process cannot
    be told, so its run is not called gone; a pid no process has still is."""
    here = _processes.this_process()
    assert here.started is not None
    alive = os.getppid()  # the process that started this one: alive, and not started at tick 1
    recorded = f"{here.started.rsplit('/', 1)[0]}/1"
    read = _processes._start_of

    def hiding(pid: int | str) -> str | None:
        if str(pid) in (str(alive), "2000000000"):
            raise hidden(13, f"/proc/{pid}/stat: hidden")
        return read(pid)

    monkeypatch.setattr(_processes, "_gone", set())  # found gone once, it is kept as gone
    monkeypatch.setattr(_processes, "_start_of", hiding)
    assert not _processes.gone(here.host, alive, recorded)
    assert _processes.gone(here.host, 2_000_000_000, recorded)
    monkeypatch.setattr(_processes, "_start_of", read)  # readable: another process has its pid
    assert _processes.gone(here.host, alive, recorded)


def test_an_interrupted_run_compares_as_interrupted(path: Path) -> None:
    """Beside a run of the same agent that went on to its end (in this process)."""
    stopped = _ran(STEPPED, path)
    call = wb.ModelResponse.tool_call("add", {"a": 1, "b": 2})
    agent = wb.Agent(
        model=wb.ScriptedModel([call, call, "3"]), tools=[add], store=wb.RunStore(path)
    )
    done = agent.run_sync("What is 1 + 2?")
    browser = RunsBrowser(wb.RunStore(path), live=False)
    try:
        browser.compare(stopped, done.run_id)
        html = browser.pane.children[0].value
    finally:
        browser.close()
    assert ">interrupted</span>" in html and ">running</span>" not in html
    assert "a was interrupted: its process ended while it ran, after step 2" in html
    assert "end a: interrupted, stop reason -" in html and "end a: running" not in html


def test_an_interrupted_run_s_open_spans_are_cut_off_where_it_stopped_not_so_far(
    browser: RunsBrowser, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its run span never closed and never will: every view says cut off, not "so far"."""
    (row,) = browser.table.rows
    browser.open_run(row["id"])
    explorer = browser.explorer
    assert explorer is not None
    trace = explorer.trace
    assert trace.interrupted.startswith("the process that ran it (pid ")
    assert trace.status() == "interrupted" and explorer.summary == "interrupted"
    assert explorer.failed and explorer.interrupted == trace.interrupted
    (agent,) = [r for r in explorer.rows if r["category"] == "agent"]
    assert agent["in_progress"]  # open as the records left it; drawn cut off by the page
    explorer.select(agent["id"])
    assert ">cut off</span>" in explorer.detail and " ms cut off · span" in explorer.detail
    assert "so far" not in explorer.detail and "in progress" not in explorer.detail

    history = browser.step_through()
    assert history.trace.interrupted == trace.interrupted
    figure = timeline_figure(history.trace)
    assert figure is not None
    (bars,) = [bar for bar in figure.data if bar.name == "agent"]
    assert "cut off: its process ended" in bars.hovertext[0]
    assert "in progress" not in bars.hovertext[0] and bars.marker.pattern.shape == ("",)
    (mark,) = [m for m in figure.data if m.name == "cut off"]  # a red stroke where it stopped
    assert (mark.y, mark.x) == ((0,), (bars.base[0] + bars.x[0],))
    top = trace_top_html(trace)
    assert ">interrupted</div>" in top and "This run will not end: the process" in top
    page = report_html(trace)
    assert '"interrupted":"the process that ran it (pid ' in page
    red = summary_html("interrupted", failed=True)  # red, as a run that went wrong: the report
    for top in (page, trace._repr_html_() or ""):  # and the Trace as a cell's value
        assert red in top and "This run will not end: the process that ran it" in top
    report = path.parent / "report.html"  # and from a terminal
    assert main(["report", row["id"], "--store", str(path), "-o", str(report)]) == 0
    assert capsys.readouterr().out.startswith(f"run {row['id']} (agent): interrupted\n")
    assert '"interrupted":"the process that ran it (pid ' in report.read_text(encoding="utf-8")


def test_a_stored_run_not_known_interrupted_is_drawn_so_far(path: Path) -> None:
    """Without what the run list knows, a stored run left running is a run going on."""
    run_id = _ran(STEPPED, path)
    with wb.RunStore(path) as store:
        trace = wb.trace_of(store.load(run_id))
    assert trace.interrupted == "" and trace.status() == "running"
    (agent,) = [s for s in trace.spans if s.category == "agent"]
    assert agent.in_progress and open_words(trace, agent) == "so far"
    figure = timeline_figure(trace)
    assert figure is not None
    (bars,) = [bar for bar in figure.data if bar.name == "agent"]
    assert "in progress" in bars.hovertext[0] and bars.marker.pattern.shape == ("/",)
    assert "cut off" not in {m.name for m in figure.data}
