"""The typed OTLP/JSON decoder reads exactly what the lenient reader reads, or leaves it to it.

`workbench.telemetry.otlp_decode` is `load_trace`'s quick way through the usual OTLP/JSON file;
`workbench.telemetry.readers` reads every document. For any document the decoder takes, the two
must give the same spans, and it must take the usual ones (ours, a collector's) or it saves
nothing. Made-up documents (hypothesis) hold each kind of value, id, time and status, with
secrets and text outside ASCII in the strings.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.redact import REDACTED
from workbench.telemetry import otlp_decode
from workbench.telemetry.readers import spans_from_document

_HEX = "0123456789abcdef"
_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["sk-abcdefghijklmnop1234", "Authorization: Bearer abc.def.ghi", "café ☕"]),
    st.text(alphabet="api_key=tokn ", max_size=30),
)
_SCALAR = st.one_of(
    _TEXT.map(lambda t: {"stringValue": t}),
    st.booleans().map(lambda b: {"boolValue": b}),
    st.integers(-(2**63), 2**63 - 1).flatmap(
        lambda i: st.sampled_from([{"intValue": str(i)}, {"intValue": i}])
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: {"doubleValue": f}),
    st.sampled_from([{"doubleValue": "NaN"}, {"doubleValue": "-Infinity"}, {}]),
    st.binary(max_size=8).map(lambda b: {"bytesValue": base64.b64encode(b).decode()}),
)
_VALUE = st.one_of(
    _SCALAR,
    st.lists(_SCALAR, max_size=4).map(lambda vs: {"arrayValue": {"values": vs}}),
)
_NESTED = st.one_of(
    st.lists(_VALUE, max_size=2).map(lambda vs: {"arrayValue": {"values": vs}}),
    _SCALAR.map(lambda v: {"kvlistValue": {"values": [{"key": "k", "value": v}]}}),
)


def _attributes(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    keys = st.sampled_from(["gen_ai.operation.name", "a", "b.c", "api_key", "n"])
    pairs = st.tuples(keys, values).map(lambda kv: {"key": kv[0], "value": kv[1]})
    return st.lists(pairs, max_size=5)


def _id(size: int) -> st.SearchStrategy[str]:
    hex_id = st.text(alphabet=_HEX, min_size=2 * size, max_size=2 * size).filter(
        lambda h: h.strip("0")
    )
    return st.one_of(hex_id, hex_id.map(lambda h: base64.b64encode(bytes.fromhex(h)).decode()))


_WRONG_IDS = st.sampled_from(["0" * 32, "zz", ""])
"""Ids the readers refuse (all zero, not hex, none): the decoder leaves them to `readers`."""


_NS = st.integers(10**17, 10**19).flatmap(lambda t: st.sampled_from([t, str(t)]))
_ANY_TIME = st.one_of(
    st.integers(0, 2**64 - 1),
    st.sampled_from([1_700_000_000, 1_700_000_000_000, 1_700_000_000_000_000]),
).flatmap(lambda t: st.sampled_from([t, str(t)]))
"""Times in any unit (a span's end in another unit than its start is out of range)."""


def _span(values: st.SearchStrategy[Any], wrong: bool) -> st.SearchStrategy[dict[str, Any]]:
    time = _ANY_TIME if wrong else _NS
    trace_id = st.one_of(_id(16), _WRONG_IDS) if wrong else _id(16)
    event = st.fixed_dictionaries(
        {"name": st.text(max_size=8)},
        optional={"timeUnixNano": time, "attributes": _attributes(values)},
    )
    link = st.fixed_dictionaries(
        {"traceId": _id(16), "spanId": _id(8)}, optional={"attributes": _attributes(values)}
    )
    status = st.fixed_dictionaries(
        {}, optional={"code": st.sampled_from([0, 1, 2, "STATUS_CODE_ERROR"]), "message": _TEXT}
    )
    return st.fixed_dictionaries(
        {"traceId": trace_id, "spanId": _id(8), "startTimeUnixNano": time},
        optional={
            "parentSpanId": st.one_of(_id(8), st.just("")),
            "name": st.text(max_size=12),
            "kind": st.sampled_from([0, 1, 3, "SPAN_KIND_CLIENT"]),
            "endTimeUnixNano": time,
            "attributes": _attributes(values),
            "events": st.lists(event, max_size=2),
            "links": st.lists(link, max_size=1),
            "status": status,
            "flags": st.just(257),
        },
    )


def _document(
    values: st.SearchStrategy[Any], *, wrong: bool = False
) -> st.SearchStrategy[dict[str, Any]]:
    """OTLP/JSON documents; with ``wrong``, ids and times the readers refuse among them."""
    scope_spans = st.fixed_dictionaries(
        {"spans": st.lists(_span(values, wrong), min_size=1, max_size=3)},
        optional={"scope": st.fixed_dictionaries({"name": st.text(max_size=6)})},
    )
    resource_spans = st.fixed_dictionaries(
        {"scopeSpans": st.lists(scope_spans, min_size=1, max_size=2)},
        optional={"resource": st.fixed_dictionaries({"attributes": _attributes(values)})},
    )
    listed = st.lists(resource_spans, min_size=1, max_size=2)
    return st.fixed_dictionaries({"resourceSpans": listed})


def _lenient(text: str) -> str:
    """What the lenient reader makes of the document: its spans, or the error it says."""
    try:
        return repr(spans_from_document(json.loads(text)))
    except wb.TraceLoadError as exc:
        return f"TraceLoadError: {exc}"


@settings(max_examples=300, deadline=None)
@given(_document(st.one_of(_VALUE, _NESTED), wrong=True))
def test_a_document_the_decoder_takes_reads_as_the_lenient_reader_reads_it(
    document: dict[str, Any],
) -> None:
    text = json.dumps(document, ensure_ascii=False)
    decoded = otlp_decode.spans(text.encode())
    if decoded is not None:  # repr: a NaN is not equal to itself
        assert repr(decoded) == _lenient(text)


@settings(max_examples=150, deadline=None)
@given(_document(_VALUE))
def test_a_valid_document_with_plain_values_is_decoded_not_left(document: dict[str, Any]) -> None:
    text = json.dumps(document)
    decoded = otlp_decode.spans(text.encode())
    assert decoded is not None
    assert repr(decoded) == _lenient(text)
    assert all("sk-abcdefghijklmnop" not in repr(s) for s in decoded)


def test_our_own_file_is_decoded_and_its_secrets_redacted(tmp_path: Any) -> None:
    telemetry = wb.Telemetry(capture_content=True)
    agent = wb.Agent(
        model=wb.ScriptedModel(["the key is sk-abcdefghijklmnop1234"]),
        telemetry=telemetry,
        store=False,
    )
    agent.run_sync("hello")
    path = telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    decoded = otlp_decode.spans(path.read_bytes())
    assert decoded is not None and len(decoded) == len(telemetry.spans)
    assert repr(decoded) == _lenient(path.read_text(encoding="utf-8"))
    loaded = wb.load_trace(path)
    assert "sk-abcdefghijklmnop" not in repr(loaded.spans)
    assert any(REDACTED in str(s.attributes) for s in loaded.spans)


_ONE = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "s", "startTimeUnixNano": "1"}


