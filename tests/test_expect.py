"""``wb.expect``: regression checks on real offline runs, their failures and what those say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import workbench as wb
from workbench.demo import add, multiply, save_result


def used(tokens: int, cost: float | None = 0.001) -> wb.Usage:
    return wb.Usage(input_tokens=tokens - 10, output_tokens=10, requests=1, cost=cost)


def calculator(
    responses: Sequence[wb.ModelResponse],
    *,
    stop: wb.StopCondition | None = None,
    **options: object,
) -> wb.RunResult:
    agent = wb.Agent(
        model=wb.ScriptedModel(responses),
        name="calculator",
        tools=[add, multiply, save_result],
        stop=stop or wb.MaxSteps(10),
        store=None,
        **options,  # type: ignore[arg-type]
    )
    return agent.run_sync("What is (1 + 2) * 3?")


def script(*, step2_tokens: int = 200, answer: str = "(1 + 2) * 3 = 9") -> list[wb.ModelResponse]:
    return [
        wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}, usage=used(100)),
        wb.ModelResponse.tool_call("multiply", {"a": 3, "b": 3}, usage=used(step2_tokens)),
        wb.ModelResponse.text(answer, usage=used(300)),
    ]


@pytest.fixture
def run() -> wb.RunResult:
    return calculator(script())


def failure(check: object) -> wb.ExpectationFailed:
    """The `ExpectationFailed` a deferred check raises (``lambda: wb.expect(...)...``)."""
    assert callable(check)
    with pytest.raises(wb.ExpectationFailed) as caught:
        check()
    assert isinstance(caught.value, AssertionError) and isinstance(caught.value, wb.WorkbenchError)
    return caught.value


# -- checks that hold ---------------------------------------------------------------------------


def test_every_check_passes_on_a_run_that_does_what_it_should(run: wb.RunResult) -> None:
    checked = (
        wb.expect(run)
        .status("completed")
        .stop_reason(wb.StopReason.COMPLETED)
        .tools_called(["add", "multiply"])
        .tools_called({"multiply", "add"})
        .tools_called(["multiply", "add"], ordered=False)
        .steps(3)
        .steps(at_least=2, at_most=3)
        .tokens(at_most=600)
        .cost(at_most=0.003 + 1e-9)
        .no_hook_errors()
        .answer(r"= 9$")
        .answer(re.compile(r"\(1 \+ 2\)"))
        .answer(lambda text: text.endswith("9"))
    )
    assert isinstance(checked, wb.Expectation)
    assert repr(checked) == f"Expectation(run={run.run_id!r})"


def test_a_run_matches_a_baseline_of_the_same_script(run: wb.RunResult) -> None:
    again = calculator(script())
    checked = (
        wb.expect(again, baseline=run)
        .tools_called()
        .tools_called(ordered=False)
        .stop_reason()
        .status()
        .steps()
        .tokens(within=0)
        .cost(within=0.0)
        .answer()
    )
    assert repr(checked).endswith(f", baseline={run.run_id!r})")


def test_a_stored_paused_and_resumed_run_counts_each_call_once(tmp_path: Path) -> None:
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        agent = wb.Agent(
            model=wb.ScriptedModel(
                [
                    wb.ModelResponse.tool_call("save_result", {"name": "x", "value": 9}),
                    wb.ModelResponse.text("saved"),
                ]
            ),
            tools=[save_result],
            store=store,
        )
        paused = agent.run_sync("save 9")
        wb.expect(paused).status("paused")
        done = agent.resume_sync(paused.state, approvals={paused.pending[0].call_id: True})
        stored = store.load(done.run_id)
    # the step that paused is recorded twice (pending, then done); its call counts once
    assert [o.status for r in stored.steps for o in r.tool_outcomes] == ["pending", "ok"]
    wb.expect(stored).tools_called(["save_result"]).steps(2).answer("^saved$").stop_reason(
        "completed"
    )
    error = failure(lambda: wb.expect(paused).answer("saved"))
    assert (
        str(error)
        == f"answer at step 1: the run has no answer (it is paused) (run {paused.run_id})"
    )


# -- failures, and what they say ----------------------------------------------------------------


def test_tools_in_the_wrong_order_name_the_step_and_both_calls(run: wb.RunResult) -> None:
    error = failure(lambda: wb.expect(run).tools_called(["add", "add"]))
    assert (error.check, error.step) == ("tools_called", 2)
    assert str(error) == (
        "tools_called at step 2: call 2 is 'multiply' where expected 'add'\n"
        "  called: 'add' (step 1), 'multiply' (step 2)\n"
        f"  expected: 'add', 'add' (run {run.run_id})"
    )


def test_a_missing_call_is_named_at_the_last_step(run: wb.RunResult) -> None:
    error = failure(lambda: wb.expect(run).tools_called(["add", "multiply", "save_result"]))
    assert error.step == 3
    assert "call 3 is no call where expected 'save_result'" in str(error)
    extra = failure(lambda: wb.expect(run).tools_called(["add"]))
    assert extra.step == 2 and "call 2 is 'multiply' where expected no call" in str(extra)


def test_tools_as_a_set_say_what_is_missing_and_what_is_extra(run: wb.RunResult) -> None:
    error = failure(lambda: wb.expect(run).tools_called({"add", "save_result"}))
    assert error.step == 2
    assert str(error).startswith(
        "tools_called at step 2: called 'multiply', which is not in what expected; "
        "never called 'save_result'\n"
    )
    missing = failure(lambda: wb.expect(run).tools_called({"add", "multiply", "save_result"}))
    assert missing.step == 3 and "never called 'save_result'" in str(missing)


def test_tools_against_a_baseline_that_called_others(run: wb.RunResult) -> None:
    baseline = calculator(
        [
            wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}),
            wb.ModelResponse.tool_call("add", {"a": 3, "b": 3}),
            wb.ModelResponse.text("6"),
        ]
    )
    error = failure(lambda: wb.expect(run, baseline=baseline).tools_called())
    assert error.step == 2
    assert "call 2 is 'multiply' where the baseline called 'add'" in str(error)
    assert "  the baseline called: 'add', 'add'" in str(error)
    wb.expect(run, baseline=baseline).tools_called({"add", "multiply"})


def rerun_from_step_2(original: wb.RunResult, responses: list[wb.ModelResponse]) -> wb.RunResult:
    """A re-run of ``original`` from its step 2 snapshot, answered by ``responses``."""
    agent = wb.Agent(model=wb.ScriptedModel([]), tools=[add, multiply], store=None)
    fork = agent.rerun_sync(original.snapshots[1], model=wb.ScriptedModel(responses))
    assert fork.state.rerun_of is not None and fork.state.rerun_of.step == 2
    return fork


def test_a_rerun_is_checked_from_its_fork_point_against_the_baseline(run: wb.RunResult) -> None:
    same = rerun_from_step_2(run, script()[1:])
    wb.expect(same, baseline=run).tools_called().tools_called(ordered=False)
    wb.expect(same).tools_called(["multiply"])  # its own calls: step 1's add was the original's
    wb.expect(run, baseline=same).tools_called()  # a re-run baseline: compared from its fork too

    other = rerun_from_step_2(
        run, [wb.ModelResponse.tool_call("add", {"a": 3, "b": 3}), wb.ModelResponse.text("6")]
    )
    error = failure(lambda: wb.expect(other, baseline=run).tools_called())
    assert error.step == 2
    assert str(error) == (
        "tools_called at step 2: call 1 is 'add' where the baseline called 'multiply'\n"
        "  called: 'add' (step 2)\n"
        "  the baseline called: 'multiply'\n"
        f"  counted from step 2, where the re-run forked (run {other.run_id})"
    )
    unordered = failure(lambda: wb.expect(other, baseline=run).tools_called(ordered=False))
    assert "never called 'multiply'" in str(unordered)
    assert "counted from step 2, where the re-run forked" in str(unordered)


def test_stop_reason_status_and_steps_say_where_the_run_ended() -> None:
    limited = calculator(script(), stop=wb.MaxSteps(2))
    error = failure(lambda: wb.expect(limited).stop_reason("completed"))
    assert str(error) == (
        "stop_reason at step 2: the run stopped for step_limit, expected completed "
        f"(run {limited.run_id})"
    )
    failed = failure(lambda: wb.expect(limited).status(wb.ExecutionStatus.FAILED))
    assert "status at step 2: the run is completed, expected failed" in str(failed)
    steps = failure(lambda: wb.expect(limited).steps(at_least=3))
    assert (steps.step, str(steps).split(" (run")[0]) == (
        2,
        "steps at step 2: the run took 2 steps, expected at least 3",
    )
    assert "expected between 3 and 5" in str(
        failure(lambda: wb.expect(limited).steps(at_least=3, at_most=5))
    )
    assert "expected exactly 4" in str(failure(lambda: wb.expect(limited).steps(4)))
    full = calculator(script())
    assert "the run took 2 steps, expected exactly 3" in str(
        failure(lambda: wb.expect(limited, baseline=full).steps())
    )
    assert "expected completed" in str(
        failure(lambda: wb.expect(limited, baseline=full).stop_reason())
    )


def test_tokens_over_a_limit_name_the_step_that_crossed_it(run: wb.RunResult) -> None:
    error = failure(lambda: wb.expect(run).tokens(at_most=250))
    assert error.step == 2  # 100 after step 1, 300 after step 2
    assert str(error).startswith("tokens at step 2: 600 tokens used, expected at most 250 tokens")


def test_tokens_off_the_baseline_name_the_step_that_differs_most(run: wb.RunResult) -> None:
    heavier = calculator(script(step2_tokens=500))
    error = failure(lambda: wb.expect(heavier, baseline=run).tokens(within=0.1))
    assert error.step == 2
    assert str(error).startswith(
        "tokens at step 2: 900 tokens used, 50.0% more than the baseline's 600 tokens "
        "(tolerance 10%); the biggest difference is step 2: 500 tokens against 200 tokens"
    )
    wb.expect(heavier, baseline=run).tokens(within=0.5)
    lighter = failure(lambda: wb.expect(run, baseline=heavier).tokens(within=0.1))
    assert "33.3% less than the baseline's 900 tokens" in str(lighter)


def test_cost_over_a_limit_and_an_unknown_cost(run: wb.RunResult) -> None:
    error = failure(lambda: wb.expect(run).cost(at_most=0.0015))
    assert error.step == 2
    assert "cost at step 2: $0.003000 used, expected at most $0.001500" in str(error)
    responses = script()
    responses[1] = wb.ModelResponse.tool_call("multiply", {"a": 3, "b": 3}, usage=used(200, None))
    unpriced = calculator(responses)
    unknown = failure(lambda: wb.expect(unpriced).cost(at_most=1.0))
    assert (unknown.step, str(unknown).split(" (run")[0]) == (
        2,
        "cost at step 2: the run's cost is unknown (from step 2 on)",
    )


def test_hook_errors_are_listed_with_their_steps() -> None:
    def broken(event: wb.HookInput) -> wb.HookResult:
        raise RuntimeError("the hook broke")

    run = calculator(script(), hooks=[wb.Hook(wb.HookEvent.PRE_TOOL_USE, broken)])
    assert any(r.hook_errors for r in run.steps), "the loop records a raising hook as an error"
    error = failure(lambda: wb.expect(run).no_hook_errors())
    assert error.step == 1
    line = "\"PreToolUse hook 'broken': failed: RuntimeError: the hook broke\""
    assert str(error) == (
        f"no_hook_errors at step 1: 2 hook error(s):\n  step 1: {line}\n  step 2: {line} "
        f"(run {run.run_id})"
    )


def test_answers_that_do_not_match(run: wb.RunResult) -> None:
    regex = failure(lambda: wb.expect(run).answer(r"= 10$"))
    assert str(regex) == (
        "answer at step 3: the answer '(1 + 2) * 3 = 9' does not contain or match '= 10$' "
        f"(run {run.run_id})"
    )

    def is_short(text: str) -> bool:
        return len(text) < 5

    predicate = failure(lambda: wb.expect(run).answer(is_short))
    assert "the answer '(1 + 2) * 3 = 9' does not satisfy is_short" in str(predicate)
    other = calculator(script(answer="nine"))
    against = failure(lambda: wb.expect(other, baseline=run).answer())
    assert "the answer is 'nine', the baseline said '(1 + 2) * 3 = 9'" in str(against)


def test_hostile_and_long_answers_are_quoted_as_text() -> None:
    hostile = calculator(script(answer="\x1b]0;pwned\x07\x1b[2J" + "x" * 500))
    error = failure(lambda: wb.expect(hostile).answer("nothing like it"))
    assert "\x1b" not in str(error) and "\x07" not in str(error)
    assert r"'\x1b]0;pwned\x07\x1b[2J" in str(error) and "… (514 characters)" in str(error)


# -- misuse -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "says"),
    [
        (lambda e: e.tools_called(), "tools_called() needs an expected value or a baseline run"),
        (lambda e: e.stop_reason(), "stop_reason() needs an expected value or a baseline run"),
        (lambda e: e.status(), "status() needs an expected value or a baseline run"),
        (lambda e: e.steps(), "steps() needs an expected value or a baseline run"),
        (lambda e: e.answer(), "answer() needs an expected value or a baseline run"),
        (lambda e: e.tokens(), "tokens() needs at_most= or within= (with a baseline)"),
        (lambda e: e.cost(within=0.1), "cost() needs an expected value or a baseline run"),
    ],
)
def test_a_check_with_nothing_to_compare_is_a_usage_error(
    run: wb.RunResult, check: object, says: str
) -> None:
    assert callable(check)
    with pytest.raises(wb.UsageError, match=re.escape(says)):
        check(wb.expect(run))


def test_bad_tolerances_and_unknown_baseline_costs_are_usage_errors(run: wb.RunResult) -> None:
    with pytest.raises(wb.UsageError, match="a tolerance is >= 0"):
        wb.expect(run, baseline=run).tokens(within=-0.1)
    responses = script()
    responses[0] = wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}, usage=used(100, None))
    unpriced = calculator(responses)
    with pytest.raises(wb.UsageError, match="the baseline's cost is unknown"):
        wb.expect(run, baseline=unpriced).cost(within=0.1)


def test_an_unknown_stop_reason_or_status_lists_the_valid_ones(run: wb.RunResult) -> None:
    with pytest.raises(wb.UsageError) as caught:
        wb.expect(run).stop_reason("max_steps")
    assert str(caught.value) == (
        "expect(...).stop_reason() takes one of 'completed', 'task_complete', 'step_limit', "
        "'token_limit', 'time_limit', 'cost_limit', 'doom_loop', 'error_budget', 'hook_stop', "
        "'error', 'aborted' (or its StopReason), not 'max_steps'"
    )
    with pytest.raises(wb.UsageError, match=r"status\(\) takes .*'paused'.*, not 'done'"):
        wb.expect(run).status("done")
    wb.expect(run).stop_reason(wb.StopReason.COMPLETED).stop_reason("completed")
    wb.expect(run).status(wb.ExecutionStatus.COMPLETED).status("completed")


def test_a_failed_check_is_a_plain_pytest_failure(tmp_path: Path) -> None:
    test_file = tmp_path / "test_agent.py"
    test_file.write_text(
        "import workbench as wb\n"
        "def test_agent():\n"
        "    model = wb.ScriptedModel([wb.ModelResponse.text('hello')])\n"
        "    run = wb.Agent(model=model, store=None).run_sync('hi')\n"
        "    wb.expect(run).stop_reason('completed').answer('^goodbye')\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # the venv's plugins load slowly
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(test_file), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout
    assert (
        "ExpectationFailed: answer at step 1: the answer 'hello' does not contain or match "
        "'^goodbye'"
    ) in done.stdout


def test_an_answer_given_as_plain_text_is_found_even_with_regex_characters(
    run: wb.RunResult,
) -> None:
    # the calculator's own answer, word for word: its "+", "*" and "(" are text here
    wb.expect(run).answer("(1 + 2) * 3 = 9").answer("(1 + 2")
    wb.expect(run).answer(r"= 9$").answer(r"\d = \d")  # still a regular expression otherwise
    missing = failure(lambda: wb.expect(run).answer("(1 + 3"))  # neither text nor a pattern
    assert "the answer '(1 + 2) * 3 = 9' does not contain or match '(1 + 3'" in str(missing)


def test_a_tool_name_given_alone_is_a_usage_error_not_its_letters(run: wb.RunResult) -> None:
    with pytest.raises(wb.UsageError, match=r"tools_called\(\["):
        wb.expect(run).tools_called("add")
