"""Tasks of several conversations: grouped by the client's session, replayed as one group.

A real proxy in front of the fake upstream (tests/fake_upstream.py); the agent side is httpx,
so each test says exactly which headers and messages a client sends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import workbench as wb
from tests.fake_upstream import Answer, completion, fake_upstream

PLAN = [{"role": "system", "content": "You plan."}, {"role": "user", "content": "plan a sum"}]
ACT = [{"role": "system", "content": "You act."}, {"role": "user", "content": "add 2 and 3"}]


def planner(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """A plan for a planning conversation; a final_answer call, then nothing, for the other."""
    if body["messages"][0]["content"] == "You plan.":
        return Answer(body=completion("1. add 2 and 3"))
    return Answer(body=completion(calls=[("c1", "final_answer", {"answer": "5"})]))


def ask(url: str, messages: list[dict[str, Any]], **headers: str) -> httpx.Response:
    body = {"model": "fake-model", "messages": messages}
    return httpx.post(f"{url}/chat/completions", json=body, headers=headers, timeout=30)


def task(url: str, **headers: str) -> list[httpx.Response]:
    """smolagents with planning: a planning conversation, then the one that acts on the plan."""
    plan = ask(url, PLAN, **headers)
    if plan.status_code != 200:
        return [plan]
    steps = plan.json()["choices"][0]["message"]["content"]
    return [plan, ask(url, [*ACT, {"role": "user", "content": f"the plan: {steps}"}], **headers)]


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[wb.RunStore, wb.ProxyHandle]]:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(planner) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        assert [r.status_code for r in task(proxy.url)] == [200, 200]
    yield store, proxy
    store.close()


def test_a_conversation_that_ends_on_a_tool_call_ended_with_it(
    recorded: tuple[wb.RunStore, wb.ProxyHandle],
) -> None:
    store, proxy = recorded
    plan, act = (store.load(r) for r in proxy.run_ids)
    assert (plan.status, plan.stop_reason) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.COMPLETED,
    )
    assert act.status is wb.ExecutionStatus.COMPLETED
    assert act.stop_reason is wb.StopReason.TASK_COMPLETE
    assert act.output == "5"  # final_answer's answer
    assert plan.state.metadata["session_id"] == act.state.metadata["session_id"] == proxy.session_id


@pytest.mark.parametrize("by", ["runs", "session"])
def test_a_task_of_several_conversations_replays_as_one_group(
    recorded: tuple[wb.RunStore, wb.ProxyHandle], by: str
) -> None:
    store, proxy = recorded
    group = proxy.run_ids if by == "runs" else proxy.session_id
    with wb.proxy(replay=group, store=store) as replay:
        answers = task(replay.url)
        assert [r.status_code for r in answers] == [200, 200]
        assert answers[1].json()["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
        # the same task again: each conversation finds its run again
        assert [r.status_code for r in task(replay.url)] == [200, 200]
        # a conversation none of them recorded departs, against the first it could be
        departed = ask(replay.url, [{"role": "user", "content": "something else"}])
    assert departed.status_code == 400
    message = departed.json()["error"]["message"]
    assert "no run of the 2 replayed goes this way" in message
    assert proxy.run_ids[0] in message and "something else" in message
    assert [store.load(r).state.metadata["proxy"]["replay_of"] for r in replay.run_ids[:1]] == [
        proxy.run_ids
    ]
    again = [store.load(r).state.rerun_of for r in replay.run_ids[:4]]
    assert [(o.run_id, o.step) for o in again if o is not None] == [
        (r, 1) for r in proxy.run_ids
    ] * 2


def test_the_command_replays_every_run_given_not_only_the_last(
    recorded: tuple[wb.RunStore, wb.ProxyHandle],
) -> None:
    store, proxy = recorded
    command = [sys.executable, "-m", "workbench.cli", "proxy", "--port", "0"]
    command += ["--store", str(store.path)]
    command += [arg for run_id in proxy.run_ids for arg in ("--replay", run_id[:12])]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        url = first.split(" on ")[1].split(" ")[0]
        answers = task(url)
        process.send_signal(signal.SIGINT)
        process.stdout.read()
        assert process.wait() == 0
    assert f"replaying {', '.join(proxy.run_ids)}" in first
    assert [r.status_code for r in answers] == [200, 200]


def test_a_client_session_groups_its_conversations_and_a_new_prefix_starts_a_run() -> None:
    """Claude Code's sub-agents and side calls share its session id: a run each, one group."""
    store = wb.RunStore(":memory:")
    session = {"x-claude-code-session-id": "cc-session-1"}
    with fake_upstream(planner) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        first = ask(proxy.url, PLAN, **session).json()["choices"][0]["message"]
        ask(proxy.url, ACT, **session)  # another conversation of the same session
        ask(proxy.url, [*PLAN, first, {"role": "user", "content": "go on"}], **session)
        ask(proxy.url, PLAN)  # no session: the proxy's own
    runs = [store.load(r) for r in proxy.run_ids]
    assert [len(r.steps) for r in runs] == [2, 1, 1]
    assert [r.state.metadata["session_id"] for r in runs] == [
        "cc-session-1",
        "cc-session-1",
        proxy.session_id,
    ]
    assert [s.run_id for s in store.session("cc-session-1")] == proxy.run_ids[:2]


