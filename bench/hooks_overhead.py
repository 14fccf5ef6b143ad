"""Cost per call of a hook: in-process (sync and async) and a command hook (issue 3).

Two measurements:

- **call point**: the PreToolUse call point of the loop (`LoopHooks.pre_tool_use`, which builds
  the input, matches hooks, runs them, combines and records their answers) timed in a tight loop
  for a call ``add(a=1, b=2)``, with no hook, one sync in-process hook returning None, one async
  one, and one CommandHook running a trivial Python script (reads the JSON on stdin, exits 0)
  with this interpreter; the command hook also gets the transcript file written for it.
- **loop**: a whole run where the model calls a trivial async tool N-1 times and then answers
  (``wb.FunctionModel`` with fixed usage, ``store=False``), without hooks and with one sync
  PreToolUse hook, in µs per step; on a busy machine this one is noisy, the call point is not.

Figures are medians over repetitions, after warm-up.

    .venv/bin/python bench/hooks_overhead.py           # about half a minute
    .venv/bin/python bench/hooks_overhead.py --quick   # smoke run
    .venv/bin/python bench/hooks_overhead.py --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import workbench as wb
from workbench.hooks.loop import LoopHooks

TRIVIAL_HOOK = "import json, sys\njson.load(sys.stdin)\n"


@wb.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model(steps: int) -> wb.FunctionModel:
    usage = wb.Usage(input_tokens=10, output_tokens=5, requests=1)

    async def answer(messages: object, request: object) -> wb.ModelResponse:
        assert isinstance(messages, tuple | list)
        calls = sum(1 for m in messages if m.role == "assistant")
        if calls < steps - 1:
            return wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}, usage=usage)
        return wb.ModelResponse.text("done", usage=usage)

    return wb.FunctionModel(answer)


def hook_sets(script: Path) -> dict[str, list[wb.Hook | wb.CommandHook]]:
    def nothing(data: wb.HookInput) -> None:
        return None

    async def nothing_async(data: wb.HookInput) -> None:
        return None

    command = shlex.join([sys.executable, str(script)])
    return {
        "none": [],
        "sync": [wb.Hook(wb.HookEvent.PRE_TOOL_USE, nothing)],
        "async": [wb.Hook(wb.HookEvent.PRE_TOOL_USE, nothing_async)],
        "command": [wb.CommandHook(wb.HookEvent.PRE_TOOL_USE, command)],
    }


async def call_point(hooks: list[wb.Hook | wb.CommandHook], calls: int) -> float:
    """Seconds per PreToolUse call point with ``hooks``."""
    ask = wb.Message.assistant_tool_call("add", {"a": 1, "b": 2}, call_id="c1")
    state = wb.AgentState(messages=(wb.Message.user("go"), ask))
    points = LoopHooks(hooks, lambda: state, lambda report: None, max_turns=3)
    call = ask.tool_calls[0]
    for _ in range(max(calls // 10, 1)):  # warm-up
        await points.pre_tool_use(call)
    gc.collect()
    started = time.perf_counter()
    for _ in range(calls):
        verdict = await points.pre_tool_use(call)
        points.take()
    elapsed = time.perf_counter() - started
    assert all(r.error is None for r in verdict.reports), verdict.reports
    points.close()
    return elapsed / calls


async def loop_step(steps: int, hooks: list[wb.Hook | wb.CommandHook]) -> float:
    """Seconds per step of a run where every step but the last calls the tool."""
    agent = wb.Agent(
        model(steps), tools=[add], hooks=hooks, stop=wb.MaxSteps(steps + 10), store=False
    )
    gc.collect()
    started = time.perf_counter()
    result = await agent.run("go")
    elapsed = time.perf_counter() - started
    assert result.output == "done", result.status
    assert len(result.steps) == steps, len(result.steps)
    assert not [e for s in result.steps for e in s.hook_errors], "a hook failed"
    return elapsed / steps


async def measure(quick: bool, script: Path) -> dict[str, float]:
    sets = hook_sets(script)
    repeats = 3 if quick else 7
    calls = {"none": 20_000, "sync": 5_000, "async": 5_000, "command": 20}
    if quick:
        calls = {name: max(n // 20, 3) for name, n in calls.items()}
    figures: dict[str, float] = {}
    for name, hooks in sets.items():
        runs = [await call_point(hooks, calls[name]) for _ in range(repeats)]
        figures[f"call_point_{name}_us"] = statistics.median(runs) * 1e6
    steps = 20 if quick else 200
    for name in ("none", "sync"):
        await loop_step(5, sets[name])
        runs = [await loop_step(steps, sets[name]) for _ in range(repeats)]
        figures[f"loop_{name}_us_per_step"] = statistics.median(runs) * 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few calls and repetitions")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "hook.py"
        script.write_text(TRIVIAL_HOOK)
        figures = asyncio.run(measure(args.quick, script))
    base = figures["call_point_none_us"]
    rows = [
        ("PreToolUse call point, no hook", f"{base:.2f} µs"),
        *(
            (
                f"PreToolUse call point, one {label} hook",
                f"{figures[f'call_point_{name}_us']:.2f} µs "
                f"(+{figures[f'call_point_{name}_us'] - base:.2f})",
            )
            for name, label in (("sync", "sync in-process"), ("async", "async in-process"))
        ),
        (
            "PreToolUse call point, one command hook",
            f"{figures['call_point_command_us'] / 1000:.2f} ms (trivial Python script)",
        ),
        ("loop without hooks", f"{figures['loop_none_us_per_step']:.1f} µs per step"),
        ("loop, one sync PreToolUse hook", f"{figures['loop_sync_us_per_step']:.1f} µs per step"),
    ]
    print(f"python {sys.version.split()[0]}; medians")
    for label, value in rows:
        print(f"  {label:<48} {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
