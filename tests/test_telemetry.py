"""Telemetry: the golden span tree, attributes, timing, content capture and redaction.

Files, DataFrames and rebuilt spans are in ``test_telemetry_files.py``; OTLP export and the CLI in
``test_telemetry_export.py``; the end-to-end run against Arize Phoenix is ``test_phoenix_e2e.py``.
The golden run has hooks (SessionStart, and a PreToolUse hook on the call that needs approval);
a failing hook is checked through the observer directly (`test_hook_spans_under_step_and_run`).
"""

from __future__ import annotations

import doctest
import json
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

import workbench as wb
from workbench.redact import _alternation
from workbench.telemetry import names as n
from workbench.traceids import valid_trace_id

R = wb.ModelResponse
SECRET = "sk-proj-Abc123Def456Ghi789Jkl012"


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@wb.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@wb.tool(requires_approval=True)
def save(name: str, value: int) -> str:
    """Save a named value (needs approval)."""
    return f"saved {name}"


def _note(data: wb.HookInput) -> None:
    """A hook that lets everything through."""


HOOKS = (wb.Hook("SessionStart", _note, name="hello"), wb.Hook("PreToolUse", _note, matcher="save"))


def calculator(
    telemetry: wb.Telemetry | None,
    responses: Sequence[R | str] | None = None,
    hooks: Sequence[wb.Hook] = (),
) -> wb.Agent:
    script = responses or [
        R.tool_call("add", {"a": 17, "b": "twenty-five"}),
        R.tool_call("add", {"a": 17, "b": 25}),
        R.tool_calls([("multiply", {"a": 42, "b": 2}), ("save", {"name": "x", "value": 84})]),
        R.text("84, saved."),
    ]
    return wb.Agent(
        model=wb.ScriptedModel(script, name="scripted"),
        name="calc",
        system_prompt="You are a calculator.",
        tools=[add, multiply, save],
        telemetry=telemetry,
        store=False,
        hooks=hooks,
    )


def run_with_pause(telemetry: wb.Telemetry | None) -> tuple[wb.RunResult, wb.RunResult]:
    """A run with a retry, parallel tools and an approval; resumed from its state as JSON."""
    agent = calculator(telemetry, hooks=HOOKS)
    paused = agent.run_sync("What is 17 + 25, doubled? Save it.")
    state = wb.AgentState.from_json(paused.state.to_json())  # as if in another process
    done = agent.resume_sync(state, approvals={p.call_id: True for p in state.pending})
    return paused, done


_LABEL_KEYS = (n.RUN_STATUS, n.STEP_STATUS, n.TOOL_STATUS, n.ERROR_TYPE)


