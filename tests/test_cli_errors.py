"""The command line says what went wrong first: ``runs``, ``show``, ``report``; and the small
things a newcomer trips on (``last`` is the run they started, ``--full``, ``--version``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import workbench as wb
from tests._failing_team import team
from workbench.cli import main
from workbench.cli._common import problems_as_lines

R = wb.ModelResponse


@pytest.fixture
def failing_store(tmp_path: Path) -> tuple[Path, wb.RunResult]:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        return path, team(store=store).run_sync("price the hat")


def test_runs_has_an_errors_column_with_the_first_error(
    failing_store: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, result = failing_store
    assert main(["runs", "--store", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["run", "agent", "status", "errors"]
    digger = result.children[0].children[0]
    (row,) = [line for line in lines if line.startswith(digger.run_id)]
    assert "completed  1: step 3, apply_discount in digger: TypeError: unsupported" in row
    (lead,) = [line for line in lines if line.startswith(result.run_id)]
    assert lead.split()[2:4] == ["completed", "-"]
    assert main(["runs", "--store", str(path), "--roots"]) == 0  # the tree's errors on its root
    (root,) = [line for line in capsys.readouterr().out.splitlines() if result.run_id in line]
    assert "1: step 3, apply_discount in digger" in root


def test_show_last_is_the_run_started_and_says_what_went_wrong_first(
    failing_store: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    path, result = failing_store
    assert main(["show", "last", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == (
        f"run {result.run_id} (lead): completed, 1 tool error: step 3, apply_discount in digger"
    )
    start = lines.index("what went wrong:")
    assert lines[start + 1].startswith(
        "  1. [tool] step 3, apply_discount in digger: TypeError: unsupported operand"
    )
    assert lines[start + 2].strip().startswith("Traceback (most recent call last;")
    assert "_failing_team.py" in lines[start + 3] and "in apply_discount" in lines[start + 3]


def test_replay_says_what_went_wrong_first_as_show_does(
    failing_store: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    """The step table's "(error, replayed)" points up at what went wrong: it has to be there."""
    path, result = failing_store
    digger = result.children[0].children[0]
    assert main(["replay", digger.run_id, "--from-step", "1", "--store", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith(
        ": completed, 1 tool error: step 3, apply_discount in digger; stop reason completed"
    )
    start = lines.index("what went wrong:")
    table = next(i for i, line in enumerate(lines) if line.startswith("step  "))
    assert start < table
    assert lines[start + 1].startswith(
        "  1. [tool] step 3, apply_discount in digger: TypeError: unsupported operand"
    )
    assert "_failing_team.py" in lines[start + 3] and "in apply_discount" in lines[start + 3]
    assert "apply_discount (error, replayed)" in lines[table + 4]


def test_report_without_o_writes_next_to_you_and_says_where(
    failing_store: tuple[Path, wb.RunResult],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, result = failing_store
    monkeypatch.chdir(tmp_path)
    assert main(["report", "last", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    written = tmp_path / f"report-{result.run_id}.html"
    assert written.exists() and f"wrote {written}" in out
    kilobytes = round(written.stat().st_size / 1e3)  # not "0.1 MB": a run's report is small
    assert f"({kilobytes} kB, opens offline)" in out
    assert out.startswith(f"run {result.run_id} (lead): completed, 1 tool error")
    assert written.as_uri() in out


def test_show_full_prints_each_message_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "word " * 60 + "THE END"
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        wb.Agent(model=wb.ScriptedModel([long]), store=store).run_sync("a\nquestion on two lines")
    assert main(["show", "last", "--messages", "--store", str(path)]) == 0
    messages = capsys.readouterr().out.split("output:")[0]
    assert "THE END" not in messages  # one line per message, cut
    assert main(["show", "last", "--messages", "--full", "--store", str(path)]) == 0
    messages = capsys.readouterr().out.split("output:")[0]
    assert "THE END" in messages and "        a\n        question on two lines\n" in messages


def test_a_traceback_cannot_drive_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @wb.tool
    def hostile() -> str:
        """Fail with escape sequences in the message."""
        raise ValueError("\x1b]0;pwned\x07 \x1b[2J gone")

    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        model = wb.ScriptedModel([R.tool_call("hostile", {}), "ok"])
        wb.Agent(model=model, tools=[hostile], store=store).run_sync("x")
    assert main(["show", "last", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert r"ValueError: \x1b]0;pwned\x07 \x1b[2J gone" in out  # shown, as text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == "workbench 0.1.0"


def test_trace_of_a_team_says_which_span_failed_and_has_an_agent_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    telemetry = wb.Telemetry()
    team(telemetry=telemetry).run_sync("price the hat")
    path = telemetry.write_otlp_json(tmp_path / "team.otlp.json")
    assert main(["trace", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "completed, 1 tool error: step 3, apply_discount in digger"
    start = lines.index("what went wrong:")
    assert "in apply_discount" in "\n".join(lines[start : start + 5])
    (header,) = [line for line in lines if line.startswith("agent ")]
    assert header.split()[:3] == ["agent", "step", "prepare"]
    (failed,) = [line for line in lines if "apply_discount (error)" in line]
    assert failed.split()[:2] == ["digger", "3"]


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@wb.tool
def remove(path: str) -> str:
    """Remove a file."""
    return "removed"


def refuse_remove(call: wb.ToolCall, ctx: object) -> wb.GuardDecision:
    """A guard: never remove anything."""
    return (wb.ToolPermission.DENY, "never") if call.name == "remove" else wb.ToolPermission.ALLOW


def test_trace_says_which_failed_spans_are_no_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A retry and a denial are drawn failed, yet no list of errors has them: the count says so.

    (The demo's trace read "spans: 24, 1 marked failed" and nothing else said what failed: its
    retry, which its step table calls "not an error".)
    """
    telemetry = wb.Telemetry()
    script = [R.tool_call("add", {"a": 1, "b": "two"}), R.tool_call("remove", {"path": "/"})]
    agent = wb.Agent(
        model=wb.ScriptedModel([*script, "done"]),
        tools=[add, remove],
        guards=[refuse_remove],
        telemetry=telemetry,
        store=False,
    )
    assert agent.run_sync("go").errors == ()
    path = telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    assert main(["trace", str(path)]) == 0
    (spans,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("spans:")]
    assert spans.endswith(", 2 marked failed (1 retry, 1 denial: not errors)")


def test_a_call_denied_by_a_guard_that_raised_is_no_denial_in_the_span_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its guard broke: the call is denied, and that is the run's error, not "not an error"."""

    def broken(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.ToolPermission:
        raise RuntimeError("policy store down")

    telemetry = wb.Telemetry()
    model = wb.ScriptedModel([R.tool_call("add", {"a": 1, "b": 2}), "done"])
    agent = wb.Agent(model=model, tools=[add], guards=[broken], telemetry=telemetry, store=False)
    assert [e.kind for e in agent.run_sync("go").errors] == ["guard"]
    path = telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    assert main(["trace", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (spans,) = [line for line in lines if line.startswith("spans:")]
    assert spans.endswith(", 1 marked failed"), spans  # was "(1 denial: not an error)"
    assert any("RuntimeError: policy store down" in line for line in lines)


def test_a_file_that_cannot_be_written_is_one_line_not_a_traceback(
    failing_store: tuple[Path, wb.RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, result = failing_store
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for verb in ("report", "export"):
        argv = [verb, result.run_id, "-o", str(a_file / "out"), "--store", str(path)]
        assert main(argv) == 2, verb
        said = capsys.readouterr().err
        assert said == f"workbench: File exists: {a_file}\n", said


def test_a_run_listed_without_its_damaged_metadata_says_so_in_one_line(
    failing_store: tuple[Path, wb.RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    path, result = failing_store
    with sqlite3.connect(path) as conn:
        damage = "UPDATE summaries SET metadata = '{not json' WHERE run_id = ?"
        conn.execute(damage, (result.run_id,))
    assert main(["runs", "--store", str(path)]) == 0
    said = capsys.readouterr()
    assert result.run_id in said.out
    assert said.err == (
        f"warning: run {result.run_id}'s stored metadata is damaged: it is listed without it\n"
    )


def test_a_problem_logged_with_its_exception_is_one_line_that_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with problems_as_lines():
        try:
            {}["x"]
        except KeyError:
            logging.getLogger("uvicorn.error").exception("Exception in ASGI application\n")
    assert capsys.readouterr().err == "error: Exception in ASGI application: KeyError: 'x'\n"


@pytest.mark.parametrize("verb", [["runs"], ["show", "last"]])
def test_a_problem_quoting_what_was_given_keeps_its_password_out(
    verb: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A backend's URL, password and all, given as --store: the error quoted it whole."""
    given = "phoenix+http://me:hunter2pass@127.0.0.1:6006/project"
    assert main([*verb, "--store", given]) == 2
    said = capsys.readouterr().err
    assert said == (
        "workbench: no run store at phoenix+http://me:[REDACTED]@127.0.0.1:6006/project: "
        "no such file\n"
    )
