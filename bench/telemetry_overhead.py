"""What telemetry adds to a step: ours against the bare-span floor and pydantic-ai's (issue 4).

The run, in both frameworks: a function model calls one trivial async tool (``add(a, b)``) N-1
times, then answers ``"done"`` (N = 50); responses carry fixed usage, so nothing estimates tokens.
Each cost is a whole run's CPU time divided by N, in µs per step.

- **ours**: ``wb.Agent(wb.FunctionModel(...), tools=[add], store=False)``, without telemetry
  ("off") and with ``telemetry=wb.Telemetry(tracer_provider=provider, capture_content=True)``
  ("on"): spans kept in memory by the telemetry's own collector (its in-memory exporter), content
  captured and redacted. Snapshots are on in both runs: the loop takes one every step whatever the
  store, and the spans carry their ids. Both runs use ``store=False`` (no run store): its
  SQLite writes are the store's cost (``bench/snapshot_cost.py``), not telemetry's, and with a
  store in both runs the difference would only get the store's noise.
- **pydantic-ai**: ``Agent(FunctionModel(...))`` with ``add`` registered by ``tool_plain`` and
  ``UsageLimits(request_limit=None)``, without instrumentation ("off") and with the
  ``Instrumentation`` capability ("on"): ``InstrumentationSettings(tracer_provider=...)`` with its
  own ``TracerProvider`` whose spans go to an ``InMemorySpanExporter`` through a
  ``SimpleSpanProcessor``; content included (its default). No meter provider is passed, so its
  token histogram goes to OpenTelemetry's no-op global meter (ours records no metrics).
- **floor**: the spans our run makes, as many and in the same tree (run; per step: step, prepare,
  chat, tool, continuation), made with ``start_span(name, context=parent)`` and ``end()`` and no
  attributes, in a tight loop, from a tracer of the same provider as ours under our scope, so they
  go through the very same span processor (our in-memory collector). This is the target's floor.

Two references in the loop explain the figure (both are a `GivenSpans` observer on a run without
telemetry, minus that run without it):

- **floor in the loop**: the same bare spans, made from the loop's own callbacks. Made between the
  loop's own work they cost more than in a tight loop (the loop's objects make the garbage
  collector's passes dearer and push the SDK out of the CPU caches): no per-step instrumentation of
  this loop can cost less.
- **our spans replayed**: our spans with the very attributes a telemetry run recorded (content
  included), made from the loop's callbacks with nothing computed: what our span tree costs the
  OpenTelemetry SDK by itself. Ours minus this is our own work (encoding content, redacting,
  building the attributes).

"Adds" is on minus off, taken per repetition (the runs are next to each other) and the median taken
over repetitions; the floor is the median of its runs. Method: warm-up runs first; then each
repetition runs the seven configurations once each, in an order rotated every repetition, so machine
noise hits them alike; every timed run starts after ``gc.collect()``, with the collector on (its
cost is part of the cost). Time is the process's CPU time (``time.process_time``): on a shared
machine other processes' load would otherwise be counted. Collected spans are checked and cleared
between runs, outside the timing. Every run is checked (N steps, answer ``"done"``, 5N spans).

Targets (issue 4): what ours adds is at most 2× the floor, and less than what pydantic-ai's adds.

    .venv/bin/python bench/telemetry_overhead.py                  # about half a minute
    .venv/bin/python bench/telemetry_overhead.py --quick          # smoke run (seconds)
    .venv/bin/python bench/telemetry_overhead.py --json out.json  # also write the figures
    .venv/bin/python bench/telemetry_overhead.py --profile        # cProfile of ours, on
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from _workload import ANSWER, IN_TOKENS, OUT_TOKENS, PROMPT, our_agent, ours_ok, step_of
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, set_span_in_context

import workbench as wb
from workbench.telemetry import names

STEPS = 50
TARGET_VS_FLOOR = 2.0

OURS_OFF, OURS_ON = "ours_off", "ours_on"
PAI_OFF, PAI_ON = "pydantic_ai_off", "pydantic_ai_on"
FLOOR, FLOOR_IN_LOOP, REPLAYED = "floor", "floor_in_loop", "replayed_in_loop"
CONFIGS = (OURS_OFF, OURS_ON, PAI_OFF, PAI_ON, FLOOR, FLOOR_IN_LOOP, REPLAYED)


@dataclass
class Case:
    """One configuration: ``run`` is timed; ``settle`` (untimed) checks it and clears its spans."""

    run: Callable[[], None]
    settle: Callable[[], None]


def _check(ok: bool, what: str, detail: object) -> None:
    if not ok:
        raise SystemExit(f"{what}: the run did not do what it should ({detail})")


def _spans_check(telemetry: wb.Telemetry, n: int, what: str) -> Callable[[], None]:
    def settle() -> None:
        made = len(telemetry.spans)
        # the run, and per step: step, prepare, chat, tool (none at the last), continuation
        expected = 5 * n
        _check(made == expected, what, f"{made} spans, expected {expected}")
        telemetry.clear()

    return settle


# -- ours -----------------------------------------------------------------------------------------


def ours(
    n: int,
    loop: asyncio.AbstractEventLoop,
    telemetry: wb.Telemetry | None,
    observers: tuple[wb.RunObserver, ...] = (),
) -> Callable[[], None]:
    """A function that makes our run once (``store=False``) and checks its result."""
    agent = our_agent(n, telemetry=telemetry, observers=observers)

    def run() -> None:
        result = loop.run_until_complete(agent.run(PROMPT))
        _check(ours_ok(result, n), "ours", result.status)

    return run


@dataclass(frozen=True)
class Shape:
    """One span to make: its name and kind, attributes at its start and (step, run) at its end."""

    name: str
    kind: SpanKind = SpanKind.INTERNAL
    attributes: dict[str, Any] | None = None
    at_end: dict[str, Any] | None = None


Shapes = Callable[[str, int], Shape]
"""The span to make for a role (``run``, ``step``, ``prepare``, ``chat``, ``tool``,
``continuation``) at a step."""


class GivenSpans(wb.RunObserver):
    """Makes our run's spans from the loop's callbacks, with names and attributes given beforehand.

    The references in the loop: bare spans (the floor in the loop), and our own spans replayed with
    the attributes a telemetry run recorded (what the spans cost the SDK, nothing computed).
    """

    def __init__(self, telemetry: wb.Telemetry, shapes: Shapes) -> None:
        self._tracer = telemetry.tracer_provider.get_tracer(names.SCOPE)
        self._shapes = shapes
        self._run: Any = None
        self._step: Any = None
        self._run_ctx: Any = None
        self._step_ctx: Any = None
        self._run_shape = self._step_shape = Shape("")

    def _start(self, role: str, step: int, parent: Any) -> tuple[Any, Shape]:
        shape = self._shapes(role, step)
        span = self._tracer.start_span(
            shape.name, context=parent, kind=shape.kind, attributes=shape.attributes
        )
        return span, shape

    def _end(self, span: Any, shape: Shape) -> None:
        if shape.at_end:
            span.set_attributes(shape.at_end)
        span.end()

    def run_started(self, state: wb.AgentState) -> None:
        self._run, self._run_shape = self._start("run", 0, None)
        self._run_ctx = set_span_in_context(self._run)

    def phase_ended(self, event: wb.PhaseEvent, started_at: float) -> None:
        if event.phase is wb.Phase.PREPARE:
            self._step, self._step_shape = self._start("step", event.step, self._run_ctx)
            self._step_ctx = set_span_in_context(self._step)
            self._end(*self._start("prepare", event.step, self._step_ctx))
        elif event.phase is wb.Phase.CONTINUATION:
            self._end(*self._start("continuation", event.step, self._step_ctx))

    def model_called(self, step: int, *args: Any) -> None:
        self._end(*self._start("chat", step, self._step_ctx))

    def tool_called(self, step: int, *args: Any) -> None:
        self._end(*self._start("tool", step, self._step_ctx))

    def step_ended(self, record: wb.StepRecord) -> None:
        self._end(self._step, self._step_shape)

    def run_ended(self, state: wb.AgentState) -> None:
        self._end(self._run, self._run_shape)


def bare(role: str, step: int) -> Shape:
    """A bare span: a name, nothing else."""
    return Shape(role, SpanKind.CLIENT if role == "chat" else SpanKind.INTERNAL)


_ROLES = {
    names.SPAN_RUN: "run",
    names.SPAN_STEP: "step",
    names.SPAN_PREPARE: "prepare",
    names.SPAN_CHAT: "chat",
    names.SPAN_TOOL: "tool",
    names.SPAN_CONTINUATION: "continuation",
}
_AT_END = {
    names.RUN_STATUS,
    names.RUN_STEPS,
    names.RUN_STOP_REASON,
    names.STEP_STATUS,
    names.STEP_INPUT_TOKENS,
    names.STEP_OUTPUT_TOKENS,
    names.STEP_TOOL_CALLS,
    names.STEP_STOP_REASON,
}


def recorded(n: int, loop: asyncio.AbstractEventLoop) -> Shapes:
    """Our spans of one telemetry run (content on), to make again with their recorded attributes."""
    telemetry = wb.Telemetry(tracer_provider=TracerProvider(), capture_content=True)
    ours(n, loop, telemetry)()
    shapes: dict[tuple[str, int], Shape] = {}
    for span in telemetry.spans:
        attributes = dict(span.attributes or {})
        role = _ROLES[span.name.split(" ")[0]]
        index = attributes[names.STEP_INDEX]
        assert isinstance(index, int)
        step = 0 if role == "run" else index
        at_end = {
            k: v
            for k, v in attributes.items()
            if k in _AT_END or k.startswith((names.TIMING_PREFIX, names.USAGE_PREFIX))
        }
        start = {k: v for k, v in attributes.items() if k not in at_end}
        shapes[role, step] = Shape(span.name, span.kind, start, at_end)
    _check(len(shapes) == 5 * n, "recorded", f"{len(shapes)} spans")
    return lambda role, step: shapes[role, step]


# -- pydantic-ai ----------------------------------------------------------------------------------


def pydantic_ai(
    n: int, loop: asyncio.AbstractEventLoop, exporter: InMemorySpanExporter | None
) -> Case:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.usage import RequestUsage, UsageLimits

    async def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        step = step_of(len(messages))
        usage = RequestUsage(input_tokens=IN_TOKENS, output_tokens=OUT_TOKENS)
        if step < n:
            call = ToolCallPart("add", {"a": step, "b": 1}, tool_call_id=f"c{step}")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    capabilities: list[Any] = []
    if exporter is not None:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
        capabilities.append(Instrumentation(settings=settings))
    agent = Agent(FunctionModel(respond), capabilities=capabilities)
    agent.tool_plain(name="add")(add)
    limits = UsageLimits(request_limit=None)
    what = PAI_OFF if exporter is None else PAI_ON

    def run() -> None:
        result = loop.run_until_complete(agent.run(PROMPT, usage_limits=limits))
        _check(result.output == ANSWER and result.usage.requests == n, what, result.usage)

    def settle() -> None:
        if exporter is not None:
            _check(len(exporter.get_finished_spans()) > n, what, "no spans")
            exporter.clear()

    return Case(run, settle)


# -- the floor in a tight loop --------------------------------------------------------------------


def floor(n: int, telemetry: wb.Telemetry) -> Case:
    """Bare spans in our run's tree, through the same provider and collector as ours."""
    tracer = telemetry.tracer_provider.get_tracer(names.SCOPE)

    def run() -> None:
        root = tracer.start_span("run")
        root_ctx = set_span_in_context(root)
        for index in range(1, n + 1):
            step = tracer.start_span("step", context=root_ctx)
            step_ctx = set_span_in_context(step)
            tracer.start_span("prepare", context=step_ctx).end()
            tracer.start_span("chat", context=step_ctx, kind=SpanKind.CLIENT).end()
            if index < n:
                tracer.start_span("tool", context=step_ctx).end()
            tracer.start_span("continuation", context=step_ctx).end()
            step.end()
        root.end()

    return Case(run, _spans_check(telemetry, n, FLOOR))


