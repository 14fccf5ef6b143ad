"""Traces of other GenAI instrumentations, each written by that library itself, in every view.

pydantic-ai (its own instrumentation), OpenInference (its OpenAI and LangChain instrumentations,
a LangGraph ReAct agent), OpenLLMetry as it writes now (``opentelemetry-instrumentation-openai``
0.6x: the conventions' JSON messages) and as it wrote in mid-2025 (0.40.14: ``llm.request.type``
and flattened ``gen_ai.prompt.N.*``, recorded in ``tests/data`` by
``scripts/record-openllmetry-2025`` because one environment holds one version), and our own
spans under the conventions' older names. For each: which spans are model calls and tool calls,
the tool's name, the tokens, the steps and their tool calls, the messages, and what the
explorer shows of a call. All offline: every model answer comes from the client's transport.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests._report_page import page_table
from tests.foreign import langgraph_react, openai_agents, openai_chat, pydantic_ai_agent
from workbench.cli import main
from workbench.notebook import TraceExplorer
from workbench.notebook.drawn_tables import failed_rows
from workbench.notebook.explorer_html import span_detail_html
from workbench.report import report_html, trace_summary
from workbench.telemetry.files import otlp_json

DATA = Path(__file__).parent / "data"


def loaded(spans: list[Any]) -> wb.Trace:
    """SDK spans written to OTLP/JSON and read back, as a file of them would be."""
    return wb.load_trace(json.dumps(otlp_json(spans)))


def categories(trace: wb.Trace) -> list[str]:
    return [s.category for s in trace.spans]


def detail_text(explorer: TraceExplorer, span: wb.SpanData) -> str:
    explorer.select(span.span_id)
    return " ".join(re.sub(r"<[^>]+>", " ", explorer.detail).split())


def test_pydantic_ai() -> None:
    trace = loaded(pydantic_ai_agent.traced_spans())
    assert categories(trace) == ["agent", "model", "tool", "model"]
    steps = trace.steps_df()
    assert steps["tool_calls"].tolist() == [1, 0] and steps["tools"].tolist() == ["add", ""]
    assert steps["agent"].tolist() == ["adder", "adder"]
    assert steps["input_tokens"].tolist() == [55, 56]
    model, tool = trace.spans[1:3]  # step 1 is the model call, then the tool it asked for
    assert steps["duration_ms"][0] == (tool.end_ns - model.start_ns) / 1e6
    assert steps["duration_ms"][0] > steps["inference_ms"][0]
    frame = trace.spans_df()
    assert frame.loc[frame["category"] == "tool", "tool"].tolist() == ["add"]
    agents = trace.agents()
    assert agents[["agent", "runs", "steps", "input_tokens"]].values.tolist() == [
        ["adder", 1, 2, 111]
    ]
    explorer = TraceExplorer(trace)
    second_call = trace.model_calls()[1]
    shown = explorer.view.detail(second_call.span_id)
    result = re.search(r'class="wb-tool-result">(.*?)</div>', shown, re.S)
    assert result is not None and ">0</pre>" in result.group(1)  # pydantic-ai's "result"
    assert [r["category"] for r in explorer.view.rows(0, 9)] == ["agent", "model", "tool", "model"]
    assert "adder" in report_html(trace)


def test_a_tools_exception_pydantic_ai_let_out_of_the_run_is_one_error() -> None:
    """The run span failed with the tool's exception: one crash, said once (with the run's
    status), not "1 tool error, 1 run error" with its traceback twice."""
    trace = loaded(pydantic_ai_agent.failing_spans())
    assert [s.is_error for s in trace.spans] == [True, False, True]  # the run, its chat, the tool
    (error,) = trace.errors()
    assert (error.kind, error.name, error.type) == ("tool", "get_weather", "ValueError")
    assert trace.summary() == "failed, 1 tool error: step 1, get_weather in weather"


def test_a_call_pydantic_ai_sent_back_to_fix_is_a_retry_not_an_error() -> None:
    """pydantic-ai marks the span of a call whose arguments failed validation failed, with the
    retry's cause; it sent the model a retry prompt and the run went on. The trace said "ok, 1
    tool error" with "add (error)" in its steps, where a run of ours says "retry: not an error".
    """
    trace = loaded(pydantic_ai_agent.retried_spans())
    assert [s.is_error for s in trace.spans if s.category == "tool"] == [True, False]
    assert trace.errors() == () and trace.summary() == "ok"
    assert trace.steps_df()["tools"].tolist() == ["add (retry)", "add", ""]
    assert trace_summary(trace)["spans"] == "6, 1 marked failed (1 retry: not an error)"


def test_openinference_openai() -> None:
    trace = wb.load_trace(json.dumps(openai_chat.traced("openinference")))
    assert categories(trace) == ["model", "model"]
    steps = trace.steps_df()
    assert steps["tools"].tolist() == ["add (asked for)", ""]  # no tool span: what the answer asked
    assert steps["input_tokens"].tolist() == [12, 20] and steps["output_tokens"].tolist() == [5, 1]
    messages = trace.messages(step=2)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[-1].text == "3"
    shown = detail_text(TraceExplorer(trace), trace.model_calls()[0])
    assert "Messages (read from the span's attributes)" in shown and "You add." in shown


@pytest.mark.filterwarnings(  # the instrumentation's own models, when it is imported
    "ignore:Support for class-based `config` is deprecated:DeprecationWarning"
)
@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_a_model_call_that_failed_with_no_agent_or_step_of_ours_is_named_by_its_span(
    instrumentation: str,
) -> None:
    """A 500 to an openai SDK call, traced by OpenInference or OpenLLMetry, read "failed, 1 model
    error: " and "[model] : openai.InternalServerError..." (a trace with no agent and no step of
    ours left nothing to say where), then "failed, 1 model error: ChatCompletion" (which call?):
    the step its step table numbers it."""
    trace = wb.load_trace(json.dumps(openai_chat.traced(instrumentation, server_error=True)))
    (error,) = trace.errors()
    name = trace.spans[-1].name  # "ChatCompletion" (OpenInference), "openai.chat" (OpenLLMetry)
    assert (error.kind, error.agent, error.where) == ("model", "", f"step 2, {name}")
    assert trace.summary() == f"failed, 1 model error: step 2, {name}"
    assert error.line.startswith(f"step 2, {name}: openai.InternalServerError: Error code: 500")
    assert trace.step_rows()[1]["model_span_id"] == error.span_id  # the step table's step 2


def test_the_openai_agents_sdk() -> None:
    """An Agents SDK run on the local model whose second call got a 500 read "ok, 1 tool error, 1
    failed sub-run; first: get_weather", agent "—", and "[subrun] : Error in agent run: ..."
    for the 500: the SDK leaves its workflow's span unmarked, names its agent ``agent.name``,
    and says the call's failure again on the agent's span in words of its own."""
    trace = loaded(openai_agents.failing_spans())
    assert trace.summary() == (
        "failed, 1 tool error, 1 model error; first: step 1, get_weather in forecaster"
    )
    tool, model = trace.errors()
    assert (tool.kind, tool.where) == ("tool", "step 1, get_weather in forecaster")
    assert (model.kind, model.where) == ("model", "step 2, generation in forecaster")
    assert "Error code: 500" in model.message
    assert trace_summary(trace)["agent"] == "forecaster"
    steps = trace.steps_df()
    assert steps["agent"].tolist() == ["forecaster", "forecaster"]
    assert steps["tools"].tolist() == ["add, get_weather (error)", ""]
    assert steps["input_tokens"].tolist()[0] == 12
    shown = page_table(report_html(trace), "wb-steps")  # TraceView's table is the same
    tokens = shown[0].index("tokens in")
    assert [row[tokens] for row in shown[1:]] == ["12", ""]  # the failed call had none: not 12.000
    assert failed_rows(trace) == [0, 1]  # the tool's step drawn failed too, not the 500's alone
    add = next(s for s in trace.spans if s.name == "add")
    assert _call_shown(trace, add)[1] == "3"


def test_the_openai_agents_sdk_traced_by_openllmetry() -> None:
    """OpenLLMetry's instrumentation of the same run: the SDK's errors as its dicts (its run's
    "{'message': 'Error in agent run', 'data': ...}" is the 500 again, not a third error), and
    no token counts: "0 in / 0 out" read as counted."""
    trace = loaded(openai_agents.failing_spans("openllmetry"))
    assert trace.summary() == (
        "failed, 1 tool error, 1 model error; first: step 1, get_weather in forecaster"
    )
    assert [e.kind for e in trace.errors()] == ["tool", "model"]
    assert trace_summary(trace)["tokens"] == "not recorded by the tracer"


def test_the_agents_sdk_is_traced_after_a_test_turned_its_tracing_off() -> None:
    """The SDK's tracing is one switch for the process: the proxy's client tests turn it off
    (tests/clients, before this file), and the whole suite's run then traced nothing here."""
    import agents

    agents.set_tracing_disabled(True)
    assert loaded(openai_agents.failing_spans()).errors()


