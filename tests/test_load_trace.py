"""`wb.load_trace`: our files round-trip, foreign GenAI traces, Jaeger's API v3 on loopback,
and bad input (truncated, wrong shapes, bad ids, a backend down or slow, 100,000 spans)."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import threading
import time
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import workbench as wb
from bench.load_trace import SPANS, TRACE_ID, write_trace
from tests.foreign.openai_chat import ANSWERS
from tests.test_telemetry import GOLDEN, R, add, multiply, run_with_pause, save
from workbench.telemetry import names as n
from workbench.telemetry.files import jaeger_json, otlp_json
from workbench.telemetry.recover import messages_of_chat


def tree(trace: wb.Trace) -> list[Any]:
    """Spans folded as in the golden test: ``name KIND status=...`` labels, ids and times gone."""
    children: dict[str | None, list[wb.SpanData]] = {}
    for span in trace.spans:
        children.setdefault(span.parent_id, []).append(span)

    def label(span: wb.SpanData) -> str:
        keys = (n.RUN_STATUS, n.STEP_STATUS, n.TOOL_STATUS, n.ERROR_TYPE)
        extra = [
            f"{k.rsplit('.', 1)[-1]}={span.attributes[k]}" for k in keys if k in span.attributes
        ]
        return " ".join([span.name, span.kind, *extra])

    def node(span: wb.SpanData) -> Any:
        kids = sorted(children.get(span.span_id, []), key=lambda s: (s.start_ns, s.name))
        return {label(span): [node(k) for k in kids]} if kids else label(span)

    return [node(s) for s in children[None]]


@pytest.fixture(scope="module")
def live() -> tuple[wb.Telemetry, wb.RunResult, wb.RunResult]:
    telemetry = wb.Telemetry(capture_content=True)
    paused, done = run_with_pause(telemetry)
    return telemetry, paused, done


def test_our_otlp_file_round_trips(live: Any, tmp_path: Path) -> None:
    telemetry, paused, done = live
    path = telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    loaded = wb.load_trace(path)
    expected = telemetry.trace()
    assert loaded == expected  # every span, attribute, event, link, status, resource and scope
    assert tree(loaded) == GOLDEN
    assert wb.load_trace(path.read_text()) == expected  # the JSON as a string
    second = wb.load_trace(str(path), trace_id=done.trace_id)
    assert {s.trace_id for s in second.spans} == {done.trace_id} == {second.trace_id}
    assert second == telemetry.trace(done.trace_id)
    assert loaded.spans_df().equals(telemetry.spans_df())
    assert loaded.steps_df().equals(telemetry.steps_df())
    assert loaded.timing_df().equals(telemetry.timing_df())
    from workbench.notebook import TraceView

    view = TraceView(loaded)  # what TraceView draws, from a loaded trace
    assert len(view.table) == len(paused.steps) + len(done.steps)
    assert set(view.figures) >= {"waterfall"}


def test_our_jaeger_file_round_trips(live: Any, tmp_path: Path) -> None:
    telemetry, _, _ = live
    loaded = wb.load_trace(telemetry.write_jaeger_json(tmp_path / "run.jaeger.json"))
    assert tree(loaded) == GOLDEN
    expected = {s.span_id: s for s in telemetry.trace().spans}
    assert {s.span_id for s in loaded.spans} == expected.keys()
    for span in loaded.spans:
        original = expected[span.span_id]
        jaeger = {  # Jaeger has no arrays: they travel as JSON text
            k: json.dumps(list(v)) if isinstance(v, tuple) else v
            for k, v in original.attributes.items()
        }
        assert (span.name, span.parent_id, span.kind, span.status) == (
            original.name,
            original.parent_id,
            original.kind,
            original.status,
        )
        assert span.attributes == jaeger
        assert span.scope == "workbench" and span.resource["service.name"] == "workbench"
        # Jaeger keeps microseconds. Not a multiple of 1000 always: on a busy machine the resumed
        # run can start more than `waits.SHORTEST` after the pause, and closing that wait moves
        # the spans after it back by its length in nanoseconds (test_recorded_waits covers it)
        assert abs(span.start_ns - original.start_ns) < 1000
        assert [e.name for e in span.events] == [e.name for e in original.events]
        assert [(lk.trace_id, lk.span_id) for lk in span.links] == [
            (lk.trace_id, lk.span_id) for lk in original.links
        ]


def test_messages_recovered_from_captured_content(live: Any) -> None:
    telemetry, paused, _ = live
    trace = telemetry.trace(paused.trace_id)
    messages = trace.messages(step=2)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[0].text == "You are a calculator."
    assert messages[1].text == "What is 17 + 25, doubled? Save it."
    call = messages[2].parts[0]
    assert isinstance(call, wb.ToolCall) and call.arguments == {"a": 17, "b": "twenty-five"}
    answer = messages[-1].parts[0]
    assert isinstance(answer, wb.ToolCall) and answer.arguments == {"a": 17, "b": 25}
    with pytest.raises(wb.StepNotInTrace, match="no model call at step 9") as missing:
        trace.messages(step=9)
    assert isinstance(missing.value, LookupError) and isinstance(missing.value, wb.TraceLoadError)


CONVENTIONS_ONLY = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bot"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "some.framework"},
                    "spans": [
                        {
                            "traceId": "5b8efff798038103d269b633813fc60c",
                            "spanId": "eee19b7ec3c1b174",
                            "name": "chat gpt-4o",
                            "kind": "SPAN_KIND_CLIENT",
                            "startTimeUnixNano": "1700000000000000000",
                            "endTimeUnixNano": "1700000001000000000",
                            "attributes": [
                                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                {
                                    "key": "gen_ai.input.messages",
                                    "value": {
                                        "stringValue": json.dumps(
                                            [
                                                {
                                                    "role": "system",
                                                    "parts": [
                                                        {"type": "text", "content": "Be brief."}
                                                    ],
                                                },
                                                {
                                                    "role": "user",
                                                    "parts": [{"type": "text", "content": "Hi"}],
                                                },
                                            ]
                                        )
                                    },
                                },
                                {
                                    "key": "gen_ai.output.messages",
                                    "value": {
                                        "stringValue": json.dumps(
                                            [
                                                {
                                                    "role": "assistant",
                                                    "parts": [{"type": "text", "content": "Hello"}],
                                                    "finish_reason": "stop",
                                                }
                                            ]
                                        )
                                    },
                                },
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": 12}},
                            ],
                            "status": {"code": "STATUS_CODE_OK"},
                        }
                    ],
                }
            ],
        }
    ]
}


def test_a_conventions_trace_without_workbench_attributes() -> None:
    trace = wb.load_trace(json.dumps(CONVENTIONS_ONLY))
    (span,) = trace.spans
    assert (span.kind, span.status, span.scope) == ("CLIENT", "ok", "some.framework")
    assert span.attributes[n.USAGE_INPUT_TOKENS] == 12
    assert [(m.role, m.text) for m in trace.messages()] == [
        ("system", "Be brief."),
        ("user", "Hi"),
        ("assistant", "Hello"),
    ]
    assert [(m.role, m.text) for m in trace.messages(step=1)][-1] == ("assistant", "Hello")
    frame = trace.spans_df()
    assert list(frame["name"]) == ["chat gpt-4o"] and frame["status"][0] == "OK"


def test_a_pydantic_ai_trace_from_its_own_instrumentation() -> None:
    """pydantic-ai's spans (its TestModel, offline), exported as OTLP JSON, load with messages."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(
        TestModel(),
        instructions="Add numbers.",
        capabilities=[
            Instrumentation(
                settings=InstrumentationSettings(tracer_provider=provider, include_content=True)
            )
        ],
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    asyncio.run(agent.run("What is 1 + 2?"))  # its run_sync would leave an event loop open
    trace = wb.load_trace(json.dumps(otlp_json(exporter.get_finished_spans())))
    chats = trace.chat_spans()
    assert len(chats) == 2 and not any(k.startswith("workbench.") for k in chats[0].attributes)
    messages = trace.messages(step=2)
    roles = [m.role for m in messages]
    assert roles[0] == "system" and messages[0].text == "Add numbers."
    assert "user" in roles and any(
        isinstance(p, wb.ToolCall) and p.name == "add" for m in messages for p in m.parts
    )
    assert any(isinstance(p, wb.ToolResult) for m in messages for p in m.parts)