def _with(span: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


_ONE_SCOPE = {"spans": [_ONE]}
_KV_LIST = [{"key": "k", "value": {"kvlistValue": {"values": []}}}]


@pytest.mark.parametrize(
    ("label", "document"),
    [
        ("snake_case keys", {"resource_spans": [{"scope_spans": [{"spans": [_ONE]}]}]}),
        ("the old field", {"resourceSpans": [{"instrumentationLibrarySpans": [_ONE_SCOPE]}]}),
        ("a field of no version", _with({**_ONE, "x": 1})),
        ("null attributes", _with({**_ONE, "attributes": None})),
        ("a key/value list", _with({**_ONE, "attributes": _KV_LIST})),
        ("no resourceSpans", {"data": []}),
    ],
)
def test_what_the_decoder_leaves_the_lenient_reader_reads(label: str, document: Any) -> None:
    text = json.dumps(document)
    assert otlp_decode.spans(text.encode()) is None, label
    if "data" not in document:
        assert [s.name for s in wb.load_trace(text).spans] == ["s"], label


@pytest.mark.parametrize(
    "text",
    [
        '{"resourceSpans": [], "x": NaN}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "\\ud800"}]}]}]}',
        '{"resourceSpans": []}\n{"result": {"resourceSpans": []}}',
        " \n",
        '{"resourceSpans": [' * 2000,
    ],
    ids=["NaN", "a lone surrogate", "Jaeger's chunks", "no JSON", "nested past msgspec's limit"],
)
def test_json_the_decoder_cannot_parse_is_left_to_the_lenient_reader(text: str) -> None:
    assert otlp_decode.spans(text.encode()) is None
    assert otlp_decode.spans(b"\xef\xbb\xbf" + text.encode()) is None


@settings(max_examples=50, deadline=None)
@given(st.lists(_document(_VALUE), min_size=1, max_size=3))
def test_a_collectors_file_one_request_a_line_is_decoded(documents: list[dict[str, Any]]) -> None:
    text = "\n".join(json.dumps(d) for d in documents) + "\n"
    decoded = otlp_decode.spans(text.encode())
    assert decoded is not None
    assert repr(decoded) == repr([s for d in documents for s in spans_from_document(d)])