def test_a_langgraph_agent_whose_model_call_failed() -> None:
    """A LangGraph ReAct agent whose second model call got a 500 read "failed, 1 failed span:
    call_model", agent "—": the exception fails the node, its chains and the graph on its way
    out, and a chain the tracer made the call's sibling was named instead of the call."""
    trace = loaded(langgraph_react.traced_spans(server_error=True))
    assert trace.summary() == "failed, 1 model error: step 2, ChatOpenAI in adder"
    (error,) = trace.errors()
    assert error.type == "langchain_openai.chat_models.base.OpenAIAPIError"
    assert error.traceback is not None and "openai.InternalServerError" in error.traceback
    assert trace_summary(trace)["agent"] == "adder"
    assert trace.steps_df()["agent"].tolist() == ["adder", "adder"]
    call = next(s for s in trace.spans if s.span_id == error.span_id)
    detail = span_detail_html(trace, call)
    head = detail[: detail.index("<br>")]  # the name, failed, and why in a line
    assert "OpenAIAPIError(" in head and "Traceback" not in head  # its traceback is below, once
    assert "wb-traceback" in detail


@pytest.mark.timeout(60)  # the errors of this trace took minutes: each compared with each
def test_a_trace_of_many_failures_says_each_once_without_reading_them_in_pairs() -> None:
    """30,000 failed spans of another framework, each its own failure: all are errors, and one
    said again in words of its own around them (an SDK's 'Error in agent run: ...') is not.

    Every error was compared with every one kept: 10,000 such spans took 15 s of CPU, where
    the spans load in a fraction of a second (0.09 s before errors were said once)."""
    top = wb.SpanData(trace_id="a" * 32, span_id=f"{1:016x}", name="workflow", start_ns=0, end_ns=9)
    failed = [
        wb.SpanData(
            trace_id=top.trace_id,
            span_id=f"{i + 2:016x}",
            parent_id=top.span_id,
            name=f"task {i}",
            start_ns=i,
            end_ns=i + 1,
            status="error",
            status_message=f"boom {i}",
        )
        for i in range(30_000)
    ]
    trace = wb.Trace.of([top, *failed])
    errors = trace.errors()
    assert [e.message for e in errors] == [f"boom {i}" for i in range(30_000)]
    assert "failed spans; first: task 0" in trace.summary()
    again = failed[7].model_copy(  # a span beside it, saying it again
        update={"span_id": f"{99:016x}", "name": "chain", "status_message": "Error in run: boom 7"}
    )
    errors = wb.Trace.of([top, *failed[:10], again]).errors()
    assert [e.name for e in errors] == [f"task {i}" for i in range(10)]