# -- Jaeger's query API v3 on loopback ---------------------------------------------------------


class _Jaeger(BaseHTTPRequestHandler):
    recorded: ClassVar[dict[str, Any]] = {}
    stall = threading.Event()

    def do_GET(self) -> None:
        if self.path.startswith("/api/v3/traces/slow"):
            self.stall.wait(5)
        trace_id = self.path.rsplit("/", 1)[-1]
        body = self.recorded.get(trace_id)
        if body is None:
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b'{"error": {"httpCode": 404, "message": "trace not found"}}')
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def jaeger(live: Any) -> Iterator[str]:
    telemetry, paused, _ = live
    spans = [s for s in telemetry.spans if format(s.context.trace_id, "032x") == paused.trace_id]
    _Jaeger.recorded = {paused.trace_id: {"result": otlp_json(spans)}}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Jaeger)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _Jaeger.stall.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
        _Jaeger.stall.clear()


def test_a_trace_from_jaegers_api_v3(live: Any, jaeger: str) -> None:
    telemetry, paused, _ = live
    trace = wb.load_trace(f"jaeger+{jaeger}/{paused.trace_id}")
    assert trace == telemetry.trace(paused.trace_id)
    assert tree(trace) == GOLDEN[:1]


JAEGER_GET_TRACE = {  # Jaeger's own snapshot of GET /api/v3/traces/{id} (apiv3/snapshots)
    "result": {
        "resourceSpans": [
            {
                "resource": {},
                "scopeSpans": [
                    {
                        "scope": {},
                        "spans": [
                            {
                                "endTimeUnixNano": "11651379494838206464",
                                "kind": 2,
                                "name": "foobar",
                                "parentSpanId": "",
                                "spanId": "00000000000000b4",
                                "startTimeUnixNano": "11651379494838206464",
                                "status": {"code": 2},
                                "traceId": "000000000000009600000000000000a0",
                            }
                        ],
                    }
                ],
            }
        ]
    }
}


