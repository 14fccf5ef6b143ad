"""``workbench trace`` and the report of a loaded trace, as a user meets them.

The command runs as a real subprocess on real files: ours (a run with telemetry, paused and
resumed), another framework's (GenAI conventions only, no workbench attributes), one whose
content is hostile (terminal escapes, HTML), and broken ones. The report of a trace opens in a
real browser in `tests/test_browser.py`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests._report_page import drawn
from tests.test_cli import CONTROL, HOSTILE, cli
from tests.test_telemetry import run_with_pause
from workbench.report import report_html

TRACE_ID = "5b8efff798038103d269b633813fc60c"


def _text(value: str) -> dict[str, Any]:
    return {"stringValue": value}


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def foreign_trace(answers: list[str], trace_id: str = TRACE_ID, name: str = "chat gpt-4o") -> dict:
    """Another framework's OTLP/JSON: one ``chat`` span per answer, the conversation growing."""
    spans, conversation = [], [_message("system", "Be brief."), _message("user", "Hi")]
    for i, answer in enumerate(answers):
        start = 1_700_000_000_000_000_000 + i * 2_000_000_000
        attributes = {
            "gen_ai.operation.name": _text("chat"),
            "gen_ai.request.model": _text("gpt-4o"),
            "gen_ai.usage.input_tokens": {"intValue": str(10 + i)},
            "gen_ai.usage.output_tokens": {"intValue": "3"},
            "gen_ai.input.messages": _text(json.dumps(conversation)),
            "gen_ai.output.messages": _text(json.dumps([_message("assistant", answer)])),
        }
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{i + 1:016x}",
                "name": name,
                "kind": "SPAN_KIND_CLIENT",
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 1_000_000_000),
                "attributes": [{"key": k, "value": v} for k, v in attributes.items()],
            }
        )
        conversation = [*conversation, _message("assistant", answer), _message("user", "More?")]
    scope = {"scope": {"name": "some.framework"}, "spans": spans}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}


@pytest.fixture(scope="module")
def our_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, wb.RunResult]:
    """Our own trace file: a run with an approval pause, resumed (two executions, two traces)."""
    telemetry = wb.Telemetry(capture_content=True)
    _, done = run_with_pause(telemetry)
    path = telemetry.write_jaeger_json(tmp_path_factory.mktemp("trace") / "run.jaeger.json")
    return path, done


def test_our_trace_shows_its_steps_and_conversation_and_writes_a_report(
    our_trace: tuple[Path, wb.RunResult], tmp_path: Path
) -> None:
    path, done = our_trace
    report = tmp_path / "trace.html"
    shown = cli("trace", str(path), "--messages", "-o", str(report))
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert re.search(r"^traces: [0-9a-f]{32}, [0-9a-f]{32}$", out, re.M)  # the two executions
    assert f"model calls: {len(wb.load_trace(path).chat_spans())}" in out
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split()[:3] == ["step", "prepare", "ms"]
    rows = [line for line in table[2:] if not line.startswith("  ")]  # the legend is indented
    steps = [line.split()[0] for line in rows]
    assert steps == ["1", "2", "3", "3", "4"]  # step 3 paused, then resumed
    assert rows[-1].split()[-2:] == ["completed", "completed"]
    assert any(line.startswith("  retry: the call could not run as sent") for line in table)
    assert f"assistant: text {done.output!r}" in out  # the last model call's conversation
    assert f"wrote {report}" in out
    html = report.read_text()
    assert html.count('class="wb-step-section"') == 5  # one per step, the resumed step too
    assert "Trace explorer" in html and done.output in html


def test_another_frameworks_trace_is_read_from_its_model_calls(tmp_path: Path) -> None:
    path = tmp_path / "foreign.json"
    path.write_text(json.dumps(foreign_trace(["Hello", "Nothing more."])))
    shown = cli("trace", str(path), "--messages", "-o", str(tmp_path / "r.html"))
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"trace: {TRACE_ID}\n" in out and "model calls: 2" in out
    assert "tokens: 21 in / 6 out" in out
    rows = out.split("\n\n")[1].splitlines()[2:]
    assert [r.split()[0] for r in rows] == ["1", "2"]
    assert rows[0].split()[1:6] == ["-", "1000.00", "-", "-", "-"]  # no phases, the call's time
    lines = out.split("\n\n")[2].splitlines()
    assert [line.split()[1].rstrip(":") for line in lines] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    html = drawn((tmp_path / "r.html").read_text())  # the step sections filled, as in a browser
    assert html.count('class="wb-step-section"') == 2
    second = html.split("<b>step 2</b>")[1]  # only what the second call added
    assert "More?" in second and "Be brief." not in second


def test_a_trace_without_content_says_so(tmp_path: Path) -> None:
    telemetry = wb.Telemetry()  # content is not captured by default
    run_with_pause(telemetry)
    path = telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    shown = cli("trace", str(path), "--messages", "-o", str(tmp_path / "r.html"))
    assert shown.returncode == 0, shown.stderr
    assert "(no message content in the trace)" in shown.stdout
    assert "has no message content" in (tmp_path / "r.html").read_text()


