"""Replay speed: an agent run answered by a cassette against the same run against the live model.

    .venv/bin/python bench/replay_speed.py [--live-runs 3] [--replays 200] [--base-url URL]

What is measured: one whole agent run (few-shot history, a tool call, the answer: two model
calls) with the real local model (``scripts/llm-server start``, Gemma 3 270M on llama.cpp), and
the same run answered from the cassette recorded during the first live run. Reported: median
seconds per run for each and the speed-up (live / cassette). That is what a test suite gains by
replaying instead of calling the model.

Side by side, offline (always run): the cassette's replay against `ReplayModel.from_run` of the
same run, in memory, so the cost of the cassette itself (comparing each request, redacting it,
reading the file once) is visible as a ratio. They take turns in rounds, medians reported.

When no server answers, the live side is skipped with the reason and the offline side still runs
(from a cassette recorded with a scripted model that gives the same answers).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import workbench as wb
from tests.live.fewshot import BASE_URL, MODEL, SETTINGS, examples, server_down_reason

PROMPT = "What is 17 + 25?"


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def run_once(model: wb.Model) -> wb.RunResult:
    agent = wb.Agent(model=model, name="calculator", tools=[add], stop=wb.MaxSteps(4), store=False)
    result = agent.run_sync(PROMPT, history=examples(), settings=SETTINGS)
    if result.status is not wb.ExecutionStatus.COMPLETED:
        raise SystemExit(f"the run did not complete: {result.error}")
    return result


def timed(make: Callable[[], wb.Model]) -> float:
    model = make()
    started = time.perf_counter()
    run_once(model)
    return time.perf_counter() - started


def scripted() -> wb.ScriptedModel:
    """The answers the real model gives, for the offline side without a server."""
    return wb.ScriptedModel(
        [
            wb.ModelResponse.tool_call("add", {"a": 17, "b": 25}, call_id="c1"),
            "17 + 25 = 42",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--live-runs", type=int, default=3)
    parser.add_argument("--replays", type=int, default=200)
    parser.add_argument("--base-url", default=BASE_URL)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="wb-replay-bench-"))
    path = folder / "calculator.json"

    down = server_down_reason(args.base_url)
    live_times: list[float] = []
    if down is None:
        live = wb.OpenAIModel(MODEL, base_url=args.base_url, api_key="")
        started = time.perf_counter()
        recorded = run_once(wb.cassette(path, live, mode="record"))
        live_times.append(time.perf_counter() - started)
        live_times += [timed(lambda: live) for _ in range(args.live_runs - 1)]
    else:
        print(f"live side skipped: {down}")
        recorded = run_once(wb.cassette(path, scripted(), mode="record"))

    cassette_times: list[float] = []
    memory_times: list[float] = []
    for _ in range(args.replays):  # in turns, so other load falls on both alike
        cassette_times.append(timed(lambda: wb.cassette(path, mode="replay")))
        memory_times.append(timed(lambda: wb.ReplayModel.from_run(recorded, strict=True)))

    cassette = statistics.median(cassette_times)
    memory = statistics.median(memory_times)
    print(f"one agent run: {len(recorded.steps)} model calls, model {MODEL}, pid {os.getpid()}")
    if live_times:
        median_live = statistics.median(live_times)
        print(f"  live model        {median_live * 1e3:10.2f} ms/run  ({len(live_times)} runs)")
        print(f"  cassette replay   {cassette * 1e3:10.2f} ms/run  ({args.replays} runs)")
        print(f"  speed-up live / cassette: {median_live / cassette:,.0f}x")
    print("offline, side by side:")
    print(f"  cassette replay   {cassette * 1e3:10.3f} ms/run")
    print(f"  ReplayModel (mem) {memory * 1e3:10.3f} ms/run")
    print(f"  ratio cassette / ReplayModel: {cassette / memory:.2f}x")


if __name__ == "__main__":
    main()