def test_jaegers_recorded_answer(jaeger: str) -> None:
    _Jaeger.recorded["000000000000009600000000000000a0"] = JAEGER_GET_TRACE
    trace = wb.load_trace(f"jaeger+{jaeger}/000000000000009600000000000000A0")
    (span,) = trace.spans
    assert (span.trace_id, span.span_id, span.parent_id) == (
        "000000000000009600000000000000a0",
        "00000000000000b4",
        None,
    )
    assert (span.name, span.kind, span.status, span.start_ns) == (
        "foobar",
        "SERVER",
        "error",
        11651379494838206464,
    )


def test_a_backend_that_is_down_slow_or_without_the_trace(jaeger: str) -> None:
    missing = "0af7651916cd43dd8448eb211c80319c"
    with pytest.raises(wb.TraceLoadError, match="not found"):
        wb.load_trace(f"jaeger+{jaeger}/{missing}")
    with pytest.raises(wb.TraceLoadError, match="not a trace id"):
        wb.load_trace(f"jaeger+{jaeger}/1234")
    with pytest.raises(wb.TraceLoadError, match="not a trace id"):
        wb.load_trace(f"jaeger+{jaeger}/slow")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Jaeger)
    port = server.server_address[1]
    server.server_close()  # nothing listens there now
    with pytest.raises(wb.TraceLoadError, match="cannot reach"):
        wb.load_trace(f"jaeger+http://127.0.0.1:{port}/{missing}")


def test_a_slow_backend_is_bounded(jaeger: str) -> None:
    from workbench.telemetry._fetch import Fetch

    started = time.monotonic()
    with (
        Fetch(timeout=0.3) as fetch,
        pytest.raises(wb.TraceLoadError, match=r"did not answer within 0\.3s"),
    ):
        fetch.get(f"{jaeger}/api/v3/traces/slow")
    assert time.monotonic() - started < 4  # the server would stall for 5 s


# -- bad input ---------------------------------------------------------------------------------


