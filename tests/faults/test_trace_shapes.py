"""Fault table: trace files whose parts have the wrong shape.

Already covered in ``tests/test_load_trace.py``: truncated files, documents of no known format,
a ``resourceSpans`` that is not a list, ids of the wrong length or all zero, a span's status,
events or attributes of the wrong type. Here: every other part. Jaeger ``processes`` as a list,
an OTLP ``resource`` as a list or ``scope`` as a string once raised `AttributeError`, and a start
time of ``1e999`` `OverflowError`. The decision: a part the reader needs (a container, an id, a
time) that has the wrong shape is a `TraceLoadError` saying where in the document it is and
which span; an attribute of a kind the reader does not know is kept as None. The readers are
fuzzed from the formats' shapes, with any JSON in place of any part, so the class is closed.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.faults.traces import SPAN_ID, TRACE_ID, jaeger, otlp, otlp_span
from workbench.telemetry.readers import phoenix_spans


@pytest.mark.parametrize(
    ("document", "where"),
    [
        (jaeger(processes=[{"serviceName": "x"}]), r"data\[0\]: processes should be an object"),
        (jaeger(processes={"p1": ["x"]}), r"data\[0\]\.spans\[0\] \(span '\w+'\): process 'p1'"),
        (otlp(resource=[{"attributes": []}]), r"resourceSpans\[0\]: resource should be an object"),
        (
            otlp(scopeSpans=[{"scope": "s", "spans": []}]),
            r"resourceSpans\[0\]\.scopeSpans\[0\]: scope should be an object",
        ),
        (
            otlp(scopeSpans=[{"spans": [otlp_span(startTimeUnixNano=1e999)]}]),
            r"scopeSpans\[0\]\.spans\[0\] \(span 'b7ad6b7169203331'\): inf is not an integer",
        ),
        (
            otlp(scopeSpans=[{"spans": [otlp_span(endTimeUnixNano=str(10**30))]}]),
            r"spans\[0\] .*out of range",
        ),
        (jaeger(startTime=1e999), r"data\[0\]\.spans\[0\] .*inf is not an integer time"),
        (jaeger(startTime=-5), r"data\[0\]\.spans\[0\] .*out of range"),
        (
            otlp(
                scopeSpans=[
                    {"spans": [otlp_span(attributes=[{"key": "n", "value": {"intValue": 1e999}}])]}
                ]
            ),
            r"spans\[0\] .*inf is not an integer",
        ),
    ],
)
def test_a_part_of_the_wrong_shape_is_a_trace_load_error_saying_where(
    document: str, where: str
) -> None:
    with pytest.raises(wb.TraceLoadError, match=where):
        wb.load_trace(document)


# -- fuzzing from the shapes -------------------------------------------------------------------

any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()  # NaN and the infinities too: Python's json writes and reads them
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def shaped(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually the part as the format has it; sometimes any JSON at all in its place."""
    return st.one_of(valid, valid, valid, any_json)


