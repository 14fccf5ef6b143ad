"""The ``runs``, ``show`` and ``replay`` verbs, and ``demo`` recording to the default store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main
from workbench.demo import demo_agent, run_demo


@pytest.fixture
def demo_run(tmp_path: Path) -> tuple[Path, wb.RunResult]:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        return path, run_demo(demo_agent(store=store))[-1]


def test_runs_lists_stored_runs(
    demo_run: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run = demo_run
    assert main(["runs", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert run.run_id in out and "calculator" in out and "scripted-calculator" in out
    assert out.rstrip().endswith(f"1 of 1 runs in {path}")


def test_runs_shows_depth_and_parent_and_can_leave_sub_runs_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        helper = wb.Agent(model=wb.ScriptedModel(["sure"]), name="helper", store=store)
        lead = wb.Agent(
            model=wb.ScriptedModel([wb.ModelResponse.tool_call("ask", {"task": "x"}), "done"]),
            name="lead",
            tools=[helper.as_tool("ask")],
            store=store,
        )
        result = lead.run_sync("go")
    assert main(["runs", "--store", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-2:] == ["depth", "parent"]
    root, sub = lines[2], lines[3]
    assert root.startswith(result.run_id) and root.split()[-2:] == ["0", "-"]
    assert sub.startswith(result.children[0].run_id) and "  └ helper  completed" in sub
    assert sub.split()[-2:] == ["1", result.run_id]
    assert lines[-1] == f"2 of 2 runs in {path}"
    steps = lines[0].index("steps")  # the columns are aligned left under their heading
    assert [root[steps:].split()[0], sub[steps:].split()[0]] == ["2", "1"]  # each run's own
    assert main(["runs", "--store", str(path), "--roots"]) == 0
    out = capsys.readouterr().out
    assert result.children[0].run_id not in out and out.rstrip().endswith(
        f"1 of 1 top-level runs in {path}"
    )
    heading, _, tree, *_ = out.splitlines()
    assert tree[heading.index("steps") :].split()[0] == "3"  # the tree's, as its errors are


def test_a_damaged_depth_lists_the_run_as_a_root(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        run = wb.Agent(model=wb.ScriptedModel(["hi"]), store=store).run_sync("x")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET state = json_set(state, '$.depth', 'deep')")
    (summary,) = wb.RunStore(path).runs()
    assert summary.run_id == run.run_id and summary.depth == 0


def test_runs_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.sqlite").touch()  # a store nothing was recorded in yet: an empty SQLite file
    assert main(["runs", "--store", str(tmp_path / "x.sqlite")]) == 0
    assert capsys.readouterr().out.startswith("no runs in")


@pytest.mark.parametrize(
    "verb",
    [
        ["runs"],
        ["show", "last"],
        ["report", "last"],
        ["export", "last"],
        ["replay", "last", "--from-step", "1"],
    ],
)
def test_a_store_path_where_no_file_is_says_so(
    verb: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped --store listed 'no runs in PATH', exit 0, as if the runs there were gone."""
    typo = tmp_path / "rnus.sqlite"
    assert main([*verb, "--store", str(typo)]) == 2
    said = capsys.readouterr()
    assert said.err == f"workbench: no run store at {typo}: no such file\n" and said.out == ""
    assert not typo.exists()  # nothing made either


