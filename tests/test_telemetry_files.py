"""Telemetry destinations: the Jaeger UI file, the OTLP/JSON file, the DataFrames, and spans
rebuilt from stored records (what ``workbench export`` and ``push`` send)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from opentelemetry import trace as trace_api

import workbench as wb
from tests.test_telemetry import (
    GOLDEN,
    HOOKS,
    StoredRun,
    by_name,
    calculator,
    fold,
    run_with_pause,
)
from workbench.telemetry import names as n
from workbench.telemetry import spans_from_run
from workbench.telemetry.frames import SPAN_COLUMNS, STEP_COLUMNS, TIMING_COLUMNS


def test_jaeger_json_matches_the_ui_model(tmp_path: Path) -> None:
    telemetry = wb.Telemetry(capture_content=True)
    paused, done = run_with_pause(telemetry)
    document = json.loads(telemetry.write_jaeger_json(tmp_path / "run.json").read_text())
    assert {t["traceID"] for t in document["data"]} == {paused.trace_id, done.trace_id}
    spans_seen = 0
    for trace in document["data"]:
        ids = {s["spanID"] for s in trace["spans"]}
        assert all(len(t) == 32 and int(t, 16) >= 0 for t in [trace["traceID"]])
        for span in trace["spans"]:
            spans_seen += 1
            assert span["traceID"] == trace["traceID"] and len(span["spanID"]) == 16
            int(span["spanID"], 16)
            assert isinstance(span["operationName"], str) and span["operationName"]
            assert isinstance(span["startTime"], int) and isinstance(span["duration"], int)
            assert 1.5e15 < span["startTime"] < 1e17  # microseconds since the epoch
            for ref in span["references"]:
                assert ref["refType"] in ("CHILD_OF", "FOLLOWS_FROM")
                if ref["refType"] == "CHILD_OF":
                    assert ref["traceID"] == trace["traceID"] and ref["spanID"] in ids
            for tag in span["tags"]:
                expected = {"string": str, "bool": bool, "int64": int, "float64": float}[
                    tag["type"]
                ]
                assert isinstance(tag["value"], expected), tag
            for log in span["logs"]:
                assert isinstance(log["timestamp"], int) and log["fields"]
            assert trace["processes"][span["processID"]]["serviceName"] == "workbench"
        roots = [
            s
            for s in trace["spans"]
            if not any(r["refType"] == "CHILD_OF" for r in s["references"])
        ]
        assert [r["operationName"] for r in roots] == ["invoke_agent calc"]
    assert spans_seen == len(telemetry.spans)
    resumed_root = next(
        s for s in document["data"][1]["spans"] if s["operationName"] == "invoke_agent calc"
    )
    assert resumed_root["references"] == [
        {
            "refType": "FOLLOWS_FROM",
            "traceID": paused.trace_id,
            "spanID": paused.state.trace.span_id,
        }  # type: ignore[union-attr]
    ]
    kinds = {
        t["value"]
        for s in document["data"][0]["spans"]
        for t in s["tags"]
        if t["key"] == "span.kind"
    }
    assert kinds == {"internal", "client"}


def test_otlp_json_file(tmp_path: Path) -> None:
    telemetry = wb.Telemetry()
    paused, _ = run_with_pause(telemetry)
    document = json.loads(telemetry.write_otlp_json(tmp_path / "run.otlp.json").read_text())
    (resource,) = document["resourceSpans"]
    service = {a["key"]: a["value"] for a in resource["resource"]["attributes"]}["service.name"]
    assert service == {"stringValue": "workbench"}
    (scope,) = resource["scopeSpans"]
    assert scope["scope"]["name"] == "workbench"
    spans = scope["spans"]
    assert len(spans) == len(telemetry.spans)
    chat = next(s for s in spans if s["name"] == "chat scripted")
    assert chat["kind"] == 3 and chat["traceId"] == paused.trace_id
    assert int(chat["endTimeUnixNano"]) >= int(chat["startTimeUnixNano"]) > 0
    tokens = next(a for a in chat["attributes"] if a["key"] == n.USAGE_INPUT_TOKENS)
    assert tokens["value"]["intValue"] == str(paused.steps[0].usage.input_tokens)
    retry = next(s for s in spans if s["name"] == "execute_tool add")
    assert retry["status"]["code"] == 2 and retry["events"][0]["name"] == "workbench.failure"


def test_dataframes_have_the_documented_columns() -> None:
    telemetry = wb.Telemetry()
    paused, done = run_with_pause(telemetry)
    spans = telemetry.spans_df()
    assert tuple(spans.columns) == SPAN_COLUMNS and len(spans) == len(telemetry.spans)
    assert set(spans["operation"].dropna()) == {"invoke_agent", "chat", "execute_tool"}
    steps = telemetry.steps_df()
    assert tuple(steps.columns) == STEP_COLUMNS
    assert list(steps["step"]) == [s.index for s in [*paused.steps, *done.steps]]
    assert list(steps["inference_ms"]) == pytest.approx(
        [s.timing.inference * 1e3 for s in [*paused.steps, *done.steps]]
    )
    timing = telemetry.timing_df()
    assert tuple(timing.columns) == TIMING_COLUMNS
    components = {"prepare", "inference", "tool", "hook", "continuation", "telemetry"}
    assert set(timing["component"]) == components
    tools = timing[timing["component"] == "tool"]
    assert len(tools) == sum(len(s.tool_outcomes) for s in [*paused.steps, *done.steps])


def _spans_with_ties() -> wb.Telemetry:
    """Spans setting every column, with fixed times: a run, its step and the step's first phase
    start at one instant (finished innermost first), and an unrelated trace starts then too."""
    telemetry = wb.Telemetry()
    tracer = telemetry.tracer_provider.get_tracer(n.SCOPE)
    t0 = 1_700_000_000_000_000_000
    ids = {n.RUN_ID: "run_1", n.EXECUTION_ID: "exe_1", n.SNAPSHOT_ID: "snap_1"}
    run = tracer.start_span(
        "invoke_agent a", start_time=t0, attributes={n.OPERATION: "invoke_agent", **ids}
    )
    inside = trace_api.set_span_in_context(run)
    step = tracer.start_span(
        "workbench.step 1", inside, start_time=t0, attributes={**ids, n.STEP_INDEX: 1}
    )
    in_step = trace_api.set_span_in_context(step)
    prepare = tracer.start_span("workbench.prepare", in_step, start_time=t0)
    other = tracer.start_span(
        "llm",
        start_time=t0,
        attributes={n.OI_MODEL: "oi-model", n.OI_INPUT_TOKENS: 7, n.OI_OUTPUT_TOKENS: 3},
    )
    chat = tracer.start_span(
        "chat m",
        in_step,
        start_time=t0 + 1_500_000,
        attributes={
            n.OPERATION: "chat",
            n.REQUEST_MODEL: "m",
            n.RESPONSE_MODEL: "m-1",
            n.USAGE_INPUT_TOKENS: 10,
            n.USAGE_OUTPUT_TOKENS: 2,
            n.STEP_INDEX: 1,
            **ids,
        },
    )
    chat.add_event("gen_ai.first_token", {"at": 1}, timestamp=t0 + 1_600_000)
    tool = tracer.start_span(
        "execute_tool add",
        in_step,
        start_time=t0 + 3_000_000,
        attributes={
            n.OPERATION: "execute_tool",
            n.TOOL_NAME: "add",
            n.ERROR_TYPE: "ValueError",
            "tags": ("a", "b"),
            **ids,
        },
    )
    tool.set_status(trace_api.Status(trace_api.StatusCode.ERROR, "bad"))
    for span, end in (
        (prepare, 1_000_000),
        (other, 2_000_000),
        (chat, 2_500_000),
        (tool, 3_250_000),
        (step, 4_000_000),
        (run, 5_000_000),
    ):
        if span is run:
            span.set_status(trace_api.Status(trace_api.StatusCode.OK))
        span.end(end_time=t0 + end)
    return telemetry


def test_spans_df_keeps_its_rows_columns_and_dtypes() -> None:
    """The frame of a small trace, whole: row order (a parent before the children starting with
    it), every column's value and dtype; the same from SDK spans and from a `Trace` of them."""
    telemetry = _spans_with_ties()
    frame = telemetry.spans_df()
    assert {c: str(t) for c, t in frame.dtypes.items()} == {
        "trace_id": "str", "span_id": "str", "parent_span_id": "str", "name": "str",
        "kind": "str", "category": "str", "operation": "str", "agent": "str",
        "start": "datetime64[ns, UTC]", "end": "datetime64[ns, UTC]", "duration_ms": "float64",
        "status": "str", "error_type": "str", "run_id": "str", "execution_id": "str",
        "step": "float64", "snapshot_id": "str", "model": "str", "tool": "str",
        "input_tokens": "float64", "output_tokens": "float64", "in_progress": "bool",
        "attributes": "object",
    }  # fmt: skip
    spans = {s.name: s for s in telemetry.spans}
    trace_id, other_trace = (f"{spans[k].context.trace_id:032x}" for k in ("chat m", "llm"))
    span_id = {k: f"{s.context.span_id:016x}" for k, s in spans.items()}
    rows = [
        [None if v is None or v != v else v for v in row]
        for row in frame.drop(columns=["attributes"]).itertuples(index=False)
    ]
    t0 = pd.Timestamp(1_700_000_000_000_000_000, unit="ns", tz="UTC")
    ms = pd.Timedelta(milliseconds=1)
    assert rows == [
        [other_trace, span_id["llm"], None, "llm", "INTERNAL", "other", None, "", t0,
         t0 + 2 * ms, 2.0, "UNSET", None, None, None, None, None, "oi-model", None, 7.0, 3.0,
         False],
        [trace_id, span_id["invoke_agent a"], None, "invoke_agent a", "INTERNAL", "agent",
         "invoke_agent", "", t0, t0 + 5 * ms, 5.0, "OK", None, "run_1", "exe_1", None, "snap_1",
         None, None, None, None, False],
        [trace_id, span_id["workbench.step 1"], span_id["invoke_agent a"], "workbench.step 1",
         "INTERNAL", "step", None, "", t0, t0 + 4 * ms, 4.0, "UNSET", None, "run_1", "exe_1", 1.0,
         "snap_1", None, None, None, None, False],
        [trace_id, span_id["workbench.prepare"], span_id["workbench.step 1"], "workbench.prepare",
         "INTERNAL", "phase", None, "", t0, t0 + 1 * ms, 1.0, "UNSET", None, None, None, None,
         None, None, None, None, None, False],
        [trace_id, span_id["chat m"], span_id["workbench.step 1"], "chat m", "INTERNAL", "model",
         "chat", "", t0 + 1.5 * ms, t0 + 2.5 * ms, 1.0, "UNSET", None, "run_1", "exe_1", 1.0,
         "snap_1", "m-1", None, 10.0, 2.0, False],
        [trace_id, span_id["execute_tool add"], span_id["workbench.step 1"], "execute_tool add",
         "INTERNAL", "tool", "execute_tool", "", t0 + 3 * ms, t0 + 3.25 * ms, 0.25, "ERROR",
         "ValueError", "run_1", "exe_1", None, "snap_1", None, "add", None, None, False],
    ]  # fmt: skip
    assert list(frame["attributes"]) == [
        dict(spans[name].attributes or {}) for name in frame["name"]
    ]
    assert frame["attributes"].iloc[-1]["tags"] == ("a", "b")
    assert wb.Trace.from_spans(telemetry.spans).spans_df().equals(frame)


