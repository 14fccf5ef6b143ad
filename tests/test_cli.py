"""The ``workbench`` command as a user meets it: help text, bad arguments, hostile run content.

Hostile content goes through a real subprocess of the command, since what matters is the bytes a
terminal would receive.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main
from workbench.cli.app import VERBS
from workbench.demo import demo_agent, run_demo

# What a hostile answer would send a terminal: set the window title (OSC 0), clear the screen
# (CSI 2J), an OSC 8 hyperlink, a carriage return that hides what came before, a bell, a C1 CSI
# and a right-to-left override that shows text in another order.
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
LINK = "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\"
HOSTILE = f"{TITLE}{CLEAR}safe {LINK}\rhidden\x9b31m\u202eevil"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def cli(*argv: str, store: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBENCH_STORE": str(store) if store else "off"}
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


@pytest.fixture
def hostile_store(tmp_path: Path) -> tuple[Path, wb.RunResult]:
    """A stored run whose answer, tool result, tool name, model name and agent name hold escapes."""

    @wb.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        return f"page {HOSTILE}"

    model = wb.ScriptedModel(
        [
            wb.ModelResponse.tool_calls([("fetch", {"url": HOSTILE}), (f"x{TITLE}", {})]),
            wb.ModelResponse.text(f"the answer: {HOSTILE}\nsecond line"),
        ],
        name=f"model{CLEAR}",
    )
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        agent = wb.Agent(model=model, name=f"agent{TITLE}", tools=[fetch], store=store)
        result = agent.run_sync("go")
    assert result.output is not None and "\x1b" in result.output
    return path, result


@pytest.mark.parametrize(
    "argv",
    [
        ["runs"],
        ["show", "last"],
        ["show", "last", "--messages"],
        ["replay", "last", "--from-step", "1"],
        ["export", "last", "--content"],
    ],
)
def test_no_verb_prints_a_control_character_of_run_content(
    hostile_store: tuple[Path, wb.RunResult], tmp_path: Path, argv: list[str]
) -> None:
    path, _ = hostile_store
    if argv[0] == "export":
        argv = [*argv, "-o", str(tmp_path / "out.json")]
    done = cli(*argv, "--store", str(path), store=path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert CONTROL.search(done.stdout) is None, repr(done.stdout)
    # the content is shown, as text: the escapes are written out, not dropped
    if argv[0] == "show":
        assert r"\x1b]8;;https://evil.example/\x1b\click me" in done.stdout
    if argv[0] in ("show", "replay"):
        assert r"x\x1b]0;pwned\x07 (retry)" in done.stdout  # the unknown tool, in the step table


def test_show_writes_the_answer_out_as_text(hostile_store: tuple[Path, wb.RunResult]) -> None:
    path, run = hostile_store
    out = cli("show", run.run_id, "--store", str(path)).stdout
    assert out.startswith(rf"run {run.run_id} (agent\x1b]0;pwned\x07): completed")
    assert r"x\x1b]0;pwned\x07 (retry)" in out  # the unknown tool's name, in the step table
    answer = out[out.index("output: ") :]
    assert answer.startswith(r"output: the answer: \x1b]0;pwned\x07\x1b[2J\x1b[Hsafe ")
    assert r"\rhidden\x9b31m\u202eevil" in answer
    assert answer.rstrip().endswith("\nsecond line")  # a newline is not an escape: kept


def test_runs_table_keeps_its_columns_with_hostile_names(
    hostile_store: tuple[Path, wb.RunResult],
) -> None:
    path, run = hostile_store
    lines = cli("runs", "--store", str(path)).stdout.splitlines()
    header, rule, row = lines[:3]
    assert row.startswith(f"{run.run_id}  agent\\x1b]0;pwned\\x07  completed")
    assert r"model\x1b[2J\x1b[H" in row
    assert len(rule) >= len(row.rstrip()) - len("re-run of") and header.startswith("run ")


def test_top_level_and_verb_help_have_no_markup(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in [["--help"], *([verb, "--help"] for verb in VERBS)]:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: workbench"), argv
        assert "`" not in out and "``" not in out, (argv, out)
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert all(verb in top for verb in VERBS)


def test_the_console_script_and_the_module_run_the_same_command() -> None:
    script = Path(sys.executable).with_name("workbench")
    assert script.exists(), "the package is installed with its console script"
    by_script = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert by_script == cli("--help").stdout
    assert "usage: workbench [-h] [--version] VERB ..." in by_script


def test_bad_agent_specs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        run = run_demo(demo_agent(store=store))[-1]
    for spec, says in [
        ("workbench.demo", "--agent wants MODULE:NAME, got 'workbench.demo'"),
        (":demo_agent", "--agent wants MODULE:NAME, got ':demo_agent'"),
        ("no_such_module_here:x", "--agent no_such_module_here:x: No module named"),
        ("workbench.demo:nothing", "--agent workbench.demo:nothing: module 'workbench.demo' has"),
        (
            "workbench.demo:DEMO_PROMPT",
            "--agent workbench.demo:DEMO_PROMPT is not an Agent (got str)",
        ),
    ]:
        argv = ["replay", run.run_id, "--agent", spec, "--store", str(path)]
        assert main(argv) == 2, spec
        said = capsys.readouterr()
        assert said.err.startswith(f"workbench: {says}") and said.err.count("\n") == 1, said
        assert said.out == ""


def test_a_negative_limit_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["runs", "--limit", "-1"])
    assert exit_.value.code == 2
    assert "argument --limit: '-1' is not a whole number >= 0" in capsys.readouterr().err


def test_no_default_store_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WORKBENCH_STORE", "off")
    for verb in (["runs"], ["show", "last"], ["export", "last"], ["report", "last", "-o", "x"]):
        assert main(verb) == 2
        assert capsys.readouterr().err == (
            "workbench: no default store (WORKBENCH_STORE=off): pass --store PATH\n"
        )