def _label(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    extra = [f"{k.rsplit('.', 1)[-1]}={attributes[k]}" for k in _LABEL_KEYS if k in attributes]
    return " ".join([span.name, span.kind.name, *extra])


def fold(spans: Sequence[ReadableSpan]) -> list[Any]:
    """Spans as ``{label: [children]}`` trees (leaves are labels), ids and times stripped."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)

    def node(span: ReadableSpan) -> Any:
        assert span.context is not None
        kids = sorted(children.get(span.context.span_id, []), key=lambda s: (s.start_time, s.name))
        return {_label(span): [node(k) for k in kids]} if kids else _label(span)

    return [node(s) for s in sorted(children[None], key=lambda s: s.start_time or 0)]


def by_name(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


@dataclass
class StoredRun:
    """A run's records across executions, as a store gives them back."""

    state: wb.AgentState
    steps: tuple[wb.StepRecord, ...]
    snapshots: tuple[wb.StepContext, ...]


GOLDEN = [
    {
        "invoke_agent calc INTERNAL status=paused": [
            "workbench.hook SessionStart INTERNAL",
            {
                "workbench.step 1 INTERNAL status=running": [
                    "workbench.prepare INTERNAL",
                    "chat scripted CLIENT",
                    "execute_tool add INTERNAL status=retry type=tool_retry",
                    "workbench.continuation INTERNAL",
                ]
            },
            {
                "workbench.step 2 INTERNAL status=running": [
                    "workbench.prepare INTERNAL",
                    "chat scripted CLIENT",
                    "execute_tool add INTERNAL status=ok",
                    "workbench.continuation INTERNAL",
                ]
            },
            {
                "workbench.step 3 INTERNAL status=paused": [
                    "workbench.prepare INTERNAL",
                    "chat scripted CLIENT",
                    "execute_tool multiply INTERNAL status=ok",
                    "execute_tool save INTERNAL status=pending",
                    "workbench.hook PreToolUse INTERNAL",
                ]
            },
        ]
    },
    {
        "invoke_agent calc INTERNAL status=completed": [
            "workbench.hook SessionStart INTERNAL",
            {
                "workbench.step 3 INTERNAL status=running": [
                    "execute_tool save INTERNAL status=ok",
                    "workbench.continuation INTERNAL",
                ]
            },
            {
                "workbench.step 4 INTERNAL status=completed": [
                    "workbench.prepare INTERNAL",
                    "chat scripted CLIENT",
                    "workbench.continuation INTERNAL",
                ]
            },
        ]
    },
]


def test_golden_span_tree_with_retry_tools_pause_and_resume() -> None:
    telemetry = wb.Telemetry()
    paused, done = run_with_pause(telemetry)
    assert (paused.status, done.status) == (wb.ExecutionStatus.PAUSED, wb.ExecutionStatus.COMPLETED)
    assert fold(telemetry.spans) == GOLDEN


def test_resume_links_to_the_paused_run_and_shares_the_conversation() -> None:
    telemetry = wb.Telemetry()
    paused, done = run_with_pause(telemetry)
    first, second = by_name(telemetry.spans, "invoke_agent")
    assert first.context is not None and second.context is not None
    assert paused.trace_id == format(first.context.trace_id, "032x")
    assert done.trace_id == format(second.context.trace_id, "032x")
    assert paused.trace_id != done.trace_id
    (link,) = second.links
    assert (link.context.trace_id, link.context.span_id) == (
        first.context.trace_id,
        first.context.span_id,
    )
    assert link.attributes is not None and link.attributes[n.LINK_REASON] == "resume"
    conversation = {s.attributes[n.CONVERSATION_ID] for s in (first, second) if s.attributes}
    assert conversation == {paused.run_id}
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes[n.EXECUTION_ID] != second.attributes[n.EXECUTION_ID]
    assert done.state.trace is not None and done.state.trace.execution_id == done.state.execution_id


def test_rerun_links_to_the_original_run() -> None:
    telemetry = wb.Telemetry()
    agent = calculator(telemetry, [R.tool_call("add", {"a": 1, "b": 2}), "3", "three"])
    original = agent.run_sync("1 + 2?")
    fork = agent.rerun_sync(original.snapshots[1])
    run_span = by_name(telemetry.spans, "invoke_agent")[-1]
    assert run_span.attributes is not None
    assert run_span.attributes[n.RERUN_OF] == original.run_id
    assert run_span.attributes[n.RERUN_STEP] == 2
    (link,) = run_span.links
    assert link.attributes is not None and link.attributes[n.LINK_REASON] == "origin"
    assert format(link.context.trace_id, "032x") == original.trace_id
    assert fork.trace_id not in (None, original.trace_id)


def test_correlation_ids_on_every_span_and_event() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    paused, done = run_with_pause(telemetry)
    snapshots = {s.id for s in (*paused.snapshots, *done.snapshots)}
    step_ids = {s.context.span_id for s in by_name(telemetry.spans, "workbench.step") if s.context}
    events = 0
    for span in telemetry.spans:
        attributes = span.attributes or {}
        assert attributes[n.RUN_ID] == done.run_id, span.name
        assert attributes[n.EXECUTION_ID] in (paused.state.execution_id, done.state.execution_id)
        assert isinstance(attributes[n.STEP_INDEX], int), span.name
        resumed_step = (attributes[n.EXECUTION_ID], attributes[n.STEP_INDEX]) == (
            done.state.execution_id,
            3,
        )
        in_step = span.name.startswith("workbench.step") or (
            span.parent is not None and span.parent.span_id in step_ids
        )
        if in_step and not resumed_step:  # a resumed step has no snapshot of its own
            assert attributes[n.SNAPSHOT_ID] in snapshots, span.name
        for event in span.events:
            events += 1
            assert event.attributes is not None
            assert event.attributes[n.RUN_ID] == done.run_id
            assert event.attributes[n.EXECUTION_ID] == attributes[n.EXECUTION_ID]
            assert n.STEP_INDEX in event.attributes
    assert events >= 3  # the retry's exception event, the pending call, the pause


def test_only_semantic_convention_gen_ai_keys() -> None:
    known = {
        value
        for name, value in vars(gen_ai_attributes).items()
        if name.startswith("GEN_AI_") and isinstance(value, str)
    }
    telemetry = wb.Telemetry(capture_content=True)
    run_with_pause(telemetry)
    used = {
        key
        for span in telemetry.spans
        for key in [*(span.attributes or {}), *(k for e in span.events for k in e.attributes or {})]
        if key.startswith("gen_ai.")
    }
    assert used - known == set()
    assert {n.INPUT_MESSAGES, n.TOOL_CALL_ARGUMENTS, n.CONVERSATION_ID} <= used


def test_chat_tool_and_run_attributes() -> None:
    telemetry = wb.Telemetry()
    paused, done = run_with_pause(telemetry)
    chat = by_name(telemetry.spans, "chat")[0].attributes or {}
    assert chat[n.OPERATION] == "chat"
    assert chat[n.PROVIDER] == "workbench"
    assert (chat[n.REQUEST_MODEL], chat[n.RESPONSE_MODEL]) == ("scripted", "scripted")
    assert chat[n.RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert chat[n.USAGE_INPUT_TOKENS] == paused.steps[0].usage.input_tokens
    assert chat[n.USAGE_OUTPUT_TOKENS] == paused.steps[0].usage.output_tokens
    tool = by_name(telemetry.spans, "execute_tool add")[1].attributes or {}
    call = paused.steps[1].tool_calls[0]
    assert (tool[n.OPERATION], tool[n.TOOL_NAME], tool[n.TOOL_CALL_ID], tool[n.TOOL_TYPE]) == (
        "execute_tool",
        "add",
        call.call_id,
        "function",
    )
    run = by_name(telemetry.spans, "invoke_agent")[-1].attributes or {}
    assert run[n.OPERATION] == "invoke_agent" and run[n.AGENT_NAME] == "calc"
    assert run[n.USAGE_TOTAL_INPUT] == done.usage.input_tokens
    assert run[n.USAGE_TOTAL_TOKENS] == done.usage.total_tokens
    assert run[n.RUN_STOP_REASON] == "completed"
    assert not any(k.startswith("gen_ai.usage.") for k in run)
    paused_run = by_name(telemetry.spans, "invoke_agent")[0].attributes or {}
    assert paused_run[n.RUN_PENDING] == (paused.pending[0].call_id,)


def test_run_metadata_is_on_the_run_span_and_reads_back_as_it_was(tmp_path: Path) -> None:
    telemetry = wb.Telemetry()
    metadata = {"split": "dev", "task": 3, "ratio": 0.5, "gold": True, "tags": ["a", "b"],
                "item": {"sku": "u-1"}, "note": None, "digits": "[12]"}  # fmt: skip
    agent = wb.Agent(model=wb.ScriptedModel(["ok"]), telemetry=telemetry, store=False)
    result = agent.run_sync("hi", metadata=metadata)
    run = by_name(telemetry.spans, "invoke_agent")[0].attributes or {}
    assert (run[n.RUN_METADATA + "split"], run[n.RUN_METADATA + "task"]) == ("dev", 3)
    assert run[n.RUN_METADATA + "tags"] == '["a", "b"]'  # JSON text where it is structured
    assert run[n.RUN_METADATA + "digits"] == "[12]"  # a string stays one
    assert wb.trace_of(result, telemetry=telemetry).metadata() == metadata
    assert wb.trace_of(result).metadata() == metadata  # spans made from the records: the same
    telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    assert wb.load_trace(tmp_path / "run.otlp.json").metadata() == metadata


def test_timing_numbers_agree_with_span_durations() -> None:
    telemetry = wb.Telemetry()
    paused, done = run_with_pause(telemetry)
    spans = telemetry.spans
    records = [*paused.steps, *done.steps]

    def seconds(span: ReadableSpan) -> float:
        return ((span.end_time or 0) - (span.start_time or 0)) / 1e9

    def child(step: ReadableSpan, prefix: str) -> list[ReadableSpan]:
        assert step.context is not None
        return [
            s
            for s in spans
            if s.parent and s.parent.span_id == step.context.span_id and s.name.startswith(prefix)
        ]

    step_spans = by_name(spans, "workbench.step")
    assert len(step_spans) == len(records)
    for record, step in zip(records, step_spans, strict=True):
        timing = record.timing
        attributes = step.attributes or {}
        for key, value in [
            (n.TIMING_PREPARE, timing.prepare),
            (n.TIMING_INFERENCE, timing.inference),
            (n.TIMING_TOOLS, timing.tools),
            (n.TIMING_CONTINUATION, timing.continuation),
            (n.TIMING_TELEMETRY, timing.telemetry),
        ]:
            assert attributes[key] == value
        for prefix, phase in [
            ("workbench.prepare", timing.prepare),
            ("workbench.continuation", timing.continuation),
        ]:
            assert sum(seconds(s) for s in child(step, prefix)) == pytest.approx(phase, abs=2e-6)
        for chat in child(step, "chat"):
            assert seconds(chat) <= timing.inference + 1e-6
        tools = {
            (s.attributes or {})[n.TOOL_CALL_ID]: seconds(s) for s in child(step, "execute_tool")
        }
        for call_id, _, duration in timing.per_tool:
            assert tools[call_id] == pytest.approx(duration, abs=2e-6)
        assert timing.telemetry > 0
        slack = 1e-5 if record.snapshot_id else 1e-3  # a resumed step starts at its first call
        assert seconds(step) >= timing.total - slack
        hooks = [s for s in spans if s.name.startswith("workbench.hook")]
        for hook in timing.per_hook:
            assert any(seconds(s) == pytest.approx(hook.duration, abs=2e-6) for s in hooks)


def test_without_telemetry_no_spans_and_no_cost() -> None:
    agent = calculator(None)
    assert agent.telemetry is None and agent._observers(agent.model) == ()
    paused, done = run_with_pause(None)
    assert done.state.trace is None  # no run span was made
    # every run has its trace id from its start, telemetry or not: a push later lands there
    assert paused.trace_id == paused.state.trace_id and valid_trace_id(paused.trace_id)
    assert done.trace_id == done.state.trace_id != paused.trace_id  # an execution, a trace
    assert all(s.timing.telemetry == 0.0 for s in [*paused.steps, *done.steps])
    assert all(s.timing.prepare > 0 for s in done.steps if s.snapshot_id)


def test_a_time_nothing_measured_is_missing_in_the_step_table_not_zero() -> None:
    """No hook ran, nothing recorded the run (no telemetry, no store): no such time, and the
    table says so (NaN, which the views leave out), not 0.0, which reads as measured."""
    called = wb.ModelResponse.tool_call("add", {"a": 1, "b": 2})
    plain = wb.Agent(wb.ScriptedModel([called, "3"]), tools=[add], store=False)
    table = wb.trace_of(plain.run_sync("1 + 2?")).steps_df()
    assert table[["hooks_ms", "telemetry_ms"]].isna().all().all(), table
    assert wb.trace_of(plain.run_sync("1 + 2?")).agents()["hooks_ms"].isna().all()
    hook = wb.Hook(wb.HookEvent.PRE_TOOL_USE, lambda given: None)
    hooked = wb.Agent(
        wb.ScriptedModel([called, "3"]), tools=[add], hooks=[hook], telemetry=wb.Telemetry()
    )
    table = wb.trace_of(hooked.run_sync("1 + 2?"), telemetry=hooked.telemetry).steps_df()
    assert list(table["hooks_ms"].notna()) == [True, False]  # the step that called the tool
    assert (table["telemetry_ms"] > 0).all()


def test_import_workbench_loads_neither_opentelemetry_nor_pandas() -> None:
    code = (
        "import sys, workbench\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'opentelemetry', 'pandas'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_tracer_provider_is_used_not_installed_globally() -> None:
    from opentelemetry import trace

    before = trace.get_tracer_provider()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = wb.Telemetry(provider)
    run_with_pause(telemetry)
    assert trace.get_tracer_provider() is before
    assert len(exporter.get_finished_spans()) == len(telemetry.spans) > 0


@wb.tool
def leaky(token: str, api_key: str = "") -> str:
    """Echo a token, and fail loudly when asked to."""
    if token.startswith("fail"):
        raise RuntimeError(f"upstream refused Authorization: Bearer {SECRET}")
    return f"used {token} with api_key={SECRET}"


def test_secrets_never_reach_spans_events_or_files(tmp_path: Path) -> None:
    telemetry = wb.Telemetry(capture_content=True, redact=[r"acct-\d{6}"])
    agent = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_call("leaky", {"token": SECRET}),
                R.tool_call("leaky", {"token": "fail", "api_key": "acct-123456"}),
                R.text(f"done; the key was {SECRET} for acct-123456"),
            ]
        ),
        system_prompt=f"Use header Authorization: Bearer {SECRET}",
        tools=[leaky],
        telemetry=telemetry,
        store=False,
    )
    agent.run_sync(f"use {SECRET}", metadata={"note": f"key {SECRET}", "acct-123456": [SECRET]})
    jaeger = telemetry.write_jaeger_json(tmp_path / "t.jaeger.json").read_text()
    otlp = telemetry.write_otlp_json(tmp_path / "t.otlp.json").read_text()
    frame = telemetry.spans_df().to_json(date_format="iso")
    texts = [jaeger, otlp, frame]
    for span in telemetry.spans:
        texts.append(json.dumps(dict(span.attributes or {}), default=str))
        texts.extend(json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
        texts.append(span.status.description or "")
    assert [t for t in texts if SECRET in t or "acct-123456" in t or "Abc123Def456" in t] == []
    assert "[REDACTED]" in jaeger and "[REDACTED]" in otlp
    failing = by_name(telemetry.spans, "execute_tool leaky")[1]
    assert (
        failing.status.description is not None and "Bearer [REDACTED]" in failing.status.description
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("use basic arithmetic to add", "use basic arithmetic to add"),
        ("the Basic Research agent", "the Basic Research agent"),
        ("a basic example.", "a basic example."),
        ("the bearer instrument", "the bearer instrument"),
        ("Basic YWRtaW46YWRtaW4=", "Basic [REDACTED]"),
        ("echo Bearer abc.def.ghi", "echo Bearer [REDACTED]"),
        ("Bearer eyJhbGciOiJIUzI", "Bearer [REDACTED]"),
        ("Bearer ABC123DEF", "Bearer [REDACTED]"),
        ("Bearer abcdefghijklmnopqrstuvwx", "Bearer [REDACTED]"),
        ("Authorization: Bearer lettersonly", "Authorization: [REDACTED]"),
    ],
)
def test_a_word_after_basic_or_bearer_is_prose_a_token_is_a_credential(
    text: str, shown: str
) -> None:
    """Prose keeps its words in every view; a token after Bearer or Basic goes, and whatever
    follows Authorization: goes whatever it looks like."""
    assert wb.telemetry.Redactor().text(text) == shown


