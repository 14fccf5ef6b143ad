"""Traces loaded back from hand-made documents: damaged trees, odd units, secrets, bad bytes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import workbench as wb

TRACE = "5b8efff798038103d269b633813fc60c"
SECRET = "sk-proj-Abc123Def456Ghi789Jkl012"


def _messages(*texts: str) -> str:
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": t}]} for t in texts])


def span(
    span_id: str,
    name: str,
    parent: str | None = None,
    start: int = 1_700_000_000_000_000_000,
    attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One OTLP/JSON span of trace `TRACE`, lasting one second."""
    encoded: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1_000_000_000),
        "attributes": [
            {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
            for k, v in (attributes or {}).items()
        ],
    }
    if parent is not None:
        encoded["parentSpanId"] = parent
    return encoded


def document(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def jaeger_document(*spans: dict[str, Any]) -> str:
    """A Jaeger JSON file of trace `TRACE` holding ``spans`` (each given the trace's id)."""
    with_ids = [{"traceID": TRACE, **s} for s in spans]
    return json.dumps({"data": [{"traceID": TRACE, "spans": with_ids}]})


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": _messages("Hi")}


@pytest.mark.timeout(20)
def test_rerun_from_a_trace_whose_parents_form_a_cycle_ends() -> None:
    """A damaged file can make parents loop (a <- b <- a); looking for the run span must stop."""
    trace = wb.load_trace(
        document(
            span("00000000000000a1", "step", parent="00000000000000a2"),
            span("00000000000000a2", "prepare", parent="00000000000000a1"),
            span("00000000000000c1", "chat m", parent="00000000000000a1", attributes=CHAT),
        )
    )
    agent = wb.Agent(model=wb.ScriptedModel(["Hello"]), store=False)
    result = agent.rerun_from_trace_sync(trace, step=1)
    assert [(m.role, m.text) for m in result.messages] == [("user", "Hi"), ("assistant", "Hello")]


@pytest.mark.parametrize(
    "source",
    [
        document({**span("00000000000000a1", "x"), "spanId": SECRET}),
        document({**span("00000000000000a1", "x"), "traceId": SECRET}),
        document({**span("00000000000000a1", "x"), "startTimeUnixNano": SECRET}),
        json.dumps({SECRET: 1}),
        f"/nonexistent/{SECRET}.json",
        f"jaeger+http://127.0.0.1:9/{SECRET}",
    ],
    ids=["span id", "trace id", "time", "keys", "path", "backend trace id"],
)
def test_a_key_in_what_cannot_be_read_stays_out_of_the_error(source: str) -> None:
    """Errors quote what they could not read; a key there is redacted, the rest still said."""
    with pytest.raises(wb.TraceLoadError) as caught:
        wb.load_trace(source)
    assert "sk-proj" not in str(caught.value) and "[REDACTED]" in str(caught.value)


def test_a_key_in_unreadable_content_stays_out_of_the_error() -> None:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": f'[{{"{SECRET}'}
    trace = wb.load_trace(document(span("00000000000000c1", "chat m", attributes=attributes)))
    with pytest.raises(wb.TraceLoadError, match=r"gen_ai\.input\.messages") as caught:
        trace.messages()
    assert "sk-proj" not in str(caught.value)
    not_a_message = {**attributes, "gen_ai.input.messages": json.dumps([{"text": SECRET}])}
    trace = wb.load_trace(document(span("00000000000000c1", "chat m", attributes=not_a_message)))
    with pytest.raises(wb.TraceLoadError, match="not a message") as caught:
        trace.messages()
    assert "sk-proj" not in str(caught.value)


@pytest.mark.parametrize("unit", [1_000_000_000, 1_000_000, 1_000], ids=["s", "ms", "us"])
def test_epoch_times_written_in_another_unit_are_read_as_nanoseconds(unit: int) -> None:
    """A hand-written exporter's seconds, milliseconds or microseconds: not a span of 1970."""
    start_ns = 1_700_000_000_000_000_000
    encoded = span("00000000000000a1", "work", start=start_ns // unit)
    encoded["endTimeUnixNano"] = str((start_ns + 2_000_000_000) // unit)
    encoded["events"] = [{"name": "mark", "timeUnixNano": str((start_ns + 1_000_000_000) // unit)}]
    (loaded,) = wb.load_trace(document(encoded)).spans
    assert (loaded.start_ns, loaded.end_ns) == (start_ns, start_ns + 2_000_000_000)
    assert loaded.events[0].time_ns == start_ns + 1_000_000_000


def test_a_jaeger_file_with_nanosecond_times_is_read_as_nanoseconds() -> None:
    """Jaeger's times are microseconds; a file written with nanoseconds is not 1000x too late."""
    start_ns = 1_700_000_000_000_000_000
    jaeger = jaeger_document(
        {
            "spanID": "00000000000000a1",
            "operationName": "work",
            "startTime": start_ns,
            "duration": 2_000_000_000,
            "logs": [{"timestamp": start_ns + 1_000_000_000, "fields": []}],
        }
    )
    (loaded,) = wb.load_trace(jaeger).spans
    assert (loaded.start_ns, loaded.end_ns) == (start_ns, start_ns + 2_000_000_000)
    assert loaded.events[0].time_ns == start_ns + 1_000_000_000


def test_relative_times_are_kept() -> None:
    """Small times (a test's, a clock from zero) are no epoch time in any unit: kept as they are."""
    (loaded,) = wb.load_trace(document(span("00000000000000a1", "work", start=5))).spans
    assert loaded.start_ns == 5


def _chat_with(text: str) -> dict[str, Any]:
    return span(
        "00000000000000c1",
        "chat m",
        attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": _messages(text)},
    )


def test_bytes_that_are_not_utf8_are_replaced_not_the_whole_file_refused(tmp_path: Any) -> None:
    """One bad byte in one value (a latin-1 writer, a cut multi-byte character) costs that byte."""
    path = tmp_path / "trace.json"
    latin1 = document(_chat_with("cafXX ok")).encode().replace(b"XX", b"\xe9")
    path.write_bytes(latin1)
    with pytest.warns(UserWarning, match="not UTF-8") as warned:
        trace = wb.load_trace(path)
    assert warned[0].filename == __file__  # the warning points at the caller's line
    assert trace.messages()[0].text == "caf\N{REPLACEMENT CHARACTER} ok"


def test_a_lone_surrogate_escape_is_replaced_so_the_views_can_encode_it() -> None:
    """JSON written by a tracer that cut a string inside a UTF-16 pair holds ``\\ud83d`` alone;
    Python reads it as a lone surrogate, which no UTF-8 page, file or Jupyter message can hold.
    It can be in the document (OpenInference's flat attributes) or in the JSON of an attribute
    (the conventions' messages)."""
    from workbench.notebook import TraceExplorer

    flat = span(
        "00000000000000c1",
        "chat m",
        attributes={
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "cut \N{GRINNING FACE} here",
        },
    )
    in_document = document(flat).replace("\\ude00", "")  # the document's \ude00 escape
    in_attribute = document(_chat_with("cut \N{GRINNING FACE} here")).replace("\\\\ude00", "")
    for text in (in_document, in_attribute):
        assert "\\ud83d" in text and "\\ude00" not in text
        trace = wb.load_trace(text)
        assert trace.messages()[0].text == "cut \N{REPLACEMENT CHARACTER} here"
    explorer = TraceExplorer(wb.load_trace(in_document))
    explorer.select("00000000000000c1")
    assert "cut \N{REPLACEMENT CHARACTER} here" in explorer.detail.encode("utf-8").decode()
    whole = wb.load_trace(document(_chat_with("whole \N{GRINNING FACE}")))
    assert whole.messages()[0].text == "whole \N{GRINNING FACE}"


def test_a_key_in_a_loaded_trace_is_redacted_as_in_every_trace_we_write() -> None:
    """A foreign tracer may have recorded a key (a header, an error message): it is redacted on
    the way in, so no repr, view, DataFrame or report of the trace shows it."""
    from workbench.notebook import TraceExplorer

    leaky = span("00000000000000a1", "call", attributes={"http.header": f"Bearer {SECRET}"})
    leaky["status"] = {"code": 2, "message": f"bad key {SECRET}"}
    leaky["events"] = [
        {
            "name": "exception",
            "timeUnixNano": leaky["startTimeUnixNano"],
            "attributes": [{"key": "exception.message", "value": {"stringValue": SECRET}}],
        }
    ]
    jaeger = jaeger_document(
        {
            "spanID": "00000000000000a1",
            "operationName": "call",
            "startTime": 1_700_000_000_000_000,
            "duration": 1,
            "tags": [
                {"key": "note", "type": "string", "value": f"key {SECRET}"},
                {"key": "otel.status_description", "type": "string", "value": SECRET},
            ],
            "logs": [{"timestamp": 1, "fields": [{"key": "m", "value": SECRET}]}],
        }
    )
    for source in (document(leaky), jaeger):
        trace = wb.load_trace(source)
        (loaded,) = trace.spans
        explorer = TraceExplorer(trace)
        explorer.select("00000000000000a1")
        shown = [repr(loaded), str(loaded), explorer.detail, trace.spans_df().to_string()]
        assert not any("sk-proj" in text for text in shown)
        assert "[REDACTED]" in repr(loaded)


def test_a_key_in_a_loaded_spans_name_its_events_or_scope_is_redacted() -> None:
    """Some tracers name a span after its URL (``GET https://host/?api_key=...``)."""
    leaky = span("00000000000000a1", f"GET https://host/v1?key={SECRET}")
    leaky["events"] = [{"name": f"retry with {SECRET}", "timeUnixNano": leaky["startTimeUnixNano"]}]
    otlp = json.dumps(
        {"resourceSpans": [{"scopeSpans": [{"scope": {"name": SECRET}, "spans": [leaky]}]}]}
    )
    jaeger = jaeger_document(
        {
            "spanID": "00000000000000a1",
            "operationName": f"GET https://host/v1?key={SECRET}",
            "startTime": 1_700_000_000_000_000,
            "duration": 1,
            "logs": [{"timestamp": 1, "fields": [{"key": "event", "value": SECRET}]}],
        }
    )
    snake = otlp.replace('"scopeSpans"', '"scope_spans"')  # left by the decoder to the reader
    for source in (otlp, snake, jaeger):
        (loaded,) = wb.load_trace(source).spans
        assert "sk-proj" not in repr(loaded) and "[REDACTED]" in loaded.name


def test_a_key_read_from_a_trace_is_not_remembered_by_the_reader() -> None:
    """The reader remembers short strings it has redacted (names repeat span after span), but
    only those redaction leaves alone: the process must not hold a key after its trace."""
    from workbench.telemetry import span_fields

    attributes = {"http.header": f"Bearer {SECRET}", "peer.name": "host-a1"}
    wb.load_trace(document(span("00000000000000a1", "call", attributes=attributes)))
    assert "host-a1" in span_fields._CLEAN
    assert not any(SECRET in text for text in span_fields._CLEAN)


def test_a_file_with_a_byte_order_mark_loads(tmp_path: Any) -> None:
    """Windows tools (PowerShell's Out-File, Notepad) start UTF-8 files with a BOM."""
    path = tmp_path / "trace.json"
    path.write_bytes(b"\xef\xbb\xbf" + document(span("00000000000000a1", "work")).encode())
    assert [s.name for s in wb.load_trace(path).spans] == ["work"]


def test_a_json_text_with_a_byte_order_mark_loads(tmp_path: Any) -> None:
    """A text read from such a file (``open(path, encoding="utf-8").read()``) keeps its BOM."""
    text = "\ufeff" + document(span("00000000000000a1", "work"))
    assert [s.name for s in wb.load_trace(text).spans] == ["work"]
    with pytest.raises(wb.TraceLoadError, match="not an OTLP/JSON or Jaeger JSON"):
        wb.load_trace("\ufeff\n  [1]")  # JSON after the BOM and a line break: still JSON


def test_a_file_whose_name_starts_like_json_is_read_as_a_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[run 3] trace.json`` is a file's name, not a JSON text that failed to parse."""
    monkeypatch.chdir(tmp_path)
    for name in ("[run 3] trace.json", "{draft}.json"):
        (tmp_path / name).write_text(document(span("00000000000000a1", "work")))
        assert [s.name for s in wb.load_trace(name).spans] == ["work"]
        assert [s.name for s in wb.load_trace(str(tmp_path / name)).spans] == ["work"]
    with pytest.raises(wb.TraceLoadError, match="not valid JSON"):
        wb.load_trace("[not a file")


def test_a_source_that_cannot_be_read_is_not_quoted_whole() -> None:
    """A long text that is not JSON is taken for a path: the error names it, not its text."""
    text = "<html>" + "x" * 5000 + "</html>"
    with pytest.raises(wb.TraceLoadError, match="cannot read trace file the JSON text") as caught:
        wb.load_trace(text)
    assert len(str(caught.value)) < 200


def test_json_lines_of_several_requests_load_as_one_trace(tmp_path: Any) -> None:
    """The OpenTelemetry Collector's file exporter writes one request per batch, one a line."""
    path = tmp_path / "collector.jsonl"
    first = document(span("00000000000000a1", "run"))
    second = document(span("00000000000000a2", "step", parent="00000000000000a1", start=2))
    path.write_text(f"{first}\n{second}\n", encoding="utf-8")
    assert sorted(s.name for s in wb.load_trace(path).spans) == ["run", "step"]


def test_a_bad_span_in_a_collectors_file_is_placed_by_its_line(tmp_path: Any) -> None:
    """Each line's request starts again at ``resourceSpans[0]``: the error says which line."""
    path = tmp_path / "collector.jsonl"
    lines = [document(span(f"00000000000000a{i}", "step")) for i in range(1, 4)]
    lines.append(document(span("zz", "bad")))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(wb.TraceLoadError, match=r"^\[3\]: resourceSpans\[0\]\.scopeSpans\[0\]"):
        wb.load_trace(path)


class _Chunks(BaseHTTPRequestHandler):
    """Jaeger's API v3 answers GetTrace as a stream: ``{"result": ...}`` chunks one after
    another, or (newer versions) a JSON array of them."""

    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def _serve(body: bytes) -> ThreadingHTTPServer:
    handler = type("Fixed", (_Chunks,), {"body": body})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("shape", ["one after another", "array"])
def test_jaegers_streamed_answer_in_several_chunks(shape: str) -> None:
    chunks = [
        {"result": json.loads(document(span("00000000000000a1", "run")))},
        {"result": json.loads(document(span("00000000000000a2", "step", "00000000000000a1")))},
    ]
    text = "\n".join(map(json.dumps, chunks)) if shape != "array" else json.dumps(chunks)
    server = _serve(text.encode())
    try:
        trace = wb.load_trace(f"jaeger+http://127.0.0.1:{server.server_address[1]}/{TRACE}")
    finally:
        server.shutdown()
        server.server_close()
    assert sorted(s.name for s in trace.spans) == ["run", "step"]


@pytest.mark.timeout(20)
def test_a_phoenix_that_repeats_its_page_cursor_is_an_error_not_a_hang() -> None:
    """A server (or proxy cache) answering every page with the same ``next_cursor`` must not
    make the loader page forever."""
    page = {"data": [span("00000000000000a1", "run")], "next_cursor": "same"}
    server = _serve(json.dumps(page).encode())
    try:
        with pytest.raises(wb.TraceLoadError, match="same"):
            wb.load_trace(f"phoenix+http://127.0.0.1:{server.server_address[1]}/default/{TRACE}")
    finally:
        server.shutdown()
        server.server_close()


def test_a_parent_comes_before_the_children_that_start_with_it() -> None:
    """A run, its first step and the step's first phase start at one instant (the clock's
    resolution); in start order the parent comes first, in `Trace.spans` and in `spans_df`."""
    trace = wb.load_trace(
        document(
            span("00000000000000a3", "prepare", parent="00000000000000a2"),
            span("00000000000000a2", "step 1", parent="00000000000000a1"),
            span("00000000000000a4", "chat", "00000000000000a2", start=1_700_000_000_000_000_001),
            span("00000000000000a1", "run"),
        )
    )
    assert [s.name for s in trace.spans] == ["run", "step 1", "prepare", "chat"]
    assert list(trace.spans_df()["name"]) == ["run", "step 1", "prepare", "chat"]


def test_the_live_spans_frame_puts_the_run_first() -> None:
    telemetry = wb.Telemetry()
    wb.Agent(model=wb.ScriptedModel(["Hello"]), telemetry=telemetry, store=False).run_sync("Hi")
    names = list(telemetry.spans_df()["name"])
    assert names[0].startswith("invoke_agent") and names.index("workbench.step 1") < names.index(
        "workbench.prepare"
    )


def test_messages_of_a_file_holding_several_runs_say_which_to_pick() -> None:
    """Step 1 of which run? Two runs' model calls are not one conversation."""
    other = "0af7651916cd43dd8448eb211c80319c"
    later = 1_700_000_005_000_000_000
    ours = {**CHAT, "workbench.step.index": 1, "workbench.run.id": "run_1"}
    theirs = {**ours, "workbench.run.id": "run_2"}
    second = {
        **span("00000000000000b1", "chat m", start=later, attributes=theirs),
        "traceId": other,
    }
    text = document(span("00000000000000a1", "chat m", attributes=ours), second)
    trace = wb.load_trace(text)
    agent = wb.Agent(model=wb.ScriptedModel(["Hello"]), store=False)
    for attempt in (trace.messages, lambda: trace.messages(step=1)):
        with pytest.raises(wb.TraceLoadError, match=f"{TRACE}.*{other}.*trace_id="):
            attempt()
    with pytest.raises(wb.TraceLoadError, match="trace_id="):
        agent.rerun_from_trace_sync(trace, step=1)
    one = wb.load_trace(text, trace_id=other)
    assert [m.text for m in one.messages(step=1)] == ["Hi"]
    assert agent.rerun_from_trace_sync(one, step=1).output == "Hello"


def test_the_traces_of_one_run_paused_and_resumed_are_one_conversation() -> None:
    """A resumed execution is a new trace of the same run: its steps carry on the numbering."""
    run = {**CHAT, "workbench.run.id": "run_1", "workbench.step.index": 1}
    resumed = {**run, "workbench.step.index": 2, "gen_ai.input.messages": _messages("Hi", "Go")}
    later = 1_700_000_005_000_000_000
    second = {
        **span("00000000000000b1", "chat m", start=later, attributes=resumed),
        "traceId": "0af7651916cd43dd8448eb211c80319c",
    }
    trace = wb.load_trace(document(span("00000000000000a1", "chat m", attributes=run), second))
    assert [m.text for m in trace.messages(step=2)] == ["Hi", "Go"]


OPENINFERENCE_CHAT = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4o-mini",
    "llm.token_count.prompt": 11,
    "llm.token_count.completion": 7,
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Hi",
}


def test_openinference_model_and_tokens_show_in_the_frames_and_the_rerun() -> None:
    """OpenInference (Phoenix, its instrumentations) names the model and the token counts
    ``llm.model_name`` and ``llm.token_count.*``: the columns and the re-run read them too."""
    later = 1_700_000_002_000_000_000
    trace = wb.load_trace(
        document(
            span("00000000000000c1", "ChatCompletion", attributes=OPENINFERENCE_CHAT),
            span("00000000000000c2", "ChatCompletion", start=later, attributes=OPENINFERENCE_CHAT),
        )
    )
    frame = trace.spans_df()
    assert list(frame["model"]) == ["gpt-4o-mini"] * 2
    assert list(frame["input_tokens"]) == [11, 11] and list(frame["output_tokens"]) == [7, 7]
    result = wb.Agent(model=wb.ScriptedModel(["Hello"]), store=False).rerun_from_trace_sync(
        trace, step=2
    )
    uncounted = {k: v for k, v in OPENINFERENCE_CHAT.items() if "token_count" not in k}
    without = wb.load_trace(
        document(
            span("00000000000000c1", "ChatCompletion", attributes=uncounted),
            span("00000000000000c2", "ChatCompletion", start=later, attributes=uncounted),
        )
    )
    baseline = wb.Agent(model=wb.ScriptedModel(["Hello"]), store=False).rerun_from_trace_sync(
        without, step=2
    )
    # the first call's tokens are carried into the re-run, as a traced run's budget counts them
    assert result.usage.input_tokens - baseline.usage.input_tokens == 11


def test_a_foreign_traces_steps_are_its_model_calls_in_the_step_table() -> None:
    """A trace with no ``workbench.step`` spans (pydantic-ai's, OpenInference's) numbers its
    model calls as `Trace.messages` and `rerun_from_trace` do: TraceView's table is not empty."""
    from workbench.notebook import TraceView

    later = 1_700_000_002_000_000_000
    first = {**CHAT, "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 3}
    second = {**CHAT, "gen_ai.usage.input_tokens": 25, "gen_ai.usage.output_tokens": 4}
    trace = wb.load_trace(
        document(
            span("00000000000000a1", "invoke_agent a"),
            span("00000000000000c1", "chat m", parent="00000000000000a1", attributes=first),
            span("00000000000000c2", "chat m", "00000000000000a1", later, second),
        )
    )
    steps = trace.steps_df()
    assert list(steps["step"]) == [1, 2]
    assert list(steps["input_tokens"]) == [20, 25] and list(steps["output_tokens"]) == [3, 4]
    assert list(steps["inference_ms"]) == list(steps["duration_ms"]) == [1000.0, 1000.0]
    view = TraceView(trace)
    assert len(view.table) == 2
    tokens = view.figures["tokens"]
    assert [list(bar.y) for bar in tokens.data[:2]] == [[20, 25], [3, 4]]
    openinference = wb.load_trace(
        document(
            span("00000000000000c1", "ChatCompletion", attributes=OPENINFERENCE_CHAT),
            span("00000000000000c2", "ChatCompletion", start=later, attributes=OPENINFERENCE_CHAT),
        )
    )
    assert list(openinference.steps_df()["input_tokens"]) == [11, 11]


def test_another_frameworks_calls_each_in_a_trace_of_its_own_are_numbered_across_the_file() -> None:
    """OpenInference's OpenAI instrumentation makes a trace per call when nothing encloses them."""
    later = 1_700_000_005_000_000_000
    first = {**OPENINFERENCE_CHAT, "llm.output_messages.0.message.role": "assistant"}
    second = {
        **OPENINFERENCE_CHAT,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "Again",
    }
    trace = wb.load_trace(
        document(
            span("00000000000000c1", "ChatCompletion", attributes=first),
            {
                **span("00000000000000c2", "ChatCompletion", start=later, attributes=second),
                "traceId": "0af7651916cd43dd8448eb211c80319c",
            },
        )
    )
    assert [m.text for m in trace.messages(step=2)] == ["Hi", "Again"]
    assert list(trace.steps_df()["step"]) == [1, 2]


@pytest.mark.parametrize("source", ["", "   \n"], ids=["empty", "blank"])
def test_an_empty_source_says_so(source: str) -> None:
    """Not "cannot read trace file .: Is a directory" (an empty path is the current one)."""
    with pytest.raises(wb.TraceLoadError, match="empty"):
        wb.load_trace(source)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"doubleValue": "oops"}, "'oops' is not a number"),
        ({"intValue": "12.5"}, "'12.5' is not an integer"),
    ],
    ids=["double", "int"],
)
def test_a_malformed_number_attribute_is_a_trace_load_error(
    value: dict[str, Any], message: str
) -> None:
    """A TraceLoadError like every other unreadable part, and not called a time."""
    encoded = span("00000000000000a1", "x")
    encoded["attributes"] = [{"key": "k", "value": value}]
    with pytest.raises(wb.TraceLoadError, match=message) as caught:
        wb.load_trace(document(encoded))
    assert "time" not in str(caught.value)
    jaeger_tag = {"key": "k", "type": "float64" if "double" in str(value) else "int64"}
    jaeger = jaeger_document(
        {
            "spanID": "00000000000000a1",
            "operationName": "x",
            "startTime": 1,
            "duration": 1,
            "tags": [{**jaeger_tag, "value": next(iter(value.values()))}],
        }
    )
    with pytest.raises(wb.TraceLoadError, match=message):
        wb.load_trace(jaeger)


def test_a_step_the_trace_does_not_have_names_the_steps_it_has() -> None:
    later = 1_700_000_002_000_000_000
    trace = wb.load_trace(
        document(
            span("00000000000000c1", "chat m", attributes=CHAT),
            span("00000000000000c2", "chat m", start=later, attributes=CHAT),
        )
    )
    with pytest.raises(LookupError, match=r"step 3 .*1, 2"):
        trace.messages(step=3)
    agent = wb.Agent(model=wb.ScriptedModel(["Hello"]), store=False)
    with pytest.raises(wb.TraceLoadError, match=r"step 3 .*1, 2"):
        agent.rerun_from_trace_sync(trace, step=3)


def test_a_jaeger_span_kind_outside_the_five_is_internal_as_in_otlp() -> None:
    """``Trace`` documents ``kind`` as one of OTel's five names; Jaeger files can say anything."""
    jaeger = jaeger_document(
        *[
            {
                "spanID": f"00000000000000a{i}",
                "operationName": kind,
                "startTime": 1,
                "duration": 1,
                "tags": [{"key": "span.kind", "type": "string", "value": kind}],
            }
            for i, kind in enumerate(["client", "unspecified", "<b>x</b>"])
        ]
    )
    kinds = {s.name: s.kind for s in wb.load_trace(jaeger).spans}
    assert kinds == {"client": "CLIENT", "unspecified": "INTERNAL", "<b>x</b>": "INTERNAL"}
