"""Tracebacks: the user's frames first, redacted, bounded, on the spans and kept by the store.

`workbench.tracebacks.traceback_text` is the one place a traceback is made; a tool's, a hook's,
a guard's and a failed run's reach the `exception` event of their span with the semantic
conventions' names (``exception.type``, ``exception.message``, ``exception.stacktrace``).
"""

from __future__ import annotations

import asyncio
import doctest
import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import workbench as wb
from tests._failing_team import team
from workbench.notebook.html import traceback_html
from workbench.telemetry import names as n
from workbench.tracebacks import MAX_FRAMES, MAX_TRACEBACK_CHARS, library_runs, traceback_text

R = wb.ModelResponse


def _raised(function: object, *args: object) -> BaseException:
    try:
        function(*args)  # type: ignore[operator]
    except Exception as exc:
        return exc
    raise AssertionError("it did not raise")


def _parse(text: str) -> int:
    return int(text)


def _load(path: str) -> int:
    try:
        return _parse(path)
    except ValueError as exc:
        raise RuntimeError(f"cannot load {path}") from exc


def test_chained_exceptions_read_as_python_prints_them() -> None:
    text = traceback_text(_raised(_load, "x.json"))
    assert text.index("in _parse") < text.index("direct cause") < text.rindex("in _load")
    assert text.rstrip().endswith("RuntimeError: cannot load x.json")


def test_frames_of_the_code_that_called_the_users_are_left_out_and_counted() -> None:
    async def main() -> BaseException:
        def user_code() -> None:
            raise KeyError("k")

        try:
            await asyncio.to_thread(user_code)
        except KeyError as exc:
            return exc
        raise AssertionError

    exc = asyncio.run(main())
    lines = traceback_text(exc).splitlines()
    # the test's own frame calls asyncio, which calls the thread: the asyncio frames after the
    # test's are not at the start, so only frames *before the first user frame* are dropped
    assert lines[0] == "Traceback (most recent call last):"
    assert "in main" in lines[1]


def test_a_traceback_with_no_user_frame_keeps_every_frame() -> None:
    text = traceback_text(_raised(wb.AgentState.from_json, "{"))
    assert "left out" not in text.splitlines()[0] and "workbench/state.py" in text


def _huge() -> None:
    raise ValueError("x" * 100_000)


def test_a_huge_traceback_is_cut_in_the_middle_with_a_note() -> None:
    text = traceback_text(_raised(_huge))
    assert len(text) < MAX_TRACEBACK_CHARS + 100
    assert "characters of the traceback left out" in text
    assert "in _huge" in text and text.rstrip().endswith("x" * 100)


def _deep(n: int) -> None:
    if n == 0:
        raise ValueError("bottom")
    if n % 2:  # two lines, so Python does not fold the frames as "[Previous line repeated]"
        _deep(n - 1)
    else:
        _deep(n - 1)


def test_many_frames_keep_the_first_and_the_last() -> None:
    text = traceback_text(_raised(_deep, 100))
    assert "frames left out ..." in text
    assert text.count("in _deep") == MAX_FRAMES - 1  # the test's own frame is among the kept
    assert text.rstrip().endswith("ValueError: bottom")


def test_lone_surrogates_and_secrets_are_made_safe() -> None:
    name = "caf\udce9.txt"
    text = traceback_text(_raised(open, f"/nonexistent/{name} sk-abcdefghijklmnopqrstu"))
    assert "\udce9" not in text and "sk-abcdefghijklmnopqrstu" not in text
    text.encode()  # valid UTF-8


def _exception_event(span: object) -> dict[str, object]:
    (event,) = [e for e in span.events if e.name == n.EVENT_EXCEPTION]  # type: ignore[attr-defined]
    return dict(event.attributes)


CELL = """def apply_discount(price, discount):
    return price * (1 - discount / 100)
"""


def test_a_frame_in_a_notebook_cell_is_named_as_ipython_names_it(monkeypatch) -> None:
    """In a kernel the cell's file is a made-up temporary path: the traceback says which cell."""
    import IPython
    from IPython.core.compilerop import CachingCompiler

    cells = CachingCompiler()  # IPython's own: the kernel compiles every cell through it
    filename = cells.cache(CELL, number=4)  # the cell run as In[4]
    namespace: dict[str, Any] = {}
    exec(compile(CELL, filename, "exec"), namespace)
    exc = _raised(namespace["apply_discount"], 120.0, "25%")

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # a script: the file as it is
    plain = traceback_text(exc)
    assert f'File "{filename}", line 2, in apply_discount' in plain
    monkeypatch.setattr(IPython, "get_ipython", lambda: SimpleNamespace(compile=cells))
    text = traceback_text(exc)
    assert 'File "Cell In[4]", line 2, in apply_discount' in text
    # everything else as Python printed it: the line, the carets under it, the exception
    assert text == plain.replace(filename, "Cell In[4]")
    assert "    return price * (1 - discount / 100)\n" in text and "^" in text


def test_a_failed_tool_span_has_an_exception_event_with_its_stack_trace() -> None:
    telemetry = wb.Telemetry()
    team(telemetry=telemetry).run_sync("price the hat")
    (tool,) = [s for s in telemetry.spans if s.name == "execute_tool apply_discount"]
    assert tool.status.status_code.name == "ERROR"
    assert tool.attributes[n.ERROR_TYPE] == "TypeError"
    event = _exception_event(tool)
    assert event[n.EXCEPTION_TYPE] == "TypeError"
    assert str(event[n.EXCEPTION_MESSAGE]).startswith("unsupported operand")
    stack = str(event[n.EXCEPTION_STACKTRACE])
    assert "_failing_team.py" in stack and "in apply_discount" in stack
    # the other spans of the tree are not failed
    failed = [s.name for s in telemetry.spans if s.status.status_code.name == "ERROR"]
    assert failed == ["execute_tool apply_discount"]