# -- measuring ------------------------------------------------------------------------------------


@dataclass
class Figures:
    """µs of CPU per step: medians of each configuration and of the on − off differences."""

    steps: int
    repetitions: int
    per_step_us: dict[str, float]
    ours_adds_us: float
    pydantic_ai_adds_us: float
    floor_us: float
    floor_in_loop_us: float
    replayed_us: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    python: str
    opentelemetry_sdk: str
    pydantic_ai: str

    @property
    def ours_vs_floor(self) -> float:
        return self.ours_adds_us / self.floor_us

    @property
    def ours_vs_floor_in_loop(self) -> float:
        return self.ours_adds_us / self.floor_in_loop_us

    @property
    def replayed_vs_floor(self) -> float:
        return self.replayed_us / self.floor_us

    @property
    def ours_vs_pydantic_ai(self) -> float:
        return self.ours_adds_us / self.pydantic_ai_adds_us

    @property
    def met(self) -> bool:
        return self.ours_vs_floor <= TARGET_VS_FLOOR and self.ours_vs_pydantic_ai < 1.0


def cases(n: int, loop: asyncio.AbstractEventLoop) -> dict[str, Case]:
    telemetry = wb.Telemetry(tracer_provider=TracerProvider(), capture_content=True)
    nothing = Case(ours(n, loop, None), lambda: None)
    return {
        OURS_OFF: nothing,
        OURS_ON: Case(ours(n, loop, telemetry), _spans_check(telemetry, n, OURS_ON)),
        PAI_OFF: pydantic_ai(n, loop, None),
        PAI_ON: pydantic_ai(n, loop, InMemorySpanExporter()),
        FLOOR: floor(n, telemetry),
        FLOOR_IN_LOOP: Case(
            ours(n, loop, None, (GivenSpans(telemetry, bare),)),
            _spans_check(telemetry, n, FLOOR_IN_LOOP),
        ),
        REPLAYED: Case(
            ours(n, loop, None, (GivenSpans(telemetry, recorded(n, loop)),)),
            _spans_check(telemetry, n, REPLAYED),
        ),
    }


