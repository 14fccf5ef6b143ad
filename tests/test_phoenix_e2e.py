"""End to end against a real OTLP trace backend: Arize Phoenix, started here on loopback.

``phoenix serve`` runs as a subprocess (free ports, a temporary working directory, no outside
requests); a run is sent to its ``/v1/traces`` over OTLP/HTTP protobuf and read back through
its REST API (``GET /v1/projects/default/spans``). Startup is awaited on the server's own
"Uvicorn running" line, not on a timer. Phoenix ingests in the background, so reading back polls
the REST API (bounded) until every span sent is there. The server is the session's one Phoenix on
SQLite (the ``phoenix`` fixture of tests/conftest.py), which tests/test_runs_backends.py lists a
project of its own in.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import workbench as wb
from tests._phoenix import Phoenix
from tests.test_telemetry import GOLDEN, HOOKS, calculator, run_with_pause
from workbench.telemetry import names as n


def _read_back(phoenix: Phoenix, trace_id: str, expected: int) -> list[dict[str, Any]]:
    """Phoenix's spans of a trace, once all ``expected`` are ingested (bounded poll)."""
    deadline = time.monotonic() + 60
    spans = phoenix.spans(trace_id)
    pause = threading.Event()
    while len(spans) < expected and time.monotonic() < deadline:
        pause.wait(0.2)  # Phoenix ingests in batches and offers nothing to wait on
        spans = phoenix.spans(trace_id)
    return spans


def _fold(spans: list[dict[str, Any]]) -> list[Any]:
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans:
        children.setdefault(span["parent_id"], []).append(span)

    def label(span: dict[str, Any]) -> str:
        attributes = span["attributes"]
        keys = (n.RUN_STATUS, n.STEP_STATUS, n.TOOL_STATUS, n.ERROR_TYPE)
        return " ".join(
            [
                span["name"],
                *(f"{k.rsplit('.', 1)[-1]}={attributes[k]}" for k in keys if k in attributes),
            ]
        )

    def node(span: dict[str, Any]) -> Any:
        kids = sorted(
            children.get(span["context"]["span_id"], []), key=lambda s: (s["start_time"], s["name"])
        )
        return {label(span): [node(k) for k in kids]} if kids else label(span)

    return [node(s) for s in children.get(None, [])]


def _without_kinds(tree: Any) -> Any:
    if isinstance(tree, str):
        return tree.replace(" INTERNAL", "").replace(" CLIENT", "")
    if isinstance(tree, list):
        return [_without_kinds(t) for t in tree]
    return {_without_kinds(k): _without_kinds(v) for k, v in tree.items()}


def test_a_run_sent_over_otlp_reads_back_from_phoenix(phoenix: Phoenix) -> None:
    telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=phoenix.url)
    paused, done = run_with_pause(telemetry)
    stats = telemetry.shutdown(timeout=30)
    assert stats is not None and stats.exported == stats.queued == len(telemetry.spans)
    assert paused.trace_id is not None and done.trace_id is not None
    per_trace = {
        trace: sum(
            1 for s in telemetry.spans if s.context and format(s.context.trace_id, "032x") == trace
        )
        for trace in (paused.trace_id, done.trace_id)
    }
    first = _read_back(phoenix, paused.trace_id, per_trace[paused.trace_id])
    second = _read_back(phoenix, done.trace_id, per_trace[done.trace_id])
    assert [len(first), len(second)] == list(per_trace.values())
    assert _fold(first) + _fold(second) == _without_kinds(GOLDEN)

    run = next(s for s in second if s["parent_id"] is None)
    attributes = run["attributes"]
    assert attributes[n.CONVERSATION_ID] == done.run_id == attributes[n.RUN_ID]
    assert attributes[n.USAGE_TOTAL_TOKENS] == done.usage.total_tokens
    assert attributes[n.OPERATION] == "invoke_agent" and run["span_kind"] == "AGENT"

    chat = min((s for s in first if s["name"] == "chat scripted"), key=lambda s: s["start_time"])
    attributes = chat["attributes"]
    assert attributes[n.REQUEST_MODEL] == "scripted" and attributes[n.PROVIDER] == "workbench"
    assert attributes[n.USAGE_INPUT_TOKENS] == paused.steps[0].usage.input_tokens
    assert [m["role"] for m in json.loads(attributes[n.INPUT_MESSAGES])][:2] == ["system", "user"]
    # Phoenix understood our GenAI message JSON: it derived its own message attributes from it
    assert attributes["llm.input_messages.0.message.role"] == "system"
    assert attributes["llm.input_messages.1.message.role"] == "user"
    assert attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "add"

    retry = next(s for s in first if s["attributes"].get(n.TOOL_STATUS) == "retry")
    assert retry["status_code"] == "ERROR" and retry["span_kind"] == "TOOL"
    assert retry["attributes"][n.TOOL_CALL_ID] == paused.steps[0].tool_calls[0].call_id
    assert [e["name"] for e in retry["events"]] == ["workbench.failure"]  # handled, not raised


