"""Toolsets: each layer, their composition in any order, filters on the run view, rate limits."""

from __future__ import annotations

import pytest

import workbench as wb


def view(step: int = 1, metadata_user: str = "ann") -> wb.RunView:
    state = wb.AgentState(step=step, agent_name=metadata_user)
    return wb.RunView(state=state, elapsed=0.0, steps_completed=step - 1)


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@wb.tool
async def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def search(query: str) -> str:
    """Search the notes."""
    return f"found {query}"


async def names(toolset: wb.Toolset, at: wb.RunView | None = None) -> list[str]:
    offered, _ = await toolset.resolve(at or view())
    return [t.name for t in offered]


async def test_a_toolset_offers_tools_functions_and_nested_toolsets() -> None:
    toolset = wb.Toolset([add, wb.Toolset([delete]), search])
    offered, hidden = await toolset.resolve(view())
    assert [t.name for t in offered] == ["add", "delete", "search"]
    assert hidden == ()
    assert offered[0] is add  # no layer: the very tool given
    assert offered[2].definition.parameters["required"] == ["query"]


async def test_each_layer_returns_a_new_toolset_and_leaves_the_original() -> None:
    base = wb.Toolset([add, delete])
    prefixed = base.prefixed("fs_")
    assert await names(base) == ["add", "delete"]
    assert await names(prefixed) == ["fs_add", "fs_delete"]
    offered, _ = (
        await base.with_timeout(2.5).with_retries(4).requiring_approval(["delete"]).resolve(view())
    )
    by_name = {t.name: t for t in offered}
    assert by_name["add"].timeout == 2.5 and by_name["add"].retries == 4
    assert not by_name["add"].requires_approval and by_name["delete"].requires_approval
    assert add.timeout is None and add.retries == 1 and not delete.requires_approval


async def test_filter_hides_with_a_reason_and_sees_the_run_view() -> None:
    def not_before_step_3(tool: wb.Tool, at: wb.RunView) -> bool | str:
        return tool.name != "delete" or at.state.step >= 3 or "delete opens at step 3"

    toolset = wb.Toolset([add, delete]).filtered(not_before_step_3)
    offered, hidden = await toolset.resolve(view(step=1))
    assert [t.name for t in offered] == ["add"]
    assert hidden == (("delete", "delete opens at step 3"),)
    assert await names(toolset, view(step=3)) == ["add", "delete"]


async def test_filter_answers_false_or_raises_or_answers_nonsense() -> None:
    def never(tool: wb.Tool, at: wb.RunView) -> bool:
        return False

    def broken(tool: wb.Tool, at: wb.RunView) -> bool:
        raise KeyError("user")

    def vague(tool: wb.Tool, at: wb.RunView) -> object:
        return None

    assert (await wb.Toolset([add]).filtered(never).resolve(view()))[1] == (
        ("add", "hidden by filter never"),
    )
    offered, hidden = await wb.Toolset([add]).filtered(broken).resolve(view())
    assert offered == ()
    assert hidden == (("add", "filter broken raised KeyError: 'user'"),)
    hidden = (await wb.Toolset([add]).filtered(vague).resolve(view()))[1]  # type: ignore[arg-type]
    assert hidden == (("add", "filter vague answered None, not True, False or a reason"),)


async def test_async_filters_are_awaited() -> None:
    async def only_add(tool: wb.Tool, at: wb.RunView) -> bool:
        return tool.name == "add"

    assert await names(wb.Toolset([add, delete]).filtered(only_add)) == ["add"]


async def test_a_filter_sees_the_tool_as_it_was_when_the_filter_was_added() -> None:
    seen: list[str] = []

    def no_delete(tool: wb.Tool, at: wb.RunView) -> bool:
        seen.append(tool.name)
        return tool.name != "delete"

    before = wb.Toolset([add, delete]).filtered(no_delete).prefixed("fs_")
    after = wb.Toolset([add, delete]).prefixed("fs_").filtered(no_delete)
    offered, hidden = await before.resolve(view())
    assert [t.name for t in offered] == ["fs_add"]
    assert hidden == (("fs_delete", "hidden by filter no_delete"),)  # named as the model would
    assert seen == ["add", "delete"]
    assert await names(after) == ["fs_add", "fs_delete"]  # here the filter saw prefixed names


@pytest.mark.parametrize(
    "order",
    [
        ("prefix", "approval", "timeout", "retries", "filter"),
        ("filter", "retries", "timeout", "approval", "prefix"),
        ("timeout", "filter", "prefix", "retries", "approval"),
    ],
)
async def test_layers_compose_in_any_order(order: tuple[str, ...]) -> None:
    toolset = wb.Toolset([add, delete, search])
    for layer in order:
        if layer == "prefix":
            toolset = toolset.prefixed("x_")
        elif layer == "approval":  # by predicate: names change with the prefix's place
            toolset = toolset.requiring_approval(lambda t: t.name.endswith("delete"))
        elif layer == "timeout":
            toolset = toolset.with_timeout(1.5)
        elif layer == "retries":
            toolset = toolset.with_retries(0)
        else:
            toolset = toolset.filtered(lambda t, at: not t.name.endswith("search") or "no search")
    offered, hidden = await toolset.resolve(view())
    assert [t.name for t in offered] == ["x_add", "x_delete"]
    assert hidden == (("x_search", "no search"),)
    for t in offered:
        assert t.timeout == 1.5 and t.retries == 0
        assert t.requires_approval == (t.name == "x_delete")


async def test_layers_are_applied_once_not_every_step() -> None:
    toolset = wb.Toolset([add]).prefixed("p_").with_timeout(3)
    first, _ = await toolset.resolve(view(step=1))
    second, _ = await toolset.resolve(view(step=2))
    assert first[0] is second[0]