def timed(case: Case, n: int) -> float:
    """CPU µs per step of one run (other processes' load is not counted; it still cools caches)."""
    gc.collect()
    started = time.process_time()
    case.run()
    elapsed = time.process_time() - started
    case.settle()
    return elapsed / n * 1e6


def measure(n: int, repetitions: int, warmup: int) -> Figures:
    load_before = os.getloadavg()
    loop = asyncio.new_event_loop()
    try:
        runs = cases(n, loop)
        for _ in range(warmup):
            for case in runs.values():
                case.run()
                case.settle()
        samples: dict[str, list[float]] = {name: [] for name in CONFIGS}
        for repetition in range(repetitions):
            shift = repetition % len(CONFIGS)
            for name in CONFIGS[shift:] + CONFIGS[:shift]:
                samples[name].append(timed(runs[name], n))
    finally:
        loop.close()

    def adds(on: str, off: str) -> float:
        return statistics.median(a - b for a, b in zip(samples[on], samples[off], strict=True))

    return Figures(
        steps=n,
        repetitions=repetitions,
        per_step_us={name: statistics.median(values) for name, values in samples.items()},
        ours_adds_us=adds(OURS_ON, OURS_OFF),
        pydantic_ai_adds_us=adds(PAI_ON, PAI_OFF),
        floor_us=statistics.median(samples[FLOOR]),
        floor_in_loop_us=adds(FLOOR_IN_LOOP, OURS_OFF),
        replayed_us=adds(REPLAYED, OURS_OFF),
        load_before=load_before,
        load_after=os.getloadavg(),
        python=platform.python_version(),
        opentelemetry_sdk=metadata.version("opentelemetry-sdk"),
        pydantic_ai=metadata.version("pydantic-ai-slim"),
    )