def test_redactor_patterns() -> None:
    redact = wb.telemetry.Redactor([r"acct-\d+"]).text
    assert redact("x sk-ant-api03-abcdefghijklmnopqrstuvwx y") == "x [REDACTED] y"
    assert redact("Authorization: Bearer eyJhbGciOi.abc.def") == "Authorization: Bearer [REDACTED]"
    assert redact('{"api_key": "hunter2hunter2"}') == '{"api_key": "[REDACTED]"}'
    assert redact("password=swordfish&user=bob") == "password=[REDACTED]&user=bob"
    assert redact("acct-42 AKIAABCDEFGHIJKLMNOP") == "[REDACTED] [REDACTED]"
    assert redact("nothing secret here: 42 tokens") == "nothing secret here: 42 tokens"
    assert wb.telemetry.Redactor().value({"api_key": "short", "n": ["sk-" + "a" * 20]}) == {
        "api_key": "[REDACTED]",
        "n": ["[REDACTED]"],
    }


@given(
    words=st.lists(st.text("abk_-:/", min_size=1, max_size=4), min_size=1, max_size=8),
    text=st.text("abk_-:/ ", max_size=40),
)
def test_the_triggers_alternation_finds_what_its_words_find(words: list[str], text: str) -> None:
    """The prefilter that passes clean text over is written with common beginnings factored
    out; it must find a text exactly when one of its words is in it."""
    found = re.search(_alternation(words), text) is not None
    assert found == any(word in text for word in words)


