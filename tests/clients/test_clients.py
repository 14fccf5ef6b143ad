"""Each real client recorded through the proxy, replayed offline, forked and rechecked.

For every agent of `tests.clients.agents` (Claude Code, Codex, the OpenAI Agents SDK, pydantic-ai,
the anthropic SDK): a scripted upstream of its wire makes it call its tool once and then answer;
the proxy records that as one run with the tool call and its result; with the upstream gone, a
replay gives the agent the same final answer; forked after step 1, the rest comes live from
another upstream; and the recorded calls go through a Claude Code hook script with `wb.recheck`.
Claude Code and Codex ask again after an overloaded upstream: one step, tried twice.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.clients.agents import CLIS, ENDING, FORKED, SDKS, THOUGHT, client, scripted
from tests.fake_upstream import Answer, fake_upstream

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("name", [*CLIS, *SDKS])
def test_a_client_is_recorded_replayed_offline_forked_and_rechecked(
    name: str, tmp_path: Path, deny_hook: str, request: pytest.FixtureRequest
) -> None:
    agent = client(name, request.getfixturevalue("cli_bin") if name in CLIS else None)
    store = wb.RunStore(tmp_path / "runs.sqlite")
    place = tmp_path / name
    place.mkdir()
    answer = ENDING.format(said=agent.said)

    behaviour = scripted(agent.wire, agent.tool, agent.arguments)
    with fake_upstream(behaviour) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        assert answer in agent.drive(proxy.url, place)
    (run_id,) = proxy.run_ids  # one conversation, one run
    run = store.load(run_id)
    assert run.status is wb.ExecutionStatus.COMPLETED, run.error
    assert run.state.metadata["proxy"]["wire"] == agent.wire
    named = {"claude-code": "claude-cli", "codex": "codex_exec"}  # the product in its User-Agent
    assert run.state.agent_name == named.get(name, run.state.agent_name), run.state.agent_name
    assert len(run.steps) == 2 and run.output == answer
    (call,) = run.steps[0].tool_calls
    assert (call.name, call.arguments) == (agent.tool, agent.arguments)
    first = run.steps[0].response
    assert first is not None and isinstance(first.parts[0], wb.ThinkingPart)
    assert first.parts[0].signature == THOUGHT[1]
    echoed = next(m for m in run.steps[1].messages_in if m.role == "assistant").parts[0]
    if name == "pydantic-ai":  # it sends encrypted reasoning back only to models it knows reason
        assert isinstance(echoed, wb.TextPart) and THOUGHT[0] in echoed.text  # as <think> text
    else:
        assert echoed == first.parts[0]  # the client sent it back, signature and all
    (outcome,) = run.steps[0].tool_outcomes
    assert outcome.name == agent.tool and agent.said in outcome.content

    # the upstream is gone: the recording answers, in the client's wire
    with wb.proxy(replay=run_id, store=store, normalize=agent.normalize) as replay:
        assert answer in agent.drive(replay.url, place)
    replayed = store.load(replay.run_ids[0])
    assert replayed.status is wb.ExecutionStatus.COMPLETED and len(replayed.steps) == 2
    assert replayed.state.metadata["proxy"]["replay_of"] == run_id
    assert replayed.state.rerun_of is not None and replayed.state.rerun_of.run_id == run_id
    # the same run, step for step; but for what the tolerated tool said this time (Codex's
    # shell output: a new chunk id and wall time)
    assert wb.diff(run, replayed).first_divergence == (1 if agent.normalize else None)

    # forked after step 1: the call is replayed, what follows it comes live
    ending = scripted(agent.wire, agent.tool, agent.arguments, ending=FORKED)
    with (
        fake_upstream(ending) as live,
        wb.proxy(
            live.url, store=store, replay=run_id, until_step=1, normalize=agent.normalize
        ) as fork,
    ):
        assert FORKED in agent.drive(fork.url, place)
    assert len(live.requests) == 1  # only the step after the fork point went upstream
    forked = store.load(fork.run_ids[0])
    assert forked.output == FORKED and forked.steps[0].response == run.steps[0].response

    # what a Claude Code hook script says now of the calls recorded then
    frame = wb.recheck(run, hooks=[wb.CommandHook("PreToolUse", f"{deny_hook} {agent.tool}")])
    assert list(frame["tool"]) == [agent.tool]
    assert list(frame["decision_then"]) == ["allow"] and list(frame["decision_now"]) == ["deny"]
    assert f"{agent.tool} is not allowed here" in frame["reason"][0]
    store.close()


@pytest.mark.parametrize("name", CLIS)
def test_a_cli_asking_again_after_an_overloaded_upstream_took_one_step_tried_twice(
    name: str, tmp_path: Path, cli_bin: Path
) -> None:
    """Claude Code after a 529 (Anthropic's overloaded), Codex after a 500: the step the
    answer of the tool's result belongs to is one step with a failed try, not two steps."""
    agent = client(name, cli_bin)
    answered = scripted(agent.wire, agent.tool, agent.arguments)
    count = itertools.count()

    def overloaded_once(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if next(count) != 1:
            return answered(body, headers)
        if agent.wire == "messages":
            error = {"type": "overloaded_error", "message": "Overloaded"}
            return Answer(status=529, body={"type": "error", "error": error})
        return Answer(status=500, body={"error": {"message": "busy", "type": "server_error"}})

    store = wb.RunStore(tmp_path / "runs.sqlite")
    place = tmp_path / name
    place.mkdir()
    with fake_upstream(overloaded_once) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        assert ENDING.format(said=agent.said) in agent.drive(proxy.url, place)
    (run_id,) = proxy.run_ids
    run = store.load(run_id)
    assert [(s.index, s.tries) for s in run.steps] == [(1, 1), (2, 2)]
    (overloaded,) = run.steps[1].failed_tries
    assert overloaded.status == (529 if agent.wire == "messages" else 500)
    store.close()