def test_a_failed_sub_run_carries_its_traceback_to_the_call_that_started_it() -> None:
    def broken(messages: list[wb.Message], info: object) -> wb.ModelResponse:
        raise ConnectionError("gone")

    telemetry = wb.Telemetry()
    worker = wb.Agent(model=wb.FunctionModel(broken), name="worker", store=False)
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("work", {"task": "t"}), "ok"]),
        name="lead",
        tools=[worker.as_tool("work", "Work.")],
        telemetry=telemetry,
        store=False,
    )
    lead.run_sync("x")
    (call,) = [s for s in telemetry.spans if s.name == "execute_tool work"]
    event = _exception_event(call)
    assert event[n.EXCEPTION_TYPE] == "ConnectionError"
    assert "in broken" in str(event[n.EXCEPTION_STACKTRACE])
    (worker_run,) = [s for s in telemetry.spans if s.name == "invoke_agent worker"]
    assert "in broken" in str(_exception_event(worker_run)[n.EXCEPTION_STACKTRACE])


def test_a_hook_that_raised_has_its_stack_trace_on_its_span() -> None:
    def audit(data: wb.HookInput) -> None:
        raise ValueError("full")

    telemetry = wb.Telemetry()
    agent = wb.Agent(
        model=wb.ScriptedModel(["hi"]),
        hooks=[wb.Hook("Stop", audit)],
        telemetry=telemetry,
        store=False,
    )
    agent.run_sync("x")
    (hook,) = [s for s in telemetry.spans if s.name == "workbench.hook Stop"]
    event = _exception_event(hook)
    assert event[n.EXCEPTION_TYPE] == "ValueError" and "in audit" in str(
        event[n.EXCEPTION_STACKTRACE]
    )


def test_the_stack_trace_reaches_the_exported_files(tmp_path: Path) -> None:
    telemetry = wb.Telemetry()
    team(telemetry=telemetry).run_sync("price the hat")
    path = telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    text = Path(path).read_text()
    assert n.EXCEPTION_STACKTRACE in text and "in apply_discount" in text


def test_a_store_written_before_tracebacks_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        result = team(store=store).run_sync("price the hat")
    # make every state and snapshot what a workbench without tracebacks wrote: version 2
    with sqlite3.connect(path) as conn:
        for table, column in (("runs", "state"), ("snapshots", "body")):
            rows = conn.execute(f"SELECT rowid, {column} FROM {table}").fetchall()
            for rowid, body in rows:
                raw = json.loads(body)
                state = raw if table == "runs" else raw["state"]
                state["schema_version"] = 2
                conn.execute(
                    f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (json.dumps(raw), rowid)
                )
    with wb.RunStore(path) as store:
        loaded = store.load(result.run_id)
    assert loaded.state.schema_version == wb.AgentState().schema_version
    assert loaded.errors == result.errors


def test_docstring_examples_run() -> None:
    from workbench import step_records, tracebacks, waits

    for module in (tracebacks, step_records, waits):  # records' examples (call_label) live there
        failed, tried = doctest.testmod(module)
        assert tried > 0 and failed == 0, module.__name__


RECORDED_ELSEWHERE = """Traceback (most recent call last):
  File "/home/u/app/agent.py", line 9, in main
    asyncio.run(agent.run(prompt))
  File "/usr/lib/python3.12/asyncio/runners.py", line 194, in run
    return runner.run(main)
  File "/u/.venv/lib/python3.12/site-packages/pydantic_ai/agent/__init__.py", line 307, in run
    result = await handler()
             ^^^^^^^^^^^^^^^
  File "/home/u/.venv/lib/python3.12/site-packages/pydantic_graph/step.py", line 253, in _call_node
    return await node.run(ctx)
  File "C:\\Python312\\Lib\\site-packages\\pydantic_ai\\_utils.py", line 200, in guard
    value = func(*args, **kwargs)
  File "/home/u/app/tools.py", line 4, in get_weather
    raise ValueError(city)
ValueError: Atlantis"""


def test_a_frameworks_frames_in_a_row_are_set_apart_and_nothing_is_left_out() -> None:
    pieces = library_runs(RECORDED_ELSEWHERE)
    assert [(p.frames, p.packages) for p in pieces] == [
        (0, ()),
        (4, ("asyncio", "pydantic_ai", "pydantic_graph")),
        (0, ()),
    ]
    assert "\n".join(line for p in pieces for line in p.lines) == RECORDED_ELSEWHERE
    assert pieces[2].lines[0] == '  File "/home/u/app/tools.py", line 4, in get_weather'
    shown = traceback_html(RECORDED_ELSEWHERE, open_=True)
    assert '<details class="wb-frames">' in shown and "4 frames in asyncio, pydantic_ai" in shown
    assert "<b>  File &quot;/home/u/app/tools.py&quot;, line 4, in get_weather</b>" in shown


def test_one_or_two_library_frames_stay_as_they_are() -> None:
    lines = RECORDED_ELSEWHERE.split("\n")
    two = "\n".join(lines[:8] + lines[-3:])  # the asyncio frame and pydantic-ai's first
    assert [(p.frames, p.packages) for p in library_runs(two)] == [(0, ())]
    assert "wb-frames" not in traceback_html(two)