def test_bad_files_and_shapes(live: Any, tmp_path: Path) -> None:
    telemetry, _, _ = live
    text = json.dumps(otlp_json(telemetry.spans))
    truncated = tmp_path / "cut.json"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(wb.TraceLoadError, match="not valid JSON"):
        wb.load_trace(truncated)
    with pytest.raises(wb.TraceLoadError, match="cannot read trace file"):
        wb.load_trace(tmp_path / "missing.json")
    empty = tmp_path / "empty.json"  # an exporter that never flushed
    empty.write_text("\n")
    with pytest.raises(wb.TraceLoadError, match=r"empty\.json is empty: no trace was written"):
        wb.load_trace(empty)
    packed = tmp_path / "run.otlp.json.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    with warnings.catch_warnings():  # not "bytes that are not UTF-8 were replaced" either
        warnings.simplefilter("error")
        with pytest.raises(wb.TraceLoadError, match="gz is gzip-compressed: decompress it"):
            wb.load_trace(packed)
    with pytest.raises(wb.TraceLoadError, match="not an OTLP/JSON or Jaeger JSON trace"):
        wb.load_trace('{"spans": []}')
    with pytest.raises(wb.TraceLoadError, match="not an OTLP/JSON or Jaeger JSON trace"):
        wb.load_trace("[1, 2]")
    with pytest.raises(wb.TraceLoadError, match="should be a list"):
        wb.load_trace('{"resourceSpans": {"x": 1}}')
    with pytest.raises(wb.TraceLoadError, match="no spans"):
        wb.load_trace('{"resourceSpans": []}')
    short = text.replace(format(telemetry.spans[0].context.span_id, "016x"), "abc123", 1)
    with pytest.raises(wb.TraceLoadError, match="not 8 bytes"):
        wb.load_trace(short)
    zero = json.loads(json.dumps(CONVENTIONS_ONLY))
    zero["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "0" * 32
    with pytest.raises(wb.TraceLoadError, match="all zero"):
        wb.load_trace(json.dumps(zero))
    jaeger = jaeger_json(telemetry.spans)
    jaeger["data"][0]["spans"][0]["traceID"] = "zz"
    with pytest.raises(wb.TraceLoadError, match="trace id"):
        wb.load_trace(json.dumps(jaeger))
    garbled = json.loads(json.dumps(CONVENTIONS_ONLY))
    attributes = garbled["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes[1]["value"]["stringValue"] = '[{"role": "user", "parts": [{"ty'
    with pytest.raises(wb.TraceLoadError, match=r"gen_ai\.input\.messages is not JSON"):
        wb.load_trace(json.dumps(garbled)).messages()


def test_snake_case_otlp_reads_as_camel_case() -> None:
    # protobuf's JSON mapping allows both spellings of every field name
    def snake(value: Any) -> Any:
        if isinstance(value, dict):
            return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): snake(v) for k, v in value.items()}
        return [snake(v) for v in value] if isinstance(value, list) else value

    document = snake(CONVENTIONS_ONLY)
    assert "resource_spans" in document and "resourceSpans" not in json.dumps(document)
    assert wb.load_trace(json.dumps(document)) == wb.load_trace(json.dumps(CONVENTIONS_ONLY))


def test_a_span_field_of_the_wrong_shape_is_named() -> None:
    for field, value in (("status", "ok"), ("events", {"name": "x"}), ("attributes", "a=1")):
        document = json.loads(json.dumps(CONVENTIONS_ONLY))
        document["resourceSpans"][0]["scopeSpans"][0]["spans"][0][field] = value
        with pytest.raises(wb.TraceLoadError, match=r"expected an object|should be a list"):
            wb.load_trace(json.dumps(document))