def test_hook_spans_under_step_and_run() -> None:
    """Hook spans come from the step record: before-step events under the run, the rest under
    the step; a failed hook is an error span with no invented exception; a hook that ran after
    the last record (reported, never recorded) goes under the run span."""
    telemetry = wb.Telemetry()
    observer = telemetry.observer(wb.ScriptedModel([], name="m"))
    state = wb.AgentState(agent_name="hooked").moved(wb.Transition.START)
    observer.run_started(state)
    greet = wb.HookTiming(event="SessionStart", hook="greet", duration=0.001, started_at=1e9)
    check = wb.HookTiming(
        event="PreToolUse", hook="check.sh", duration=0.002, started_at=1e9 + 0.02, error="exit 3"
    )
    for hook in (greet, check):
        observer.hook_called(1, hook, hook.started_at or 0.0, hook.error)
    snapshot = wb.StepContext(
        run_id=state.run_id,
        execution_id=state.execution_id,
        parent_run_id=None,
        step=1,
        model_name="m",
        model_settings={},
        tool_names=(),
        tool_schema_hash="0",
        system_prompt_hash=None,
        budget=wb.Budget(steps_used=0, tokens_used=0, seconds_used=0.0, cost_used=0.0),
        message_count=0,
        state=state,
    )
    observer.step_started(snapshot)
    record = wb.StepRecord(
        index=1,
        run_id=state.run_id,
        execution_id=state.execution_id,
        messages_in=(),
        new_messages=(),
        response=None,
        tool_outcomes=(),
        usage=wb.Usage(),
        timing=wb.Timing(prepare=0.001, hooks=0.003, per_hook=(greet, check)),
        status=wb.ExecutionStatus.ABORTED,
        stop_reason=wb.StopReason.ABORTED,
        tools_offered=(),
        snapshot_id=snapshot.id,
        started_at=1e9 + 0.011,
        phase_starts=((wb.Phase.PREPARE, 1e9 + 0.01),),
        ended_at=1e9 + 0.03,
    )
    observer.step_ended(record)
    late = wb.HookTiming(event="SessionEnd", hook="bye", duration=0.001, started_at=1e9 + 0.04)
    observer.hook_called(1, late, 1e9 + 0.04, None)
    observer.run_ended(state.moved(wb.Transition.ABORT, stop_reason=wb.StopReason.ABORTED))
    assert fold(telemetry.spans) == [
        {
            "invoke_agent hooked INTERNAL status=aborted": [
                "workbench.hook SessionStart INTERNAL",
                {
                    "workbench.step 1 INTERNAL status=aborted": [
                        "workbench.prepare INTERNAL",
                        "workbench.hook PreToolUse INTERNAL type=hook_error",
                    ]
                },
                "workbench.hook SessionEnd INTERNAL",
            ]
        }
    ]
    hook = by_name(telemetry.spans, "workbench.hook PreToolUse")[0]
    assert hook.attributes is not None and hook.attributes[n.HOOK_NAME] == "check.sh"
    assert (hook.end_time or 0) - (hook.start_time or 0) == 2_000_000
    assert hook.start_time == int((1e9 + 0.02) * 1e9)
    (event,) = hook.events
    assert event.name == n.EVENT_FAILURE and event.attributes is not None
    assert event.attributes[n.SNAPSHOT_ID] == snapshot.id
    assert event.attributes[n.FAILURE_MESSAGE] == "exit 3"