def test_hostile_content_is_text_in_the_terminal_and_the_report(tmp_path: Path) -> None:
    markup = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(foreign_trace([f"{HOSTILE} {markup}"], name=f"chat {HOSTILE}")))
    shown = cli("trace", str(path), "--messages", "-o", str(tmp_path / "r.html"))
    assert shown.returncode == 0, shown.stderr
    assert not CONTROL.search(shown.stdout.replace("\n", ""))
    assert "\\x1b]0;pwned\\x07" in shown.stdout  # written out as text
    html = (tmp_path / "r.html").read_text()
    body = html.split("<body>", 1)[1]
    assert "<img src=x" not in body and "<script>alert" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body


def test_several_unrelated_traces_ask_for_one(tmp_path: Path) -> None:
    """Our runs number steps from 1 each: in a file of two runs, "step 2" would be ambiguous."""
    first, second = wb.Telemetry(capture_content=True), wb.Telemetry(capture_content=True)
    run_with_pause(first)
    run_with_pause(second)
    a = json.loads(first.write_otlp_json(tmp_path / "a.json").read_text())
    b = json.loads(second.write_otlp_json(tmp_path / "b.json").read_text())
    merged = tmp_path / "both.json"
    merged.write_text(json.dumps({"resourceSpans": a["resourceSpans"] + b["resourceSpans"]}))
    report = tmp_path / "r.html"
    shown = cli("trace", str(merged), "-o", str(report))
    assert shown.returncode == 0, shown.stderr
    assert "traces: " in shown.stdout and " and 1 more" in shown.stdout  # four traces
    html = report.read_text()  # each run's steps apart, by run: one conversation each
    assert "step 1 (run 1)" in html and "step 1 (run 2)" in html
    one = wb.load_trace(merged).spans[0].trace_id
    kept = cli("trace", str(merged), "--trace-id", one, "--messages")
    assert kept.returncode == 0, kept.stderr
    assert f"trace: {one}\n" in kept.stdout and "assistant" in kept.stdout


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read trace file"),
        ('{"resourceSpans": [', "is not valid JSON (truncated?)"),
        ('{"something": "else"}', "workbench: "),
        (json.dumps(foreign_trace(["x"], trace_id="0" * 32)), "workbench: "),
    ],
)
def test_a_file_that_cannot_be_read_is_a_one_line_error(
    tmp_path: Path, content: str | None, said: str
) -> None:
    path = tmp_path / "trace.json"
    if content is not None:
        path.write_text(content)
    shown = cli("trace", str(path))
    assert shown.returncode == 2
    assert said in shown.stderr and len(shown.stderr.strip().splitlines()) == 1
    assert shown.stdout == ""


def test_a_backend_that_is_down_is_a_one_line_error() -> None:
    shown = cli("trace", f"jaeger+http://127.0.0.1:9/{TRACE_ID}", "--timeout", "2")
    assert shown.returncode == 2
    assert shown.stderr.startswith("workbench: ") and len(shown.stderr.splitlines()) == 1


def test_a_file_not_in_utf_8_warns_and_fails_in_a_line_each(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_bytes(b"\xff\xfe not a trace")
    shown = cli("trace", str(path))
    assert shown.returncode == 2 and shown.stdout == ""
    warned, failed = shown.stderr.splitlines()
    assert warned.startswith("warning: ") and "not UTF-8" in warned
    assert failed.startswith("workbench: ") and "is not valid JSON" in failed


def _trace_from(handler: type[SimpleHTTPRequestHandler]) -> subprocess.CompletedProcess[str]:
    """`workbench trace` of a Jaeger URL that a web server of ``handler`` answers."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"jaeger+http://127.0.0.1:{server.server_address[1]}/{TRACE_ID}"
        return cli("trace", url, "--timeout", "20")
    finally:
        server.shutdown()
        server.server_close()


def test_a_web_server_that_is_no_backend_is_a_one_line_error() -> None:
    """Its error page (HTML over many lines) is quoted on the one line."""
    shown = _trace_from(SimpleHTTPRequestHandler)
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr.startswith("workbench: ") and shown.stderr.count("\n") == 1
    assert "not found (404): <!DOCTYPE HTML> <html" in shown.stderr


class _HostilePage(SimpleHTTPRequestHandler):
    """A web server whose error page drives a terminal: the error line quotes it."""

    def do_GET(self) -> None:
        body = f"<html>{HOSTILE}</html>".encode()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_server_s_error_page_quoted_on_stderr_cannot_drive_the_terminal() -> None:
    shown = _trace_from(_HostilePage)
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1
    assert "not found (404): <html>" in shown.stderr and "safe" in shown.stderr
    assert not CONTROL.search(shown.stderr.rstrip("\n")), repr(shown.stderr)


def test_a_reader_that_leaves_early_stops_the_command_quietly(tmp_path: Path) -> None:
    """``workbench trace FILE | head``: the pipe closes while the command still writes."""
    answers = [f"answer {i} " + "words " * 20 for i in range(300)]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(foreign_trace(answers)))
    command = [sys.executable, "-m", "workbench.cli", "trace", str(path), "--messages"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.readline()
        process.stdout.close()  # as `head -1` does once it has its line
        errors = process.stderr.read().decode()
        status = process.wait(timeout=60)
    assert status == 1 and errors == ""  # no BrokenPipeError traceback


def test_a_trace_is_its_own_spans() -> None:
    trace = wb.load_trace(json.dumps(foreign_trace(["Hello"])))
    with pytest.raises(wb.UsageError, match="a Trace has its own spans"):
        report_html(trace, telemetry=wb.Telemetry())
    assert "Trace " + TRACE_ID in report_html(trace)