def test_spans_rebuilt_from_records_match_the_live_trace() -> None:
    telemetry = wb.Telemetry()
    paused, done = run_with_pause(telemetry)
    stored = StoredRun(
        done.state, (*paused.steps, *done.steps), (*paused.snapshots, *done.snapshots)
    )
    rebuilt = spans_from_run(stored)
    assert fold(rebuilt) == GOLDEN
    live_ids = {
        (s.context.trace_id, s.name) for s in by_name(telemetry.spans, "invoke_agent") if s.context
    }
    assert {
        (s.context.trace_id, s.name) for s in by_name(rebuilt, "invoke_agent") if s.context
    } == live_ids
    (link,) = by_name(rebuilt, "invoke_agent")[1].links
    assert format(link.context.trace_id, "032x") == paused.trace_id


def _span_table(spans: list[Any]) -> dict[tuple[str, ...], Any]:
    """Every span by its path of names from the root, with all it says but its own span id."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}

    def path(span: Any) -> tuple[str, ...]:
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        return (*(path(parent) if parent is not None else ()), span.name)

    table: dict[tuple[str, ...], Any] = {}
    for span in spans:
        key = path(span)
        while key in table:  # several calls of one tool in a step: told apart by order
            key = (*key[:-1], key[-1] + "'")
        table[key] = (
            format(span.context.trace_id, "032x"),
            span.kind.name,
            span.start_time,
            span.end_time,
            dict(span.attributes or {}),
            span.status.status_code.name,
            span.status.description,
            [(e.name, e.timestamp, dict(e.attributes or {})) for e in span.events],
            [
                (lk.context.trace_id, lk.context.span_id, dict(lk.attributes or {}))
                for lk in span.links
            ],
        )
    return table


def test_a_stored_run_exported_is_the_live_trace(tmp_path: Path) -> None:
    """One path from records to spans: the spans of a run loaded back from SQLite are the live
    spans, attribute for attribute, time for time, under the same trace and run span ids."""
    telemetry = wb.Telemetry(capture_content=True)
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        agent = calculator(telemetry, hooks=HOOKS)
        agent.store = store
        paused = agent.run_sync("What is 17 + 25, doubled? Save it.")
        done = agent.resume_sync(
            paused.state, approvals={p.call_id: True for p in paused.state.pending}
        )
        loaded = store.load(done.run_id)
    rebuilt = spans_from_run(loaded, capture_content=True)
    assert fold(rebuilt) == GOLDEN
    live, stored = _span_table(telemetry.spans), _span_table(rebuilt)
    assert stored.keys() == live.keys()
    for key in live:
        assert stored[key] == live[key], key
    chat = next(s for s in rebuilt if s.name == "chat scripted")
    assert chat.attributes is not None and chat.attributes[n.PROVIDER] == "workbench"


def test_a_run_without_telemetry_is_pushed_under_the_trace_id_it_was_given() -> None:
    from workbench.traceids import new_trace_id

    trace_id = new_trace_id()
    agent = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False)
    run = agent.start("hello")
    run._execution.replace_state(
        run.state.model_copy(update={"trace_id": trace_id})
    )  # as the loop would
    result = run.run_to_end()
    assert result.state.trace is None and result.state.trace_id == trace_id  # no telemetry
    spans = spans_from_run(result)
    assert {format(s.context.trace_id, "032x") for s in spans if s.context} == {trace_id}


def test_files_hold_valid_json_scope_tags_big_ints_nan_flags_and_drop_counts(
    tmp_path: Path,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from workbench.telemetry.files import write_jaeger_json, write_otlp_json

    telemetry = wb.Telemetry()
    tracer = telemetry.tracer_provider.get_tracer(n.SCOPE, "1.2.3")
    with tracer.start_as_current_span("odd", attributes={"big": 2**60, "nan": float("nan")}):
        pass
    assert isinstance(telemetry.tracer_provider, TracerProvider)

    def strict(text: str) -> Any:
        def refuse(constant: str) -> Any:
            raise AssertionError(f"{constant} is not JSON")

        return json.loads(text, parse_constant=refuse)

    jaeger = strict(write_jaeger_json(telemetry.spans, tmp_path / "j.json").read_text())
    (trace,) = jaeger["data"]
    (span,) = trace["spans"]
    tags = {t["key"]: t for t in span["tags"]}
    assert tags["otel.scope.name"]["value"] == n.SCOPE
    assert tags["otel.scope.version"]["value"] == "1.2.3"
    assert tags["big"] == {"key": "big", "type": "int64", "value": str(2**60)}  # beyond 2^53
    assert tags["nan"]["value"] == "NaN"
    (process,) = trace["processes"].values()
    assert process["serviceName"] == "workbench"
    assert "service.name" not in {t["key"] for t in process["tags"]}
    otlp = strict(write_otlp_json(telemetry.spans, tmp_path / "o.json").read_text())
    (encoded,) = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert encoded["flags"] == 0x101  # sampled; the parent's remoteness is known (none)
    assert (
        encoded["droppedAttributesCount"],
        encoded["droppedEventsCount"],
        encoded["droppedLinksCount"],
    ) == (0, 0, 0)
    values = {a["key"]: a["value"] for a in encoded["attributes"]}
    assert values["nan"] == {"doubleValue": "NaN"} and values["big"] == {"intValue": str(2**60)}
    (loaded,) = wb.load_trace(tmp_path / "j.json").spans
    assert loaded.attributes["big"] == 2**60 and loaded.scope == n.SCOPE