def test_a_tool_whose_output_changes_every_run_replays_under_a_declared_tolerance() -> None:
    """Codex's exec_command gives wall times and random ids: strict, but for what is declared."""
    store = wb.RunStore(":memory:")

    def shell(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["messages"][-1]["role"] == "tool":
            return Answer(body=completion("it printed hi"))
        return Answer(body=completion(calls=[("c1", "exec_command", {"cmd": "echo hi"})]))

    def run(url: str, took: str, said: str = "hi") -> httpx.Response:
        first = ask(url, ACT)
        if first.status_code != 200:
            return first
        call = first.json()["choices"][0]["message"]
        output = f"Chunk ID: {took[2:]}f\nWall time: {took} seconds\nOutput:\n{said}\n"
        return ask(url, [*ACT, call, {"role": "tool", "tool_call_id": "c1", "content": output}])

    with fake_upstream(shell) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        assert run(proxy.url, "0.0031").status_code == 200
    (recorded,) = proxy.run_ids
    with wb.proxy(replay=recorded, store=store) as strict:
        departed = run(strict.url, "0.0017")
    assert departed.status_code == 400 and "Wall time: 0.0031" in departed.text
    tolerance = {"exec_command": r"Chunk ID: \w+|Wall time: [\d.]+ seconds"}
    with wb.proxy(replay=recorded, store=store, normalize=tolerance) as tolerant:
        replayed = run(tolerant.url, "0.0017")
        changed = run(tolerant.url, "0.0020", said="bye")
    assert replayed.status_code == 200
    assert replayed.json()["choices"][0]["message"]["content"] == "it printed hi"
    assert changed.status_code == 400  # what is not declared is still compared strictly
    message = changed.json()["error"]["message"]
    assert "recorded: result of c1 '…\\n…\\nOutput:\\nhi" in message  # compared normalized
    assert "sent:     result of c1 '…\\n…\\nOutput:\\nbye" in message
    assert "tolerances declared: exec_command's results by r'Chunk ID:" in message
    with pytest.raises(wb.UsageError, match="needs replay="):
        wb.proxy("http://127.0.0.1:9/v1", store=store, normalize=tolerance)


def test_the_command_says_what_a_tolerance_must_look_like(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from workbench.cli import main

    for given, said in [
        ("exec_command", "--normalize takes TOOL=PATTERN, not 'exec_command'"),
        ("exec_command=(", "--normalize exec_command: '(' is not a regular expression"),
    ]:
        assert main(["proxy", "--replay", "r", "--store", ":memory:", "--normalize", given]) == 2
        assert said in capsys.readouterr().err