def fields(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    return shaped(
        st.fixed_dictionaries(
            {k: shaped(v) for k, v in required.items()},
            optional={k: shaped(v) for k, v in optional.items()},
        )
    )


hex_ids = st.sampled_from([TRACE_ID, "W47/95gDgQPSabYzgT/GDA==", "0" * 32, "abc"])
span_ids = st.sampled_from([SPAN_ID, "7uGbfsPBsXQ=", "b7ad6b71692033", "xyz"])
times = (
    st.integers(0, 2**66)
    | st.integers(0, 2**66).map(str)
    | st.sampled_from([1.5, -1, "1e999", float("inf"), float("nan")])
)
any_value = st.deferred(
    lambda: st.one_of(
        st.builds(lambda v: {"stringValue": v}, st.text(max_size=5)),
        st.builds(lambda v: {"intValue": v}, st.integers() | st.text(max_size=4)),
        st.builds(lambda v: {"doubleValue": v}, st.floats() | st.sampled_from(["NaN", "x"])),
        st.builds(lambda v: {"boolValue": v}, any_json),
        st.builds(lambda v: {"bytesValue": v}, st.text(max_size=4)),
        fields({"arrayValue": fields({"values": st.lists(any_value, max_size=2)}, {})}, {}),
        fields({"kvlistValue": fields({"values": attributes}, {})}, {}),
    )
)
attributes = shaped(
    st.lists(fields({"key": st.text(max_size=4), "value": any_value}, {}), max_size=3)
)
span = fields(
    {"traceId": hex_ids, "spanId": span_ids, "startTimeUnixNano": times},
    {
        "parentSpanId": span_ids,
        "name": st.text(max_size=5),
        "kind": st.integers(0, 6) | st.sampled_from(["SPAN_KIND_CLIENT", "bogus"]),
        "endTimeUnixNano": times,
        "attributes": attributes,
        "events": st.lists(
            fields(
                {"name": st.text(max_size=4)}, {"timeUnixNano": times, "attributes": attributes}
            ),
            max_size=2,
        ),
        "links": st.lists(
            fields({"traceId": hex_ids, "spanId": span_ids}, {"attributes": attributes}), max_size=2
        ),
        "status": fields(
            {}, {"code": st.integers(0, 3) | st.text(max_size=4), "message": any_json}
        ),
    },
)
otlp_documents = st.fixed_dictionaries(
    {
        "resourceSpans": shaped(
            st.lists(
                fields(
                    {
                        "scopeSpans": st.lists(
                            fields(
                                {"spans": st.lists(span, max_size=3)},
                                {"scope": fields({}, {"name": any_json, "version": any_json})},
                            ),
                            max_size=2,
                        )
                    },
                    {"resource": fields({}, {"attributes": attributes})},
                ),
                max_size=2,
            )
        )
    }
)
jaeger_tag = fields(
    {"key": st.text(max_size=4), "value": any_json},
    {"type": st.sampled_from(["string", "int64", "float64", "bool", "binary"]) | any_json},
)
jaeger_span = fields(
    {
        "traceID": hex_ids | st.just("96000000000000a0"),
        "spanID": span_ids | st.just("b4"),
        "startTime": times,
    },
    {
        "operationName": any_json,
        "duration": times,
        "processID": st.sampled_from(["p1", "p2"]) | any_json,
        "tags": shaped(st.lists(jaeger_tag, max_size=3)),
        "references": shaped(
            st.lists(
                fields(
                    {"traceID": hex_ids, "spanID": span_ids},
                    {"refType": st.sampled_from(["CHILD_OF", "FOLLOWS_FROM"]) | any_json},
                ),
                max_size=2,
            )
        ),
        "logs": shaped(
            st.lists(
                fields({"timestamp": times}, {"fields": shaped(st.lists(jaeger_tag))}), max_size=2
            )
        ),
    },
)
jaeger_documents = st.fixed_dictionaries(
    {
        "data": st.lists(
            fields(
                {"traceID": hex_ids, "spans": shaped(st.lists(jaeger_span, max_size=3))},
                {
                    "processes": shaped(
                        st.dictionaries(
                            st.sampled_from(["p1", "p2"]),
                            fields(
                                {"serviceName": any_json}, {"tags": shaped(st.lists(jaeger_tag))}
                            ),
                        )
                    )
                },
            ),
            max_size=2,
        )
    }
)

PLAIN = (str, bool, int, float, tuple, type(None))


def loads_or_refuses(document: Any) -> None:
    """The one contract: a `Trace` of plain spans, or a `TraceLoadError`; nothing else."""
    try:
        trace = wb.load_trace(json.dumps(document))
    except wb.TraceLoadError:
        return
    for span in trace.spans:
        assert 0 <= span.start_ns <= span.end_ns < 2**64
        assert all(isinstance(v, PLAIN) for v in span.attributes.values())
        assert all(0 <= e.time_ns < 2**64 for e in span.events)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(otlp_documents)
def test_any_otlp_document_loads_or_is_a_trace_load_error(document: Any) -> None:
    loads_or_refuses(document)


@FUZZ
@given(jaeger_documents)
def test_any_jaeger_document_loads_or_is_a_trace_load_error(document: Any) -> None:
    loads_or_refuses(document)


@FUZZ
@given(st.lists(span, max_size=3))
def test_any_phoenix_page_reads_or_is_a_trace_load_error(spans: list[Any]) -> None:
    with contextlib.suppress(wb.TraceLoadError):
        phoenix_spans(json.loads(json.dumps(spans)))
