"""The pytest plugin: a cassette in one line of a user's test, run by a real pytest process."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

USER_TEST = """
import os

import pytest

import workbench as wb


def answer(messages, request):
    if os.environ.get("MODEL_DOWN"):
        raise AssertionError("the live model was called")
    return "hello " + messages[-1].text


def test_agent(model_cassette):
    agent = wb.Agent(model=model_cassette(wb.FunctionModel(answer)), store=False)
    result = agent.run_sync(os.environ.get("PROMPT", "there"))
    assert result.error is None, f"{result.error.type}: {result.error.message}"
    assert result.output == "hello there"


@pytest.mark.cassette(path="custom/agent.json", redact=[r"acct-\\\\d+"])
def test_marked(model_cassette):
    agent = wb.Agent(model=model_cassette(wb.FunctionModel(answer)), store=False)
    assert agent.run_sync("there").output == "hello there"
"""


@pytest.fixture(autouse=True)
def _no_other_plugins(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only this plugin in the inner pytest, not this venv's many (loading them takes a minute)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "workbench.pytest_plugin", *args)


def test_first_run_records_then_replays_without_the_model(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    run(pytester).assert_outcomes(passed=2)
    recorded = pytester.path / "cassettes" / "test_user" / "test_agent.json"
    assert json.loads(recorded.read_text())["format"] == "workbench-cassette"
    assert (pytester.path / "custom" / "agent.json").exists()

    monkeypatch.setenv("MODEL_DOWN", "1")
    run(pytester).assert_outcomes(passed=2)  # replayed: the model is never called

    monkeypatch.setenv("PROMPT", "you")  # the test changed: the cassette says how
    result = run(pytester, "-k", "test_agent")
    result.assert_outcomes(failed=1)
    # what diverged, and how (pytest prints the assertion's message before the failing value)
    result.stdout.fnmatch_lines(["*ReplayDivergence*"])
    result.stdout.fnmatch_lines(["*- recorded: text 'there'*", "*+ sent:     text 'you'*"])


def test_a_test_that_only_asserts_the_output_shows_the_divergence_beside_its_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's test (``assert agent.run_sync(...).output == ...``), its prompt changed: the
    run failed with the divergence, and the test said only ``assert None == 'hello there'``."""
    pytester.makepyfile(test_readme=README_TEST)
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT", "you")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Captured cassette call*",
            "ReplayDivergence: *request 1*",
            "*- recorded: text 'there'*",
            "*+ sent:     text 'you'*",
        ]
    )
    monkeypatch.delenv("PROMPT")
    quiet = run(pytester)  # a test that passes shows none
    quiet.assert_outcomes(passed=1)
    assert "Captured cassette" not in quiet.stdout.str()


README_TEST = """
import os

import workbench as wb


def test_calculator(model_cassette):
    model = model_cassette(wb.FunctionModel(lambda messages, request: "hello there"))
    agent = wb.Agent(model=model, store=False)
    assert agent.run_sync(os.environ.get("PROMPT", "there")).output == "hello there"
"""


def test_the_command_line_mode_wins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    result = run(pytester, "--cassette-mode=replay", "-k", "test_agent")
    result.assert_outcomes(errors=0, failed=1)
    result.stdout.fnmatch_lines(["*CassetteError*cannot be read*"])

    run(pytester, "-k", "test_agent").assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPT", "you")
    monkeypatch.setenv("MODEL_DOWN", "1")
    result = run(pytester, "--cassette-mode=record", "-k", "test_agent")
    result.stdout.fnmatch_lines(["*the live model was called*"])  # record really calls it


def test_a_marker_path_is_next_to_the_test_file_wherever_pytest_runs_from(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = pytester.mkdir("tests")
    (tests / "test_user.py").write_text(USER_TEST)
    run(pytester, "tests", "-k", "test_marked").assert_outcomes(passed=1)
    assert (tests / "custom" / "agent.json").exists()  # like the default: by the test file
    assert not (pytester.path / "custom").exists()

    monkeypatch.setenv("MODEL_DOWN", "1")
    monkeypatch.chdir(tests)  # run from elsewhere: the same cassette replays
    run(pytester, "-k", "test_marked").assert_outcomes(passed=1)


def test_two_tests_whose_names_make_the_same_file_name_are_told_not_mixed_up(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_ops="""
import pytest

import workbench as wb


@pytest.mark.parametrize("op", ["2+3", "2*3"])
def test_op(model_cassette, op):
    model = model_cassette(wb.FunctionModel(lambda messages, request: "said " + op))
    assert wb.Agent(model=model, store=False).run_sync(op).output == "said " + op
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*UsageError*test_op_2_3.json*test_op?2+3?*cassette(path=*"])
    assert len(list((pytester.path / "cassettes" / "test_ops").iterdir())) == 1


SILENT_TEST = """
import os

import pytest

import workbench as wb


def answer(messages, request):
    return "hello " + messages[-1].text


def test_silent(model_cassette):
    agent = wb.Agent(model=model_cassette(wb.FunctionModel(answer)), store=False)
    agent.run_sync(os.environ.get("PROMPT", "there"))


@pytest.mark.cassette(may_depart=True)
def test_about_departures(model_cassette):
    agent = wb.Agent(model=model_cassette(wb.FunctionModel(answer)), store=False)
    result = agent.run_sync(os.environ.get("PROMPT", "there"))
    assert (result.output is None) is bool(os.environ.get("PROMPT"))
"""


def test_a_test_that_asserts_nothing_fails_when_its_cassette_departed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run that sent a departed request failed; a test that never looked at it would pass on
    an agent that no longer does what was recorded. A test about departures says so."""
    pytester.makepyfile(test_silent=SILENT_TEST)
    run(pytester).assert_outcomes(passed=2)  # recorded
    run(pytester).assert_outcomes(passed=2)  # replayed, the same requests
    monkeypatch.setenv("PROMPT", "you")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*a request departed from the cassette, and the run that sent it failed*may_depart*",
            "ReplayDivergence: *request 1*",
            "*- recorded: text 'there'*",
            "*+ sent:     text 'you'*",
            "FAILED test_silent.py::test_silent*",
        ]
    )