def report(figures: Figures) -> None:
    per = figures.per_step_us
    print(
        f"python {figures.python}, opentelemetry-sdk {figures.opentelemetry_sdk}, "
        f"pydantic-ai {figures.pydantic_ai}; {figures.steps}-step run; CPU µs per step, medians "
        f"of {figures.repetitions} interleaved repetitions"
    )
    before, after = (
        " ".join(f"{x:.2f}" for x in load) for load in (figures.load_before, figures.load_after)
    )
    print(f"load average before {before}, after {after}; {os.cpu_count()} cores")
    rows = (
        ("ours, telemetry off", per[OURS_OFF]),
        ("ours, telemetry on", per[OURS_ON]),
        ("pydantic-ai, instrumentation off", per[PAI_OFF]),
        ("pydantic-ai, instrumentation on", per[PAI_ON]),
        ("ours off + bare spans from its callbacks", per[FLOOR_IN_LOOP]),
        ("ours off + our spans replayed", per[REPLAYED]),
        ("ours adds (on - off)", figures.ours_adds_us),
        ("pydantic-ai adds (on - off)", figures.pydantic_ai_adds_us),
        ("floor: bare spans, same count and provider", figures.floor_us),
        ("floor in the loop (bare spans - off)", figures.floor_in_loop_us),
        ("our spans replayed in the loop (- off)", figures.replayed_us),
        ("our own work (ours adds - replayed)", figures.ours_adds_us - figures.replayed_us),
    )
    for label, value in rows:
        print(f"  {label:<44} {value:9.1f}")
    target = f"(target <= {TARGET_VS_FLOOR:.0f})"
    print(
        f"  ours / floor              {figures.ours_vs_floor:5.2f}  {target}\n"
        f"  ours / floor in the loop  {figures.ours_vs_floor_in_loop:5.2f}\n"
        f"  replayed / floor          {figures.replayed_vs_floor:5.2f}  (our spans' cost alone)\n"
        f"  ours / pydantic-ai        {figures.ours_vs_pydantic_ai:5.2f}  (target < 1)"
    )
    print("targets met" if figures.met else "TARGETS NOT MET")