@pytest.mark.parametrize("said", ["{'message': 1, []: 2}", "{'message': 'x', 'data': {[]: 1}}"])
def test_an_error_that_looks_like_the_agents_sdks_but_is_not_is_kept_as_text(said: str) -> None:
    """A failed span's message read as the Agents SDK's dict, when it is one: a dict literal
    with a list for a key raised TypeError from Trace.errors(), and every view with it."""
    top = wb.SpanData(trace_id="a" * 32, span_id=f"{1:016x}", name="workflow", start_ns=0, end_ns=9)
    task = top.model_copy(update={"span_id": f"{2:016x}", "parent_id": top.span_id})
    failed = task.model_copy(update={"name": "task", "status": "error", "status_message": said})
    trace = wb.Trace.of([top, failed])
    assert [e.message for e in trace.errors()] == [said]
    assert trace.summary() == "ok, 1 failed span: task"


def test_openinference_langgraph() -> None:
    trace = loaded(langgraph_react.traced_spans())
    tool = next(s for s in trace.spans if s.category == "tool")
    assert tool.name == "add" and tool.attributes["tool.name"] == "add"
    frame = trace.spans_df()
    assert frame.loc[frame["category"] == "tool", "tool"].tolist() == ["add"]  # OpenInference's
    assert frame.loc[frame["category"] == "model", "input_tokens"].tolist() == [12, 20]
    steps = trace.steps_df()
    assert steps["tool_calls"].tolist() == [1, 0] and steps["tools"].tolist() == ["add", ""]
    assert steps["tools_ms"].notna().tolist() == [True, False]
    assert _call_shown(trace, tool) == ('{\n  "a": 1,\n  "b": 2\n}', "3")  # not the message JSON