def test_docstring_examples_run() -> None:
    from workbench import redact
    from workbench.telemetry import core

    for module in (redact, core):
        failed, tried = doctest.testmod(module)
        assert tried > 0 and failed == 0, module.__name__


def test_time_to_first_token_on_the_chat_span_and_the_step() -> None:
    def streamed(messages: Any, request: wb.ModelRequest) -> R:
        return R.text("hi").model_copy(update={"time_to_first_token": 0.025})

    telemetry = wb.Telemetry()
    agent = wb.Agent(model=wb.FunctionModel(streamed), telemetry=telemetry, store=False)
    result = agent.run_sync("hello")
    chat = by_name(telemetry.spans, "chat")[0]
    assert chat.attributes is not None and chat.attributes[n.RESPONSE_TIME_TO_FIRST_CHUNK] == 0.025
    (event,) = chat.events
    assert event.name == n.EVENT_FIRST_TOKEN
    assert event.timestamp - (chat.start_time or 0) == 25_000_000
    step = by_name(telemetry.spans, "workbench.step")[0].attributes or {}
    assert step[n.TIMING_TTFT] == result.steps[0].timing.time_to_first_token == 0.025


def test_a_failing_model_call_marks_the_chat_and_run_spans() -> None:
    def broken(messages: Any, request: wb.ModelRequest) -> R:
        raise wb.ModelError(f"upstream said 401 for key {SECRET}")

    telemetry = wb.Telemetry()
    agent = wb.Agent(model=wb.FunctionModel(broken), telemetry=telemetry, store=False)
    result = agent.run_sync("hello")
    assert result.status is wb.ExecutionStatus.FAILED
    chat = by_name(telemetry.spans, "chat")[0]
    assert chat.attributes is not None and chat.attributes[n.ERROR_TYPE] == "ModelError"
    assert chat.status.status_code.name == "ERROR" and SECRET not in (chat.status.description or "")
    assert chat.events[0].attributes is not None
    assert chat.events[0].attributes[n.EXCEPTION_TYPE] == "ModelError"
    run = by_name(telemetry.spans, "invoke_agent")[0]
    assert run.attributes is not None and run.attributes[n.ERROR_TYPE] == "ModelError"
    assert run.attributes[n.RUN_STATUS] == "failed" and run.status.status_code.name == "ERROR"


