"""Toolsets in the loop: chosen before every model call, with what was hidden on each step."""

from __future__ import annotations

import pytest

import workbench as wb

R = wb.ModelResponse


@wb.tool
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@wb.tool
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _after_first_step(tool: wb.Tool, view: wb.RunView) -> bool | str:
    if tool.name == "delete" and view.steps_completed >= 1:
        return "no deleting after the first step"
    return True


def test_filters_run_before_every_inference_and_the_step_record_says_what_was_hidden() -> None:
    model = wb.ScriptedModel(
        [
            R.tool_call("read", {"path": "a"}),
            R.tool_call("delete", {"path": "a"}),
            "done",
        ]
    )
    files = wb.Toolset([read, delete]).filtered(_after_first_step)
    agent = wb.Agent(model=model, tools=[files], store=False)
    result = agent.run_sync("tidy up")
    first, second, _ = result.steps
    assert first.tools_offered == ("read", "delete") and first.tools_hidden == ()
    assert second.tools_offered == ("read",)
    assert second.tools_hidden == (("delete", "no deleting after the first step"),)
    assert [d.name for d in model.calls[1].tools] == ["read"]  # the model was not offered it
    refused = second.tool_outcomes[0]  # a call of it anyway is told why it is not there
    assert refused.status == "denied"
    assert refused.content == (
        "Tool 'delete' is not available now: no deleting after the first step."
    )
    assert result.snapshots[1].tool_names == ("read",)
    assert result.snapshots[0].tool_schema_hash != result.snapshots[1].tool_schema_hash


def test_a_filter_that_raises_hides_the_tool_with_the_error() -> None:
    def broken(tool: wb.Tool, view: wb.RunView) -> bool:
        raise RuntimeError("filter bug")

    agent = wb.Agent(
        model=wb.ScriptedModel(["ok"]),
        tools=[read, wb.Toolset([delete]).filtered(broken)],
        store=False,
    )
    step = agent.run_sync("x").steps[0]
    assert step.tools_offered == ("read",)
    assert step.tools_hidden[0][0] == "delete" and "filter bug" in step.tools_hidden[0][1]


def test_two_tools_of_one_name_offered_together_fail_the_run_clearly() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["ok"]), tools=[read, wb.Toolset([read])], store=False)
    result = agent.run_sync("x")
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.error is not None and "Toolset.prefixed" in result.error.message


def test_a_sub_agent_gets_a_filtered_toolset_and_its_record_says_what_it_lacks() -> None:
    researcher = wb.Agent(model=wb.ScriptedModel(["found it"]), name="researcher", store=False)
    safe = wb.Toolset([read, delete]).filtered(
        lambda tool, view: tool.name != "delete" or "read-only researcher"
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("research", {"task": "look"}), "done"]),
        tools=[researcher.as_tool("research", tools=[safe])],
        store=False,
    )
    child = lead.run_sync("go").children[0]
    assert child.steps[0].tools_offered == ("read",)
    assert child.steps[0].tools_hidden == (("delete", "read-only researcher"),)
    told = child.steps[0].messages_in[-1].text
    assert told == "Tools you do not have in this task: delete (read-only researcher)."


@pytest.mark.parametrize("prefix", ["fs_"])
def test_prefixed_toolsets_keep_names_apart(prefix: str) -> None:
    model = wb.ScriptedModel([R.tool_call(f"{prefix}read", {"path": "b"}), "ok"])
    agent = wb.Agent(model=model, tools=[read, wb.Toolset([read]).prefixed(prefix)], store=False)
    result = agent.run_sync("x")
    assert result.steps[0].tools_offered == ("read", f"{prefix}read")
    assert result.steps[0].tool_outcomes[0].content == "contents of b"


def test_the_step_span_says_which_tools_were_offered_and_which_hidden() -> None:
    from workbench.telemetry import names as n

    telemetry = wb.Telemetry()
    model = wb.ScriptedModel([R.tool_call("read", {"path": "a"}), "done"])
    files = wb.Toolset([read, delete]).filtered(_after_first_step)
    wb.Agent(model=model, tools=[files], telemetry=telemetry, store=False).run_sync("x")
    steps = [s for s in telemetry.spans if s.name.startswith("workbench.step")]
    first, second = sorted(steps, key=lambda s: s.start_time or 0)
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes[n.TOOLS_OFFERED] == ("read", "delete")
    assert n.TOOLS_FILTERED not in first.attributes
    assert second.attributes[n.TOOLS_FILTERED] == ("delete: no deleting after the first step",)


def test_the_step_view_shows_what_was_hidden_as_text() -> None:
    from workbench.notebook.html import step_html

    files = wb.Toolset([read, delete]).filtered(
        lambda tool, view: tool.name != "delete" or "<b>never</b> delete"
    )
    model = wb.ScriptedModel(["ok"])
    step = wb.Agent(model=model, tools=[files], store=False).run_sync("x").steps[0]
    html = step_html(step)
    assert "Hidden this step" in html and "delete: &lt;b&gt;never&lt;/b&gt; delete" in html
    assert "<b>never</b>" not in html


def test_a_filter_sees_the_step_it_chooses_for_also_when_resumed_mid_step() -> None:
    seen: list[tuple[int, int]] = []

    def from_step_2(tool: wb.Tool, view: wb.RunView) -> bool | str:
        seen.append((view.state.step, view.steps_completed))
        return tool.name != "delete" or view.state.step >= 2 or "delete opens at step 2"

    files = wb.Toolset([read, delete.with_options(requires_approval=True)])
    model = wb.ScriptedModel(
        [R.tool_call("read", {"path": "a"}), R.tool_call("delete", {"path": "a"}), "done"]
    )
    agent = wb.Agent(model=model, tools=[files.filtered(from_step_2)], store=False)
    result = agent.run_sync("tidy up")
    assert [s.tools_offered for s in result.steps] == [("read",), ("read", "delete")]
    assert result.status is wb.ExecutionStatus.PAUSED  # delete waits in step 2
    done = agent.resume_sync(result.state, approvals={result.state.pending[0].call_id: True})
    assert done.output == "done"
    assert [(s.index, [o.status for o in s.tool_outcomes]) for s in done.steps] == [
        (2, ["ok"]),
        (3, []),
    ]
    # steps 1 and 2 prepared, step 2 chosen again on resume, then step 3: each sees its own
    # number, with the steps before it completed
    assert seen[::2] == [(1, 0), (2, 1), (2, 1), (3, 2)]


def test_a_filter_that_raises_keeps_secrets_in_its_error_from_the_model() -> None:
    key = "sk-live0123456789abcdefghij"

    def config(tool: wb.Tool, view: wb.RunView) -> bool:
        raise RuntimeError(f"feature flags unreachable with {key}")

    model = wb.ScriptedModel([R.tool_call("read", {"path": "a"}), "done"])
    result = wb.Agent(
        model=model, tools=[wb.Toolset([read]).filtered(config)], store=False
    ).run_sync("go")
    reason = "filter config raised RuntimeError: feature flags unreachable with [REDACTED]"
    assert result.steps[0].tools_hidden == (("read", reason),)
    assert (
        result.steps[0].tool_outcomes[0].content == f"Tool 'read' is not available now: {reason}."
    )
    assert key not in str([m.model_dump() for m in model.calls[1].messages])
