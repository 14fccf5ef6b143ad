"""Fault table: runs long enough for what they hold to grow faster than they do.

A 5,000-step run gained 112-115 kB a step at steps 4,000-5,000 against 40 kB at steps 500-1,500,
with or without a store: each state copied the conversation, and each snapshot kept its state,
so a run held one history per step. Now a conversation is a view of one append-only log
(`workbench.conversation`), and a run's memory is linear in its messages: held per step, a long
run and a short one are the same, live and loaded from the store. Memory is measured
(tracemalloc, after a collection), never time; `bench/long_run.py` has the figures.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

import pytest

import workbench as wb
from bench._workload import PROMPT, our_agent, ours_ok

pytestmark = pytest.mark.timeout(300)

SHORT, LONG = 250, 1_000
FLAT = 1.1
"""How much more a step of the long run may hold than a step of the short one."""


def held_per_step(n: int, store: bool) -> tuple[float, Any]:
    """Bytes per step a finished run of ``n`` steps leaves held (its result and its store)."""
    kept = wb.RunStore(":memory:") if store else None
    agent = our_agent(n, store=kept or False)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = asyncio.run(agent.run(PROMPT))
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert ours_ok(result, n)
    return held / n, (result, kept)


def test_a_long_run_holds_no_more_per_step_than_a_short_one() -> None:
    short, _ = held_per_step(SHORT, store=False)
    long, (result, _) = held_per_step(LONG, store=False)
    assert long <= FLAT * short, (
        f"{long / 1e3:.1f} kB/step at {LONG} steps, {short / 1e3:.1f} at {SHORT}"
    )
    first, last = result.snapshots[0].state.messages, result.snapshots[-1].state.messages
    assert (len(first), len(last)) == (1, 2 * LONG - 1)  # each snapshot still sees its own


def test_with_a_store_and_loaded_from_it_too() -> None:
    def per_step(n: int) -> tuple[float, float]:
        live, (result, store) = held_per_step(n, store=True)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        loaded = store.load(result.run_id)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert loaded.state == result.state and len(loaded.snapshots) == n
        assert loaded.snapshots[n // 2].state.messages == result.snapshots[n // 2].state.messages
        return live, held / n

    (live_short, loaded_short), (live_long, loaded_long) = per_step(SHORT), per_step(LONG)
    assert live_long <= FLAT * live_short, f"live: {live_long:.0f} B/step, {live_short:.0f} short"
    assert loaded_long <= FLAT * loaded_short, f"loaded: {loaded_long:.0f}, {loaded_short:.0f}"
