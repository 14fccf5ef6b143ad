"""Each real client recorded through the proxy, replayed offline, forked and rechecked.

For every agent of `tests.clients.agents` (Claude Code, Codex, the OpenAI Agents SDK, pydantic-ai,
the anthropic SDK): a scripted upstream of its wire makes it call its tool once and then answer;
the proxy records that as one run with the tool call and its result; with the upstream gone, a
replay gives the agent the same final answer; forked after step 1, the rest comes live from
another upstream; and the recorded calls go through a Claude Code hook script with `wb.recheck`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from tests.clients.agents import CLIS, ENDING, FORKED, SDKS, THOUGHT, client, scripted
from tests.fake_upstream import fake_upstream

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
