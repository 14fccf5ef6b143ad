"""Fault table: trace files that cost more to read than their size.

A 2 kB OTLP file whose ``kvlistValue`` nests 40 levels deep once took a process to 21 GB: each
nested list was encoded to JSON as it was read, and that text encoded again in the list around
it, doubling at every level. A reader must cost at most linear in its input. Measured as memory
(tracemalloc's peak against the input's size), never as time; the shapes are generated, so the
class is closed, not the one example. Nesting past the depth rule is `test_nesting.py`'s.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.faults.traces import attribute, otlp, tagged

PER_BYTE = 100
"""What reading may cost, at most, per byte of input (it is about 10)."""


def peak_of_loading(text: str) -> int:
    wb.load_trace(
        otlp(attribute({"stringValue": "warm"}))
    )  # imports and caches are not the reading's
    tracemalloc.start()
    try:
        wb.load_trace(text)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def kvlist(depth: int) -> dict[str, Any]:
    """A key/value list nested ``depth`` deep, with quotes to escape at every level."""
    value: dict[str, Any] = {"stringValue": 'say "hi"'}
    for _ in range(depth):
        pair = [{"key": "k", "value": value}, {"key": "q", "value": {"stringValue": '"x"'}}]
        value = {"kvlistValue": {"values": pair}}
    return value


def test_a_kvlist_nested_25_deep_costs_what_its_file_does() -> None:
    text = otlp(attribute(kvlist(25)))  # 2.9 kB; read by doubling, this was 2**25 times the text
    assert len(text) < 3_000
    assert peak_of_loading(text) < PER_BYTE * len(text)
    (span,) = wb.load_trace(text).spans
    value = json.loads(span.attributes["deep"])  # one JSON text, nested as the file is
    for _ in range(25):
        value = value["k"]
    assert value == 'say "hi"'


any_values = st.deferred(
    lambda: st.one_of(
        st.builds(lambda s: {"stringValue": s}, st.text(alphabet='"\\é\n ab', max_size=8)),
        st.builds(lambda i: {"intValue": str(i)}, st.integers()),
        st.builds(lambda b: {"boolValue": b}, st.booleans()),
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(any_values, max_size=3)),
        st.builds(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
            st.lists(st.tuples(st.text(max_size=3), any_values), max_size=3),
        ),
    )
)


def chain(depth: int, leaf: Any) -> Any:
    """``leaf`` under ``depth`` levels of arrays and key/value lists, alternating."""
    value = leaf
    for level in range(depth):
        if level % 2:
            value = {"arrayValue": {"values": [value, {"stringValue": '"'}]}}
        else:
            value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


@settings(max_examples=60, deadline=None)
@given(leaf=any_values, depth=st.integers(0, 24))
def test_any_otlp_value_is_read_in_memory_linear_in_its_size(leaf: Any, depth: int) -> None:
    text = otlp(attribute(chain(depth, leaf)))
    try:
        peak = peak_of_loading(text)
    except wb.TraceLoadError:  # nested past the depth rule: refused, at no cost
        return
    assert peak < PER_BYTE * len(text) + 20_000


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(0, 60))
def test_a_jaeger_tag_holding_nested_json_is_read_in_memory_linear_in_its_size(
    depth: int,
) -> None:
    value: Any = 'say "hi"'
    for _ in range(depth):
        value = {"k": value, "q": ['"x"']}
    text = tagged(value)
    assert peak_of_loading(text) < PER_BYTE * len(text) + 20_000