def test_a_telemetry_failure_never_breaks_the_run(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry = wb.Telemetry()

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(telemetry._instruments.tracer, "start_span", broken)
    _, done = run_with_pause(telemetry)
    assert done.status is wb.ExecutionStatus.COMPLETED and done.output == "84, saved."
    assert telemetry.spans == []
    assert "failed on step_ended; the run goes on" in caplog.text  # spans are written there
    assert "RuntimeError: exporter exploded" in caplog.text


def test_the_tables_of_a_telemetry_follow_its_spans_and_derive_once_between_them() -> None:
    telemetry = wb.Telemetry()
    agent = wb.Agent(model=wb.ScriptedModel(["one"]), telemetry=telemetry, store=False)
    one = agent.run_sync("a")
    first = telemetry.spans_df()
    assert telemetry.trace() is telemetry.trace()  # kept while no span arrives
    assert telemetry.spans_df().equals(first) and telemetry.spans_df() is not first
    run_trace = wb.trace_of(one, telemetry=telemetry)  # the run's views: the same tree
    assert run_trace.steps == one.steps and run_trace.tree is telemetry.trace().tree
    wb.Agent(model=wb.ScriptedModel(["two"]), telemetry=telemetry, store=False).run_sync("b")
    assert len(telemetry.spans_df()) == 2 * len(first)  # the second run's spans too
    alone = wb.trace_of(one, telemetry=telemetry)  # only its own spans, its own tree
    assert alone.spans == run_trace.spans and alone.tree is not telemetry.trace().tree
    assert telemetry.steps_df()["run_id"].nunique() == 2
    telemetry.clear()
    assert telemetry.spans_df().empty


def test_a_run_and_its_views_leave_the_notebooks_seeded_random_alone() -> None:
    """A seeded `random` gives the same numbers whatever runs and draws meanwhile.

    The SDK's default id generator draws on `random`; the Stepper draws a run (making spans) on
    its own thread, so a seeded experiment's numbers would depend on what the views did.
    """
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    got = [random.random()]
    telemetry = wb.Telemetry()
    result = wb.Agent(model=wb.ScriptedModel(["hi"]), telemetry=telemetry, store=False).run_sync(
        "x"
    )
    got.append(random.random())
    plain = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("x")
    assert len(wb.trace_of(plain).spans) > 1  # drawn from spans its records make
    wb.RetryPolicy().backoff(2)  # a model call retried meanwhile
    got.append(random.random())
    assert got == expected
    assert all(s.context is not None and s.context.span_id for s in telemetry.spans)
    assert valid_trace_id(result.trace_id or "")