async def test_two_tools_with_one_name_are_refused_with_a_hint() -> None:
    with pytest.raises(wb.UsageError, match=r"two tools are named 'add'.*\.prefixed"):
        await wb.Toolset([add, wb.Toolset([add])]).resolve(view())
    assert await names(wb.Toolset([add, wb.Toolset([add]).prefixed("b_")])) == ["add", "b_add"]


def test_bad_arguments_to_the_layers_are_usage_errors() -> None:
    toolset = wb.Toolset([add])
    with pytest.raises(wb.UsageError, match="positive"):
        toolset.with_timeout(0)
    with pytest.raises(wb.UsageError, match="negative"):
        toolset.with_retries(-1)
    with pytest.raises(wb.UsageError, match="at least one call"):
        toolset.rate_limited(0, 10)
    with pytest.raises(wb.UsageError, match="not one string"):
        toolset.requiring_approval("delete")
    with pytest.raises(wb.UsageError, match="not 42"):
        wb.Toolset([42])  # type: ignore[list-item]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_rate_limit_refuses_over_the_limit_and_says_when_to_retry() -> None:
    clock = FakeClock()
    toolset = wb.Toolset([add, delete]).rate_limited(2, per_seconds=10, clock=clock)
    offered, _ = await toolset.resolve(view())
    by_name = {t.name: t for t in offered}
    ctx = None
    assert (await by_name["add"].run({"a": 1, "b": 2}, ctx)).value == "3"  # type: ignore[arg-type]
    clock.now += 4
    assert (await by_name["delete"].run({"path": "/x"}, ctx)).value == "deleted /x"  # type: ignore[arg-type]
    clock.now += 1
    with pytest.raises(
        wb.ToolRateLimited, match=r"2 calls per 10s\): not run; retry in 5\.0s"
    ) as e:
        await by_name["add"].run({"a": 1, "b": 1}, ctx)  # type: ignore[arg-type]
    assert e.value.retry_after == pytest.approx(5.0)
    clock.now += 5  # the first call leaves the window
    assert (await by_name["add"].run({"a": 2, "b": 2}, ctx)).value == "4"  # type: ignore[arg-type]
    with pytest.raises(wb.ToolRateLimited, match=r"retry in 4\.0s"):
        await by_name["add"].run({"a": 2, "b": 2}, ctx)  # type: ignore[arg-type]


async def test_rate_limited_tool_keeps_its_schema_and_works_with_other_layers() -> None:
    clock = FakeClock()
    toolset = wb.Toolset([add]).rate_limited(1, 60, clock=clock).prefixed("m_").with_timeout(2)
    (limited,), _ = await toolset.resolve(view())
    assert limited.name == "m_add" and limited.timeout == 2
    assert limited.definition.parameters == add.definition.parameters
    with pytest.raises(wb.ArgumentError, match="'b' is required"):
        await limited.run({"a": 1}, None)  # type: ignore[arg-type]


def test_rate_limit_in_a_run_is_a_tool_error_the_model_reads() -> None:
    clock = FakeClock()
    toolset = wb.Toolset([add]).rate_limited(1, 30, clock=clock)
    offered, _ = wb._sync.run_sync(toolset.resolve(view()))
    model = wb.ScriptedModel(
        [
            wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}),
            wb.ModelResponse.tool_call("add", {"a": 3, "b": 4}),
            wb.ModelResponse.text("done"),
        ]
    )
    result = wb.Agent(model=model, tools=offered).run_sync("add twice")
    outcomes = [o for s in result.steps for o in s.tool_outcomes]
    assert [o.status for o in outcomes] == ["ok", "error"]
    assert "ToolRateLimited: rate limit reached for 'add' (1 calls per 30s)" in outcomes[1].content
    assert "retry in 30.0s" in outcomes[1].content
    assert result.output == "done"


def test_tool_with_a_json_schema_validates_against_it() -> None:
    async def call(**arguments: object) -> str:
        return repr(sorted(arguments.items()))

    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0}},
        "required": ["n"],
        "additionalProperties": False,
    }
    made = wb.Tool(function=call, name="count", description="Count.", parameters=schema)
    assert made.definition.parameters == schema
    assert made.validate({"n": 3}) == {"n": 3}
    with pytest.raises(wb.ArgumentError, match="'n' is a required property"):
        made.validate({})
    with pytest.raises(wb.ArgumentError, match=r"argument 'n': -1 is less than the minimum"):
        made.validate({"n": -1})
    with pytest.raises(ValueError, match=r"invalid JSON schema at properties/n/type"):
        wb.Tool(call, "bad", "", parameters={"type": "object", "properties": {"n": {"type": 5}}})
    with pytest.raises(ValueError, match="must describe an object"):
        wb.Tool(call, "bad", "", parameters={"type": "string"})


async def test_approval_for_a_name_the_toolset_lacks_is_an_error_not_a_silent_no_op() -> None:
    # a typo, or the name from before a prefix: the tool meant to wait would run unasked
    for toolset in (
        wb.Toolset([add, delete]).requiring_approval(["delete_fle"]),
        wb.Toolset([add, delete]).prefixed("fs_").requiring_approval(["delete"]),
    ):
        with pytest.raises(wb.UsageError, match=r"requiring_approval names 'delete(_fle)?'.*has"):
            await toolset.resolve(view())
    good = wb.Toolset([add, delete]).prefixed("fs_").requiring_approval(["fs_delete"])
    offered, _ = await good.resolve(view())
    assert [(t.name, t.requires_approval) for t in offered] == [
        ("fs_add", False),
        ("fs_delete", True),
    ]
