"""Fault table: a trace that loads but whose values no view expected (issue 31 #9).

A tracer may stamp its spans with a clock set centuries ahead (past 2262, the last year a
nanosecond ``datetime64`` holds; OTLP's own bound, 2**64 ns, is in 2554, and the readers refuse
what lies beyond it), write token counts and durations as text (``"many"``, ``"12"``), or put
an integer where ``gen_ai.input.messages`` should hold JSON messages. Such a file loads (it is
valid OTLP/JSON); every view must then show it, with the bad values marked, never a traceback:
``workbench trace`` (a real subprocess), TraceView, the trace explorer (its rows and a click),
the report, and the DataFrames.

Already covered elsewhere: files that cannot be read at all (``tests/test_trace_cli.py``,
``tests/test_load_trace_audit.py``, ``tests/faults/test_trace_shapes.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import workbench as wb
from tests.test_cli import cli
from workbench.notebook import TraceExplorer, TraceView
from workbench.report import report_html

TRACE_ID = "6c1f0b3f1e2d4a5b8c9d0e1f2a3b4c5d"
YEAR_2500_NS = 16_725_225_600 * 10**9
"""1 January 2500, in nanoseconds since the epoch: past what ``datetime64[ns]`` holds (2262)."""


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": str(value)}


def _span(span_id: str, name: str, start: int, attributes: dict[str, Any]) -> dict[str, Any]:
    return {
        "traceId": TRACE_ID,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1_500_000_000),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
    }


def odd_trace(start: int = 1_700_000_000_000_000_000, **chat: Any) -> str:
    """Another framework's trace: one model call with ``chat`` as its attributes, one tool."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", **chat}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add"}
    spans = [
        _span("00000000000000a1", "chat m", start, attributes),
        _span("00000000000000a2", "execute_tool add", start + 2_000_000_000, tool),
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


CASES = {
    "year 2500": {"start": YEAR_2500_NS},
    "tokens as text": {"gen_ai.usage.input_tokens": "many", "gen_ai.usage.output_tokens": "7"},
    "messages as a number": {"gen_ai.input.messages": 42},
    "an infinite count": {"gen_ai.usage.output_tokens": "Infinity"},  # valid for an OTLP double
}


def every_view(trace: wb.Trace) -> dict[str, Any]:
    """Build each view of ``trace`` as a person opens it (a click in the explorer included)."""
    explorer = TraceExplorer(trace)
    explorer.select("00000000000000a1")
    return {
        "spans_df": trace.spans_df(),
        "steps_df": trace.steps_df(),
        "timing_df": trace.timing_df(),
        "view": TraceView(trace),
        "explorer": explorer,
        "report": report_html(trace),
    }


@pytest.mark.parametrize("case", CASES)
def test_every_view_shows_a_trace_with_odd_values(case: str, tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text(odd_trace(**CASES[case]))
    trace = wb.load_trace(path)
    views = every_view(trace)
    assert len(views["spans_df"]) == 2 and len(views["steps_df"]) == 1
    assert views["explorer"].span_count == 2 and "chat m" in views["explorer"].detail
    assert "chat m" in views["report"]
    shown = cli("trace", str(path), "--messages", "-o", str(tmp_path / "odd.html"))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Traceback" not in shown.stderr and "model calls: 1" in shown.stdout


def test_a_clock_in_the_year_2500_shows_as_the_year_2500() -> None:
    trace = wb.load_trace(odd_trace(start=YEAR_2500_NS))
    for frame in (trace.spans_df(), trace.steps_df(), trace.timing_df()):
        assert frame["start"].iloc[0] == pd.Timestamp("2500-01-01", tz="UTC")
    assert trace.spans_df()["duration_ms"].iloc[0] == 1500.0


def test_numbers_written_as_text_are_read_or_marked(tmp_path: Path) -> None:
    trace = wb.load_trace(odd_trace(**CASES["tokens as text"]))
    row = trace.steps_df().iloc[0]
    assert pd.isna(row["input_tokens"]) and row["output_tokens"] == 7  # "7" is a number
    assert trace.problems() == [
        "span 00000000000000a1 (chat m): gen_ai.usage.input_tokens is 'many', not a number"
    ]
    assert "1 value could not be read" in TraceView(trace).children[0].value
    path = tmp_path / "odd.json"
    path.write_text(odd_trace(**CASES["tokens as text"]))
    shown = cli("trace", str(path))
    assert "gen_ai.usage.input_tokens is 'many', not a number" in shown.stdout
    assert "tokens: 0 in / 7 out" in shown.stdout


def test_an_infinite_count_is_marked_not_a_number_and_the_reports_table_stays_json() -> None:
    """Summed, it stopped the report and 'workbench trace' (OverflowError); in the report's
    steps table it would be ``Infinity``, which the page's JSON.parse refuses: no table."""
    trace = wb.load_trace(odd_trace(**CASES["an infinite count"]))
    assert pd.isna(trace.steps_df().iloc[0]["output_tokens"])
    assert trace.problems() == [
        "span 00000000000000a1 (chat m): gen_ai.usage.output_tokens is 'Infinity', not a number"
    ]
    html = report_html(trace)
    start = html.index('id="wb-steps-data">') + len('id="wb-steps-data">')
    table = json.loads(html[start : html.index("</script>", start)], parse_constant=_refused)
    assert table["names"][0] == "step" and "tokens out" not in table["names"]  # its one value


def _refused(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON a browser reads")


def test_messages_that_are_not_messages_are_a_clear_error_and_marked(tmp_path: Path) -> None:
    trace = wb.load_trace(odd_trace(**CASES["messages as a number"]))
    with pytest.raises(wb.TraceLoadError, match=r"gen_ai.input.messages is not messages: '42'"):
        trace.messages()
    assert trace.problems() == [
        "span 00000000000000a1 (chat m): gen_ai.input.messages is 42, not messages"
    ]
    assert "gen_ai.input.messages is not messages" in report_html(trace)
    path = tmp_path / "odd.json"
    path.write_text(odd_trace(**CASES["messages as a number"]))
    shown = cli("trace", str(path), "--messages")
    assert "the last model call's messages cannot be read" in shown.stdout