def test_show_prints_steps_and_conversation(
    demo_run: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run = demo_run
    assert main(["show", run.run_id[:12], "--messages", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run {run.run_id} (calculator): completed\nstop reason completed;")
    assert "multiply, save_result (waits)" in out and "\n3 (resumed)  " in out
    assert "   6 assistant step 3: call multiply(" in out
    assert out.rstrip().endswith(f"output: {run.output}")


def test_replay_from_a_step_is_exact_and_stored(
    demo_run: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run = demo_run
    assert main(["replay", run.run_id, "--from-step", "2", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"replayed {run.run_id} from step 2 (recorded tools)" in out
    assert "same as the original at every step" in out
    with wb.RunStore(path) as store:
        (original, replayed) = store.runs()
    assert original.run_id == run.run_id
    assert replayed.rerun_of == run.run_id and replayed.rerun_of_step == 2
    assert replayed.output == run.output and replayed.status == "completed"


def test_replay_with_the_real_agent_tools(
    demo_run: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run = demo_run
    argv = ["replay", run.run_id, "--from-step", "1", "--agent", "workbench.demo:demo_agent"]
    status = main([*argv, "--store", str(path)])
    out = capsys.readouterr().out
    assert "(tools of workbench.demo:demo_agent)" in out
    # the real save_result needs approval again, so the replay pauses where the original did
    assert status == 1 and "paused" in out


def test_errors_are_one_clear_line(
    demo_run: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run = demo_run
    assert main(["replay", run.run_id, "--from-step", "9", "--store", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"workbench: run {run.run_id} has no snapshot for step 9 (it has: 1, 2, 3, 4)\n"
    )
    assert main(["show", "run_nope", "--store", str(path)]) == 2
    assert capsys.readouterr() == ("", f"workbench: no run 'run_nope' in {path}\n")


def test_demo_records_its_run_in_the_default_store(tmp_path: Path) -> None:
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "default.sqlite")}

    def cli(verb: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "workbench.cli", verb],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout

    demo = cli("demo")
    assert f"the run, in the store {tmp_path / 'default.sqlite'}: workbench show run_" in demo
    listed = cli("runs")
    assert "calculator  completed" in listed and "1 of 1 runs" in listed


def test_runs_takes_the_run_list_filters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_runs_list import Runs

    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        runs = Runs(store)

    def listed(*options: str) -> list[str]:
        assert main(["runs", "--store", str(path), *options]) == 0
        lines = capsys.readouterr().out.splitlines()
        return [line.split()[0] for line in lines[2:-2]]

    assert listed("--status", "failed") == [runs.failed.run_id]
    assert listed("--errors", "--agent", "solver") == [runs.tool_error.run_id]
    assert listed("--errors", "--limit", "2") == [runs.failed.run_id, runs.helper.run_id]
    assert main(["runs", "--store", str(path), "--errors", "--limit", "2"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]  # and how to see the rest
    assert last == f"2 of 3 matching runs in {path} (the newest; --limit 0 lists all 3)"
    assert listed("--tool", "ask", "--tool", "nothing") == [runs.lead.run_id]
    assert listed("--grep", "Zebra") == [runs.ok.run_id]
    assert listed("--meta", "task=1") == [runs.ok.run_id]
    assert listed("--meta", 'task="1"') == [runs.tool_error.run_id]
    assert listed("--since", "2h", "--status", "completed", "--roots") == [
        runs.ok.run_id,
        runs.tool_error.run_id,
        runs.lead.run_id,
    ]
    assert main(["runs", "--store", str(path), "--errors", "--roots"]) == 0
    out = capsys.readouterr().out
    assert "lead (+1 sub-run)" in out and out.rstrip().endswith(
        f"3 of 3 matching top-level runs in {path}"
    )
    assert main(["runs", "--store", str(path), "--until", "2h"]) == 0
    assert capsys.readouterr().out == f"no matching runs in {path}\n"


def test_runs_filters_that_cannot_be_read_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.sqlite")
    assert main(["runs", "--store", path, "--since", "last tuesday"]) == 2
    out = capsys.readouterr().err
    assert out.startswith("workbench: since: Value error, 'last tuesday' is not a time")
    assert out.count("\n") == 1
    assert main(["runs", "--store", path, "--status", "broke"]) == 2
    assert "unknown status 'broke': one of pending" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["runs", "--store", path, "--meta", "novalue"])
    assert "'novalue' is not KEY=VALUE" in capsys.readouterr().err