def _call_shown(trace: wb.Trace, tool: Any) -> tuple[str, str]:
    """The arguments and the result the explorer shows of a tool call, as their boxes say them:
    OpenInference's tool span has them only as its input and output values (LangChain's tool
    message, as JSON, around the answer)."""
    detail = span_detail_html(trace, tool)
    boxes = re.findall(r"<h4[^>]*>(Arguments|Result)</h4><pre[^>]*>(.*?)</pre>", detail, re.S)
    shown = {title: html.unescape(text) for title, text in boxes}
    return shown.get("Arguments", ""), shown.get("Result", "")


def test_a_langgraph_agent_whose_tool_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LangGraph's tool node lets a tool's exception out of the graph: the tool, the node and the
    graph fail with it; one error, the tool's, in the step of the call that asked for it. Its
    legend no longer says the model read it (it never did)."""
    document = otlp_json(langgraph_react.traced_spans(tool_raises=True))
    trace = wb.load_trace(json.dumps(document))
    assert trace.summary() == "failed, 1 tool error: step 1, add in adder"
    (error,) = trace.errors()
    assert (error.type, error.message) == ("ValueError", "cannot add 1 and 2")
    assert error.traceback is not None and "in broken_add" in error.traceback
    assert failed_rows(trace) == [0]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    assert main(["trace", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "add (error)" in printed and "the model read it" not in printed


@pytest.mark.filterwarnings(  # the instrumentation's own models, when it is imported
    "ignore:Support for class-based `config` is deprecated:DeprecationWarning"
)
def test_openllmetry_as_it_writes_now() -> None:
    trace = wb.load_trace(json.dumps(openai_chat.traced("openllmetry")))
    assert [s.name for s in trace.spans] == ["openai.chat", "openai.chat"]
    assert categories(trace) == ["model", "model"]
    assert trace.steps_df()["input_tokens"].tolist() == [12, 20]
    assert trace.steps_df()["tools"].tolist() == ["add (asked for)", ""]
    assert [m.role for m in trace.messages(step=2)][-2:] == ["tool", "assistant"]


def test_openllmetry_as_it_wrote_in_mid_2025() -> None:
    trace = wb.load_trace(DATA / "openllmetry-0.40.14.otlp.json")
    first = trace.spans[0]
    assert first.attributes["llm.request.type"] == "chat"
    assert "gen_ai.operation.name" not in first.attributes  # what made it "other" before
    assert categories(trace) == ["model", "model"]
    steps = trace.steps_df()
    assert steps["input_tokens"].tolist() == [12, 20]  # gen_ai.usage.prompt_tokens
    assert steps["tools"].tolist() == ["add (asked for)", ""]
    messages = trace.messages(step=2)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    call = messages[2].parts[0]
    assert isinstance(call, wb.ToolCall) and (call.name, call.arguments) == (
        "add",
        {"a": 1, "b": 2},
    )
    assert [r["category"] for r in TraceExplorer(trace).rows] == ["model", "model"]


@pytest.mark.parametrize("conventions", ["older", "both"])
def test_our_spans_under_the_older_names_read_back_their_tokens(conventions: str) -> None:
    from tests.test_telemetry import calculator

    telemetry = wb.Telemetry(conventions=conventions)  # type: ignore[arg-type]
    result = calculator(telemetry).run_sync("What is 1 + 2?")
    chats = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert "gen_ai.usage.prompt_tokens" in (chats[0].attributes or {})
    frame = wb.trace_of(result, telemetry=telemetry).spans_df()
    tokens = frame.loc[frame["category"] == "model", "input_tokens"].tolist()
    assert tokens == [s.usage.input_tokens for s in result.steps if s.response is not None]
