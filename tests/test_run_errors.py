"""`RunResult.errors`: what went wrong anywhere in a run tree, where, and its traceback.

Each kind of failure a person looks for first (a tool, a guard, a hook or a breakpoint predicate
that raised, a sub-run that failed or stopped at a limit, the run itself) is one `RunError` with
its agent, run, step and call, computed from the records, so a stored run has the same ones.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from tests._failing_team import BROKEN_LINE, apply_discount, team

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _agent(script: list[R | str], **options: object) -> wb.Agent:
    settings: dict[str, object] = {"tools": [add], "store": False, **options}
    return wb.Agent(model=wb.ScriptedModel(script), **settings)  # type: ignore[arg-type]


def test_a_tool_error_three_agents_deep_is_named_with_its_traceback() -> None:
    result = team().run_sync("price the hat")
    assert result.status is wb.ExecutionStatus.COMPLETED
    (error,) = result.errors
    digger = result.children[0].children[0]
    where = (error.kind, error.agent, error.run_id, error.depth, error.step, error.call_id)
    assert where == ("tool", "digger", digger.run_id, 2, 3, "d3")
    assert (error.name, error.type) == ("apply_discount", "TypeError")
    assert error.message.startswith("unsupported operand type(s) for -")
    assert result.summary == "completed, 1 tool error: step 3, apply_discount in digger"
    assert "completed, 1 tool error: step 3, apply_discount in digger" in repr(result)
    # the traceback starts at the user's code: file, function, line and the line's text
    assert error.traceback is not None
    lines = error.traceback.splitlines()
    path = inspect.getsourcefile(apply_discount.function)
    assert path is not None
    source = Path(path).read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.strip().startswith(BROKEN_LINE))
    assert lines[0].startswith("Traceback (most recent call last;")
    assert lines[1] == f'  File "{path}", line {line}, in apply_discount'
    assert lines[2].strip().startswith(BROKEN_LINE)
    assert lines[-1].startswith("TypeError: unsupported operand")
    assert "workbench/toolcalls.py" not in error.traceback and "asyncio" not in error.traceback
    outcome = digger.steps[2].tool_outcomes[0]
    assert outcome.traceback == error.traceback and outcome.exception is not None


def test_a_run_without_errors_says_only_its_status() -> None:
    result = _agent([R.tool_call("add", {"a": 1, "b": 2}), "3"]).run_sync("add")
    assert result.errors == () and result.summary == "completed"


def test_a_stored_run_has_the_same_errors() -> None:
    store = wb.RunStore(":memory:")
    result = team(store=store).run_sync("price the hat")
    loaded = store.load(result.run_id)
    assert loaded.errors == result.errors and loaded.errors[0].traceback is not None
    assert loaded.summary == result.summary


def test_a_guard_that_raises_denies_and_is_a_guard_error_with_its_traceback() -> None:
    def strict(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.ToolPermission:
        return {"add": wb.ToolPermission.ALLOW}[call.name.upper()]

    result = _agent([R.tool_call("add", {"a": 1, "b": 2}), "no"], guards=[strict]).run_sync("x")
    (error,) = result.errors
    assert (error.kind, error.name, error.type, error.step) == ("guard", "add", "KeyError", 1)
    assert result.steps[0].tool_outcomes[0].status == "denied"
    assert error.traceback is not None and "in strict" in error.traceback
    assert result.summary == "completed, 1 guard error: step 1, add in agent"


def test_a_hook_that_raises_is_a_hook_error_with_its_traceback() -> None:
    def audit(data: wb.HookInput) -> None:
        raise ValueError("audit log is full")

    hook = wb.Hook("PostToolUse", audit)
    result = _agent([R.tool_call("add", {"a": 1, "b": 2}), "3"], hooks=[hook]).run_sync("x")
    (error,) = result.errors
    assert (error.kind, error.name, error.type, error.step) == ("hook", "audit", "ValueError", 1)
    assert "audit log is full" in error.message
    assert error.traceback is not None and "in audit" in error.traceback
    assert result.summary == "completed, 1 hook error: step 1, audit in agent"


def test_a_command_hook_error_has_no_traceback_but_is_counted() -> None:
    hook = wb.CommandHook("PostToolUse", "exit 3")
    result = _agent([R.tool_call("add", {"a": 1, "b": 2}), "3"], hooks=[hook]).run_sync("x")
    (error,) = result.errors
    assert error.kind == "hook" and error.traceback is None and error.type is None


def test_a_failed_sub_run_is_one_error_where_it_failed_and_its_caller_carries_the_traceback() -> (
    None
):
    def broken(messages: list[wb.Message], info: object) -> wb.ModelResponse:
        raise ConnectionError("model server went away")

    worker = wb.Agent(model=wb.FunctionModel(broken), name="worker", store=False)
    lead = _agent(
        [R.tool_call("work", {"task": "t"}, call_id="w1"), "gave up"],
        tools=[worker.as_tool("work", "Work.")],
        name="lead",
    )
    result = lead.run_sync("x")
    (error,) = result.errors
    child = result.children[0]
    assert (error.kind, error.agent, error.run_id, error.depth) == (
        "subrun",
        "worker",
        child.run_id,
        1,
    )
    assert error.type == "ConnectionError" and error.step == 1
    assert error.traceback is not None and "in broken" in error.traceback
    outcome = result.steps[0].tool_outcomes[0]
    assert outcome.status == "error" and outcome.traceback == child.error.traceback  # type: ignore[union-attr]
    assert result.summary == "completed, 1 failed sub-run: step 1 in worker"


def test_a_sub_run_stopped_at_a_limit_is_the_error_of_the_call_that_started_it() -> None:
    worker = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("add", {"a": 1, "b": 1})] * 3),
        name="worker",
        tools=[add],
        stop=wb.MaxSteps(2),
        store=False,
    )
    lead = _agent(
        [R.tool_call("work", {"task": "t"}, call_id="w1"), "partial"],
        tools=[worker.as_tool("work", "Work.")],
        name="lead",
    )
    (error,) = lead.run_sync("x").errors
    assert (error.kind, error.agent, error.step, error.call_id, error.name) == (
        "subrun",
        "lead",
        1,
        "w1",
        "work",
    )
    assert "stopped at a limit (step_limit)" in error.message and error.traceback is None


def test_a_failed_run_is_a_run_error() -> None:
    def broken(messages: list[wb.Message], info: object) -> wb.ModelResponse:
        raise RuntimeError("no answer")

    result = wb.Agent(model=wb.FunctionModel(broken), store=False).run_sync("x")
    (error,) = result.errors
    assert (error.kind, error.type, error.step) == ("run", "RuntimeError", 1)
    assert result.summary == "failed, 1 run error: step 1 in agent"


def test_a_breakpoint_predicate_that_raises_is_a_breakpoint_error() -> None:
    def when(view: wb.RunView) -> bool:
        return view.state.metadata["missing"] == 1  # type: ignore[no-any-return]

    agent = _agent([R.tool_call("add", {"a": 1, "b": 2}), "3"])
    run = agent.start("x", breakpoints=[wb.Break.when(when)])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint is not None
    assert event.breakpoint.traceback is not None and "in when" in event.breakpoint.traceback
    result = run.run_to_end()
    (error,) = result.errors
    assert (error.kind, error.type, error.step) == ("breakpoint", "KeyError", 1)
    assert error.traceback == event.breakpoint.traceback


def test_several_errors_are_counted_by_kind_and_the_first_is_named() -> None:
    def audit(data: wb.HookInput) -> None:
        raise ValueError("full")

    @wb.tool
    def crash() -> str:
        """Crash."""
        raise OSError("disk")

    agent = _agent(
        [R.tool_call("crash", {}), R.tool_call("crash", {}), "done"],
        tools=[crash],
        hooks=[wb.Hook("PostToolUseFailure", audit)],
    )
    result = agent.run_sync("x")
    assert [e.kind for e in result.errors] == ["tool", "hook", "tool", "hook"]
    assert (
        result.summary == "completed, 2 tool errors, 2 hook errors; first: step 1, crash in agent"
    )


@pytest.mark.parametrize("secret", ["sk-abcdefghijklmnopqrstuvwx", "acct-99887766"])
def test_a_secret_in_an_exception_never_reaches_its_record(secret: str) -> None:
    @wb.tool
    def leak() -> str:
        """Fail quoting a key."""
        key = secret
        raise PermissionError(f"rejected key {key}")

    telemetry = wb.Telemetry(redact=[r"acct-\d+"])
    store = wb.RunStore(":memory:")
    agent = _agent([R.tool_call("leak", {}), "ok"], tools=[leak], telemetry=telemetry, store=store)
    result = agent.run_sync("x")
    (error,) = result.errors
    assert error.traceback is not None and "rejected key [REDACTED]" in error.traceback
    loaded = store.load(result.run_id)
    kept = [
        repr(result.errors),
        loaded.state.to_json(),
        *(s.model_dump_json() for s in loaded.steps),
    ]
    assert all(secret not in text for text in kept)
    assert "rejected key [REDACTED]" in loaded.steps[0].model_dump_json()
    for span in telemetry.spans:
        for event in span.events:
            assert secret not in str(dict(event.attributes or {}))


def test_a_model_call_cut_by_the_time_limit_is_a_model_error() -> None:
    async def slow(messages: list[wb.Message], info: object) -> wb.ModelResponse:
        await asyncio.sleep(5)
        return R.text("late")

    agent = wb.Agent(model=wb.FunctionModel(slow), stop=wb.Timeout(0.05), store=False)
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.TIME_LIMIT and result.error is None
    (error,) = result.errors
    assert (error.kind, error.step, error.type) == ("model", 1, "TimeoutError")


def test_the_store_counts_the_errors_of_each_run_and_rolls_them_up() -> None:
    store = wb.RunStore(":memory:")
    result = team(store=store).run_sync("price the hat")
    rows = {row.run_id: row for row in store.find(wb.RunFilter())}
    digger = result.children[0].children[0]
    assert rows[digger.run_id].errors == 1 and rows[result.run_id].errors == 0
    assert rows[digger.run_id].first_error == result.errors[0].line
    (tree,) = store.find(wb.RunFilter(rollup=True))
    assert tree.errors == len(result.errors) and tree.first_error == result.errors[0].line


def _comparable(errors: tuple[wb.RunError, ...]) -> list[wb.RunError]:
    return [e.model_copy(update={"span_id": None}) for e in errors]


def _guarded_agent() -> wb.Agent:
    def strict(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.ToolPermission:
        raise RuntimeError("policy store down")

    def audit(data: wb.HookInput) -> None:
        raise ValueError("audit log is full")

    return _agent(
        [R.tool_call("add", {"a": 1, "b": "x"}), R.tool_call("add", {"a": 1, "b": 2}), "no"],
        guards=[strict],
        hooks=[wb.Hook("Stop", audit)],
    )


def _worker_lead(worker: wb.Agent) -> wb.Agent:
    return _agent(
        [R.tool_call("work", {"task": "t"}, call_id="w1"), "done"],
        tools=[worker.as_tool("work", "Work.")],
        name="lead",
    )


def _failing_worker() -> wb.Agent:
    def broken(messages: list[wb.Message], info: object) -> wb.ModelResponse:
        raise ConnectionError("gone")

    return wb.Agent(model=wb.FunctionModel(broken), name="worker", store=False)


def _limited_worker() -> wb.Agent:
    script = [R.tool_call("add", {"a": 1, "b": 1})] * 3
    return wb.Agent(
        model=wb.ScriptedModel(script), name="worker", tools=[add], stop=wb.MaxSteps(2), store=False
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: team(),
        _guarded_agent,  # a retry (not an error), a guard that raised, a hook that raised
        lambda: _worker_lead(_failing_worker()),
        lambda: _worker_lead(_limited_worker()),
        lambda: wb.Agent(model=wb.FunctionModel(_raise), store=False),
    ],
    ids=["team", "guard-and-hook", "failed-sub-run", "limited-sub-run", "failed-run"],
)
@pytest.mark.parametrize("telemetry", [True, False], ids=["live-spans", "spans-of-records"])
def test_a_trace_says_what_went_wrong_as_its_run_does(
    make: Callable[[], wb.Agent], telemetry: bool
) -> None:
    agent = make()
    agent.telemetry = wb.Telemetry() if telemetry else None
    result = agent.run_sync("x")
    assert result.errors
    trace = wb.trace_of(result, telemetry=agent.telemetry)
    assert _comparable(trace.errors()) == _comparable(result.errors)
    assert all(e.span_id for e in trace.errors())


@pytest.mark.parametrize("telemetry", [True, False], ids=["live-spans", "spans-of-records"])
def test_stopped_after_a_tool_crashed_below_the_first_error_named_is_the_tools(
    telemetry: bool,
) -> None:
    """Stop pressed at the error breakpoint: the calls above end aborted, after the crash.

    They were named first ("first: step 1, research in lead"), as if the person's Stop were
    what went wrong, and the tool's crash came last.
    """
    lead = team(telemetry=wb.Telemetry() if telemetry else None)
    run = lead.start("price the hat", breakpoints=[wb.Break.on_error()])
    run.run_to_breakpoint()
    run.abort()
    result = run.result
    assert [(e.kind, e.where) for e in result.errors] == [
        ("tool", "step 3, apply_discount in digger"),
        ("subrun", "step 1, dig in researcher"),
        ("subrun", "step 1, research in lead"),
    ]
    assert result.summary == (
        "aborted, 1 tool error, 2 failed sub-runs; first: step 3, apply_discount in digger"
    )
    trace = wb.trace_of(result, telemetry=lead.telemetry)
    assert _comparable(trace.errors()) == _comparable(result.errors)


def _raise(messages: list[wb.Message], info: object) -> wb.ModelResponse:
    raise RuntimeError("no answer")


@pytest.mark.parametrize("run_id", [None, "../x"], ids=["no-run-id", "not-an-id"])
def test_a_failed_call_in_another_frameworks_trace_is_an_error_in_every_view(
    run_id: str | None, tmp_path: Path
) -> None:
    """Its run id is what the trace says (none, or text that is no id of ours): only shown,
    so the trace's errors, its report and 'workbench trace' still draw it (they raised)."""
    from tests.test_trace_cli import foreign_trace
    from workbench.cli import main
    from workbench.report import report_html

    document = foreign_trace(["one", "two"])
    failed = document["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    failed["status"] = {"code": "STATUS_CODE_ERROR", "message": "<b>rate limited</b>"}
    if run_id is not None:
        failed["attributes"].append({"key": "workbench.run.id", "value": {"stringValue": run_id}})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    (error,) = wb.load_trace(path).errors()
    said = ("model", run_id or "", "<b>rate limited</b>")
    assert (error.kind, error.run_id, error.message) == said
    assert "&lt;b&gt;rate limited&lt;/b&gt;" in report_html(wb.load_trace(path))
    assert main(["trace", str(path)]) == 0


def test_a_client_that_asked_again_after_failed_calls_has_each_failure_in_its_trace_too() -> None:
    """The openai SDK, through the proxy, retries a call its upstream answered with a 500 twice,
    then gives up: the recorded run's step 2 was tried three times, has a model error at each of
    its first two tries and fails the run at the third. Its trace said only "failed, 1 run error"
    (a failed model call in a failed run was taken for the run's own failure) beside the run's
    "2 model errors, 1 run error"."""
    import openai

    from tests.fake_upstream import Answer, completion, fake_upstream

    def behaviour(body: dict[str, object], headers: dict[str, str]) -> Answer:
        if len(body["messages"]) == 1:  # type: ignore[arg-type]
            return Answer(body=completion("", [("c1", "add", {"a": 2, "b": 3})]))
        return Answer(status=500, body={"error": {"message": "cannot parse the call"}})

    store = wb.RunStore(":memory:")
    with fake_upstream(behaviour) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key="sk-test", max_retries=2)
        messages: list[dict[str, object]] = [{"role": "user", "content": "2 + 3?"}]
        first = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "c1", "content": "5"},
        ]
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        client.close()
    run = store.load(proxy.run_ids[0])
    assert [(e.kind, e.where) for e in run.errors] == [
        ("model", "step 2, try 1 in OpenAI"),
        ("model", "step 2, try 2 in OpenAI"),
        ("run", "step 2 in OpenAI"),
    ]
    trace = wb.trace_of(run)
    assert _comparable(trace.errors()) == _comparable(run.errors)
    assert trace.summary() == "failed, 2 model errors, 1 run error; first: step 2, try 1 in OpenAI"
    # the SDK's sleep before each try again is no tool's time: a failed call had no tools to run
    assert [(s.index, s.tries, s.timing.tools) for s in run.steps[1:]] == [(2, 3, 0.0)]
    assert run.steps[0].timing.tools > 0  # the agent's answer to the call it got, then its request
