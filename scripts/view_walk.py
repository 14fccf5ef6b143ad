"""The walk from a run to its drawn views, and the package's import map, as numbers.

For each view built from one run (TraceView, the trace explorer with a click, the report) this
records, with `sys.setprofile`, every function of the package the build enters, in the order
first entered, and prints:

- **stops**: the distinct functions of the package entered;
- **modules**: the distinct modules those live in;
- **back**: how often the walk enters a module it had already left (a reader following the
  value jumps back into a file they had finished with);
- **names**: the distinct function and class names on the walk (what a reader has to keep in
  mind to follow it).

Then the import map: modules, layers, edges between the package's own modules, edges going up
a layer and import cycles (`tests/test_layers.py` fails on either of the last two).

    .venv/bin/python scripts/view_walk.py
    PYTHONPATH=/path/to/another/checkout .venv/bin/python scripts/view_walk.py   # its code
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def walk(build: Callable[[], object], package: str) -> list[tuple[str, str]]:
    """The (module, qualified function name) the call of ``build`` enters, first entry order."""
    seen: dict[tuple[str, str], None] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        name = frame.f_code.co_qualname
        if name.rpartition(".")[2].startswith("<"):  # comprehensions and lambdas: not stops
            return
        if module == package or module.startswith(package + "."):
            seen.setdefault((module, name), None)

    sys.setprofile(profile)
    try:
        build()
    finally:
        sys.setprofile(None)
    return list(seen)


def figures(stops: list[tuple[str, str]]) -> dict[str, int]:
    """Stops, modules, jumps back into a module already left, and names of a walk."""
    back, left, current = 0, set(), None
    for module, _ in stops:
        if module != current:
            if module in left:
                back += 1
            if current is not None:
                left.add(current)
            current = module
    names = {part for _, qualified in stops for part in qualified.split(".") if part != "<locals>"}
    return {
        "stops": len(stops),
        "modules": len({m for m, _ in stops}),
        "back": back,
        "names": len(names),
    }


def a_run() -> Any:
    """A lead with a researcher sub-agent and a tool, recorded by telemetry."""
    import workbench as wb

    @wb.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    telemetry = wb.Telemetry(capture_content=True)
    researcher = wb.Agent(
        model=wb.ScriptedModel(["found it"]), name="researcher", telemetry=telemetry, store=False
    )
    lead = wb.Agent(
        model=wb.ScriptedModel(
            [
                wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}),
                wb.ModelResponse.tool_call("research", {"task": "look"}),
                "done",
            ]
        ),
        name="lead",
        tools=[add, researcher.as_tool("research")],
        telemetry=telemetry,
        store=False,
    )
    return lead.run_sync("go"), telemetry


def views(result: Any, telemetry: Any) -> dict[str, Callable[[], object]]:
    """Each view built from the run, with whichever workbench is imported (now or before)."""
    import workbench as wb
    from workbench.notebook import TraceExplorer, TraceView, waterfall_figure
    from workbench.report import report_html

    def explorer() -> None:
        widget = TraceExplorer(result, telemetry=telemetry)
        widget.selected = widget.rows[3]["id"]  # a click

    def waterfall() -> None:  # one value's way: the spans of a run to the bars drawn
        if hasattr(wb, "trace_of"):
            waterfall_figure(wb.trace_of(result, telemetry=telemetry))
        else:  # the code before the trace model (8d5357f)
            from workbench.notebook import run_view_data

            waterfall_figure(run_view_data(result, telemetry=telemetry).spans)

    return {
        "the waterfall of a run": waterfall,
        "TraceView": lambda: TraceView(result, telemetry=telemetry),
        "TraceView, no telemetry": lambda: TraceView(result),
        "TraceExplorer + a click": explorer,
        "report": lambda: report_html(result, telemetry=telemetry),
    }


def import_map() -> dict[str, int]:
    """The package's modules, layers, internal edges, upward edges and cycles."""
    sys.path.insert(0, str(ROOT))
    layers_test = importlib.import_module("tests.test_layers")
    package = Path(importlib.import_module("workbench").__file__ or "").parent
    found = layers_test.edges(package)
    return {
        "modules": len(layers_test.modules(package)),
        "layers": len(layers_test.LAYERS),
        "edges": len({(e.source, e.target) for e in found}),
        "upward": len(layers_test.wrong_way(found, layers_test.LAYERS)),
        "cycles": len(layers_test.cycles(found)),
    }


def main() -> None:
    import workbench

    print(f"workbench from {Path(workbench.__file__).parent}")
    result, telemetry = a_run()
    for name, build in views(result, telemetry).items():
        build()  # once first: imports and caches are not the walk
        numbers = figures(walk(build, "workbench"))
        print(f"{name:26}" + "  ".join(f"{k} {v:>3}" for k, v in numbers.items()))
    print("import map: " + ", ".join(f"{k} {v}" for k, v in import_map().items()))


def listing(name: str) -> None:
    """Print the stops of one view's walk (``python scripts/view_walk.py VIEW``)."""
    result, telemetry = a_run()
    build = views(result, telemetry)[name]
    build()
    for module, function in walk(build, "workbench"):
        print(f"{module:45} {function}")


if __name__ == "__main__":
    listing(sys.argv[1]) if len(sys.argv) > 1 else main()