def profile(n: int, runs: int) -> None:
    """cProfile of our run with telemetry on (top functions by own time)."""
    loop = asyncio.new_event_loop()
    telemetry = wb.Telemetry(tracer_provider=TracerProvider(), capture_content=True)
    run, settle = ours(n, loop, telemetry), _spans_check(telemetry, n, OURS_ON)
    run()
    settle()
    profiler = cProfile.Profile()
    for _ in range(runs):
        profiler.enable()
        run()
        profiler.disable()
        settle()
    loop.close()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    parser.add_argument("--json", type=str, metavar="PATH", help="also write the figures here")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps per run ({STEPS})")
    parser.add_argument("--repeat", type=int, help="repetitions (default 41, 5 with --quick)")
    parser.add_argument("--profile", action="store_true", help="profile ours (on) instead")
    args = parser.parse_args()
    if args.profile:
        profile(args.steps, 20)
        return
    repetitions = args.repeat or (5 if args.quick else 41)
    figures = measure(args.steps, repetitions, warmup=1 if args.quick else 3)
    report(figures)
    if args.json:
        data = {
            **figures.__dict__,
            "ours_vs_floor": figures.ours_vs_floor,
            "ours_vs_floor_in_loop": figures.ours_vs_floor_in_loop,
            "replayed_vs_floor": figures.replayed_vs_floor,
            "ours_vs_pydantic_ai": figures.ours_vs_pydantic_ai,
            "targets": {"vs_floor": TARGET_VS_FLOOR, "vs_pydantic_ai": 1.0},
            "met": figures.met,
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
    sys.exit(0)


if __name__ == "__main__":
    main()