def test_a_stored_run_pushed_to_phoenix_loads_back_as_the_same_trace(
    phoenix: Phoenix, tmp_path: Path
) -> None:
    """The team's backend as the shared store: push a stored run, load it back by trace id."""
    from workbench.telemetry import rebuild_telemetry

    live = wb.Telemetry(capture_content=True)
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        agent = calculator(live, hooks=HOOKS)
        agent.store = store
        paused = agent.run_sync("What is 17 + 25, doubled? Save it.")
        done = agent.resume_sync(paused.state, approvals={p.call_id: True for p in paused.pending})
        stored = store.load(done.run_id)
    pushed = rebuild_telemetry(stored, capture_content=True, otlp_endpoint=phoenix.url)
    stats = pushed.shutdown(timeout=30)
    assert stats is not None and stats.exported == stats.queued
    assert paused.trace_id is not None
    expected = pushed.trace(paused.trace_id)  # what was sent: the live trace (test_telemetry_files)
    _read_back(phoenix, paused.trace_id, len(expected.spans))  # wait for ingestion

    loaded = wb.load_trace(f"phoenix+{phoenix.url}/default/{paused.trace_id}")
    assert loaded.trace_id == paused.trace_id
    assert len(loaded.spans) == len(expected.spans)
    by_id = {s.span_id: s for s in loaded.spans}
    assert by_id.keys() == {s.span_id for s in expected.spans}
    live_run = next(s for s in live.trace(paused.trace_id).spans if s.parent_id is None)
    assert live_run.span_id in by_id  # the run span keeps the id the notebook showed
    for original in expected.spans:
        span = by_id[original.span_id]
        assert (span.name, span.parent_id, span.status) == (
            original.name,
            original.parent_id,
            original.status,
        )
        # Phoenix keeps datetimes (microseconds) and converts through a float: within 2 µs
        assert abs(span.start_ns - original.start_ns) < 2000, original.name
        assert abs(span.end_ns - original.end_ns) < 2000, original.name
        # everything the conventions carry comes back; Phoenix adds its own (openinference.*)
        for key, value in original.attributes.items():
            assert span.attributes.get(key) == value, (original.name, key)
    chats = [s for s in loaded.spans if s.name.startswith("chat")]
    assert [m.role for m in loaded.messages(step=2)][:2] == ["system", "user"]
    assert len(chats) == 3


def test_a_stepped_run_pushed_to_phoenix_loads_back_without_the_waits_on_the_person(
    phoenix: Phoenix, tmp_path: Path
) -> None:
    """The waits a run stepped by hand recorded (``workbench.wait`` events) survive a backend."""
    from workbench.telemetry import rebuild_telemetry

    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        agent = wb.Agent(model=wb.ScriptedModel(["one"]), name="stepped", store=store)
        run = agent.start("go")
        run.next_phase()
        time.sleep(1.0)  # the person reads between two presses
        run.run_to_end()
        stored = store.load(run.result.run_id)
    pushed = rebuild_telemetry(stored, otlp_endpoint=phoenix.url)
    stats = pushed.shutdown(timeout=30)
    assert stats is not None and stats.exported == stats.queued
    trace_id = stored.trace_id
    assert trace_id is not None
    _read_back(phoenix, trace_id, len(pushed.trace(trace_id).spans))
    loaded = wb.load_trace(f"phoenix+{phoenix.url}/default/{trace_id}")
    assert loaded.waited >= 1.0
    assert (loaded.tree.end_ns - loaded.tree.start_ns) / 1e9 < 1.0  # the work, not the reading


@pytest.mark.parametrize("framework", ["openai-agents", "langgraph"])
def test_a_trace_of_another_framework_reads_back_from_phoenix_as_from_its_file(
    phoenix: Phoenix, framework: str
) -> None:
    """What a person reads of another framework's failed run is the same from Phoenix as from a
    file: a LangGraph agent read from Phoenix named no agent (Phoenix gives OpenInference's
    ``metadata`` JSON back flattened, ``metadata.ls_integration``)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tests.foreign import langgraph_react, openai_agents
    from workbench.telemetry.files import otlp_json

    made = {
        "openai-agents": openai_agents.failing_spans,
        "langgraph": lambda: langgraph_react.traced_spans(server_error=True),
    }
    spans = made[framework]()
    request = encode_spans(spans)
    sent = httpx.post(
        f"{phoenix.url}/v1/traces",
        content=request.SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
        timeout=30,
    )
    assert sent.status_code == 200
    from_file = wb.load_trace(json.dumps(otlp_json(spans)))
    _read_back(phoenix, from_file.trace_id, len(spans))
    from_phoenix = wb.load_trace(f"phoenix+{phoenix.url}/default/{from_file.trace_id}")
    agent = {"openai-agents": "forecaster", "langgraph": "adder"}[framework]
    assert agent in from_file.summary()
    assert from_phoenix.summary() == from_file.summary()
    assert [e.line for e in from_phoenix.errors()] == [e.line for e in from_file.errors()]
    assert from_phoenix.steps_df()["agent"].tolist() == [agent, agent]