def test_base64_ids_big_ints_and_nan(tmp_path: Path) -> None:
    document = json.loads(json.dumps(CONVENTIONS_ONLY))
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"] = "W47/95gDgQPSabYzgT/GDA=="  # protobuf's JSON mapping: base64
    span["spanId"] = "7uGbfsPBsXQ="
    span["attributes"] += [
        {"key": "big", "value": {"intValue": str(2**63 - 1)}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
    ]
    (loaded,) = wb.load_trace(json.dumps(document)).spans
    assert (loaded.trace_id, loaded.span_id) == (
        "5b8efff798038103d269b633813fc60c",
        "eee19b7ec3c1b174",
    )
    assert (
        loaded.attributes["big"] == 2**63 - 1
        and loaded.attributes["nan"] != loaded.attributes["nan"]
    )


def test_a_trace_of_100000_spans_loads_in_seconds(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    write_trace(path)  # bench/load_trace.py times the same file
    started, cpu = time.perf_counter(), time.process_time()
    trace = wb.load_trace(path)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"100,000 spans loaded in {seconds:.2f}s ({cpu:.2f}s of CPU)")  # a figure, not a limit
    assert len(trace.spans) == SPANS == 100_000 and trace.trace_id == TRACE_ID


# -- re-run from a trace -----------------------------------------------------------------------


def test_rerun_from_a_loaded_trace_without_the_store(live: Any, tmp_path: Path) -> None:
    telemetry, paused, _ = live
    trace = wb.load_trace(
        telemetry.write_otlp_json(tmp_path / "run.json"), trace_id=paused.trace_id
    )
    rerun_telemetry = wb.Telemetry()
    agent = wb.Agent(
        model=wb.ScriptedModel([R.text("42, no need to save.")], name="scripted"),
        name="calc",
        system_prompt="You are a calculator.",
        tools=[add, multiply, save],
        telemetry=rerun_telemetry,
        store=False,
    )
    result = agent.rerun_from_trace_sync(trace, step=2)
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == "42, no need to save."
    # the conversation at step 2 came from the spans: as the original run had it
    original = paused.snapshots[1].state.messages
    sent = agent.model.calls[0].messages  # type: ignore[attr-defined]
    assert [(m.role, m.text) for m in sent] == [(m.role, m.text) for m in original]
    assert result.steps[0].index == 2 and result.state.rerun_of is not None
    assert result.state.rerun_of.run_id == paused.run_id and result.state.rerun_of.step == 2
    run_span = next(s for s in rerun_telemetry.spans if s.name.startswith("invoke_agent"))
    (link,) = run_span.links
    step_span = next(
        s for s in trace.spans if s.name == "workbench.step 2" and s.trace_id == paused.trace_id
    )
    assert format(link.context.trace_id, "032x") == paused.trace_id
    assert format(link.context.span_id, "016x") == step_span.span_id
    assert (link.attributes or {})[n.LINK_REASON] == "origin"
    assert (run_span.attributes or {})[n.RERUN_OF] == paused.run_id


def test_rerun_from_a_trace_without_content_says_why(tmp_path: Path) -> None:
    telemetry = wb.Telemetry()  # no capture_content
    result = wb.Agent(model=wb.ScriptedModel(["hi"]), telemetry=telemetry, store=False).run_sync(
        "x"
    )
    trace = telemetry.trace(result.trace_id)
    agent = wb.Agent(model=wb.ScriptedModel(["again"]), store=False)
    with pytest.raises(wb.TraceLoadError, match="capture_content=True"):
        agent.rerun_from_trace_sync(trace, step=1)
    with pytest.raises(wb.StepNotInTrace, match="no model call at step 5"):  # as messages()
        agent.rerun_from_trace_sync(trace, step=5)


def test_an_openinference_trace_from_its_own_instrumentation() -> None:
    """OpenInference's OpenAI instrumentation (offline: the client's transport answers) writes
    flattened ``llm.*_messages`` attributes; the messages come back from them."""
    import httpx
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    answer = ANSWERS[0]  # the tool call of the two-call loop the foreign traces record
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=answer))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(
            api_key="sk-test",
            base_url="http://llm.test/v1",
            http_client=httpx.Client(transport=transport),
        )
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You add."},
                {"role": "user", "content": "1 + 2?"},
            ],
        )
    finally:
        instrumentor.uninstrument()
    trace = wb.load_trace(json.dumps(otlp_json(exporter.get_finished_spans())))
    (span,) = trace.spans
    assert "llm.input_messages.0.message.role" in span.attributes
    messages = trace.messages()
    assert messages == messages_of_chat(span.attributes)
    assert [(m.role, m.text) for m in messages[:2]] == [("system", "You add."), ("user", "1 + 2?")]
    call = messages[2].parts[0]
    assert isinstance(call, wb.ToolCall) and (call.name, call.arguments) == (
        "add",
        {"a": 1, "b": 2},
    )
    assert call.call_id == "call_1"


def test_a_recorded_call_whose_arguments_are_no_json_object_keeps_their_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gemma-3-270m through pydantic-ai sent a call with arguments ``{"``; pydantic-ai's
    validation error came back for it, and the recovered conversation showed the call as
    ``get_weather({})``. Each reader keeps the text, as the loop keeps a model's."""
    conventions = {
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Paris?"}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": '{"'},
                        {"type": "tool_call", "id": "c2", "name": "add", "arguments": "[1, 2]"},
                        {"type": "tool_call", "id": "c3", "name": "now", "arguments": ""},
                    ],
                }
            ]
        ),
    }
    flattened = {
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "c1",
        "gen_ai.completion.0.tool_calls.0.name": "get_weather",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"',
    }
    for attributes in (conventions, flattened):
        call = messages_of_chat(attributes)[-1].parts[0]
        assert isinstance(call, wb.ToolCall)
        assert (call.name, call.arguments, call.invalid_arguments) == ("get_weather", {}, '{"')
    listed, empty = messages_of_chat(conventions)[-1].parts[1:]
    assert isinstance(listed, wb.ToolCall) and listed.invalid_arguments == "[1, 2]"
    assert isinstance(empty, wb.ToolCall) and (empty.arguments, empty.invalid_arguments) == (
        {},
        None,
    )

    span = CONVENTIONS_ONLY["resourceSpans"][0]["scopeSpans"][0]["spans"][0]  # type: ignore[index]
    document = json.loads(json.dumps(CONVENTIONS_ONLY))
    chat = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    chat["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.output.messages"]
    chat["attributes"].append(
        {
            "key": "gen_ai.output.messages",
            "value": {"stringValue": conventions["gen_ai.output.messages"]},
        }
    )
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    from workbench.cli import main

    assert main(["trace", str(path), "--messages"]) == 0
    assert 'call get_weather({") [c1]' in capsys.readouterr().out
