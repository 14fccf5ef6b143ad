"""The package's imports go one way, down the layers, and never round in a cycle.

Every ``import`` in every module counts, wherever it is written: at the top, inside a function
(a "lazy" import hides a cycle from Python, not from a reader), and under ``if TYPE_CHECKING:``
(a type is a dependency too). The layers, bottom first; a module may import its own layer and
the ones below, never one above:

==  ===============  ===================================================================
 0  foundation       errors, messages, _record, _sync, redact, traceids, tracebacks, ids,
                    _json, conversation, _processes, urls: the common words
 1  state            the run's state and its lifecycle (status, transitions, stop reasons)
 2  rules            stop conditions, history processors, breakpoints: functions of a run view
 3  records          what a run reports (step records, snapshots, events, results, errors),
                    the observer seam, re-run states
 4  tools            tools, toolsets (MCP too) and guards: what the model may call, who says no
 5  plug-ins         models and hooks: the outside world the loop calls
 6  delegation       sub-agents as tools: context, limits, the structured result, and the
                    gate through which a stepped parent steps into their runs
 7  loop             the loop's configuration, the engine and the tool-call pipeline
 8  observers        the run store and telemetry: they watch records, they never drive a run
 9  agent            the facade that ties a loop to its observers; sessions of its runs;
                    the recording proxy, which ties an agent written elsewhere to them
10  analysis         what reads or replays runs: diff, expect, cassettes, recheck, and the
                    one door from any run or trace to the trace model the views read
11  public API       ``workbench/__init__.py``, the re-exports (exact module only)
12  views            the notebook, the HTML report and the demo: users of the public API
13  command line     ``workbench/cli``: the top; nothing imports it
==  ===============  ===================================================================

A name covers the module and everything under it (``workbench.telemetry`` covers
``workbench.telemetry.core``). A new module must be placed here before it can be imported: the
test says which modules have no layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import workbench

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "workbench.errors",
            "workbench.messages",
            "workbench._record",
            "workbench._sync",
            "workbench.redact",
            "workbench.traceids",
            "workbench.urls",
            "workbench.tracebacks",
            "workbench.ids",
            "workbench._json",
            "workbench.conversation",
            "workbench._processes",
        ),
    ),
    ("state", ("workbench.state",)),
    ("rules", ("workbench.conditions", "workbench.history", "workbench.breakpoints")),
    (
        "records",
        (
            "workbench.records",
            "workbench.step_records",
            "workbench.combined",
            "workbench.observing",
            "workbench.rerun",
            "workbench.session_state",
            "workbench.runfilter",
            "workbench.waits",
        ),
    ),
    ("tools", ("workbench.tools", "workbench.guards", "workbench.toolsets", "workbench.mcp_tools")),
    ("plug-ins", ("workbench.models", "workbench.hooks")),
    ("delegation", ("workbench.subagent", "workbench.stepping")),
    (
        "loop",
        (
            "workbench.config",
            "workbench.drafts",
            "workbench.engine",
            "workbench.steplog",
            "workbench.toolcalls",
        ),
    ),
    (
        "observers",
        (
            "workbench.store",
            "workbench._storage",
            "workbench._runfacts",
            "workbench._textindex",
            "workbench.telemetry",
        ),
    ),
    ("agent", ("workbench.agent_run", "workbench.agent", "workbench.session", "workbench._proxy")),
    (
        "analysis",
        (
            "workbench.diff",
            "workbench.expect",
            "workbench.cassette",
            "workbench.recheck",
            "workbench.pytest_plugin",
            "workbench.runlist",
            "workbench.backends",
            "workbench.traces",
        ),
    ),
    ("public API", ("workbench",)),
    ("views", ("workbench.notebook", "workbench.report", "workbench.demo")),
    ("command line", ("workbench.cli",)),
)

PACKAGE = Path(workbench.__file__).parent


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``line`` of ``path``."""

    source: str
    target: str
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.path.name}:{self.line})"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _closest(name: str, known: Mapping[str, Path]) -> str | None:
    """The module ``name`` is, or the package that holds it (``pkg.mod.Class`` -> ``pkg.mod``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names one import statement brings in (relative imports made absolute)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    # ``from pkg import name`` imports the submodule pkg.name when there is one, else pkg itself
    yield from (f"{base}.{alias.name}" for alias in node.names)


def edges(root: Path) -> list[Edge]:
    """Every import between the package's own modules, wherever in a module it is written."""
    known = modules(root)
    found: dict[tuple[str, str, int], Edge] = {}  # one edge per statement, however many names
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):  # every node: function bodies and TYPE_CHECKING blocks too
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported(node, module, path.name == "__init__.py"):
                target = _closest(name, known)
                if target is not None and target != module:
                    found[module, target, node.lineno] = Edge(module, target, path, node.lineno)
    return list(found.values())


def layer_of(module: str, layers: Sequence[tuple[str, tuple[str, ...]]]) -> int | None:
    """The index of the layer that names ``module`` most closely (a top package: itself only)."""
    best: tuple[int, int] | None = None  # (length of the name that matched, layer)
    for index, (_, names) in enumerate(layers):
        for name in names:
            covers = module == name or ("." in name and module.startswith(f"{name}."))
            if covers and (best is None or len(name) > best[0]):
                best = (len(name), index)
    return None if best is None else best[1]


def wrong_way(found: Sequence[Edge], layers: Sequence[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Each import from a lower layer up to a higher one, said with both layers."""
    out = []
    for edge in found:
        low, high = layer_of(edge.source, layers), layer_of(edge.target, layers)
        if low is not None and high is not None and high > low:
            out.append(f"{edge}: layer {layers[low][0]!r} imports {layers[high][0]!r}")
    return out


def cycles(found: Sequence[Edge]) -> list[list[Edge]]:
    """The import cycles: for each group of modules that reach each other, the edges inside it."""
    graph: dict[str, set[str]] = {}
    for edge in found:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    out = []
    for group in _strongly_connected(graph):
        if len(group) > 1:
            inside = [e for e in found if e.source in group and e.target in group]
            out.append(sorted(inside, key=lambda e: (e.source, e.target, e.line)))
    return sorted(out, key=lambda c: (c[0].source, c[0].target))


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (a deep package must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups


# -- the package --------------------------------------------------------------------------------


def test_every_module_has_a_layer() -> None:
    missing = [m for m in modules(PACKAGE) if layer_of(m, LAYERS) is None]
    assert not missing, f"place these modules in LAYERS (tests/test_layers.py): {missing}"


def test_no_import_goes_up_a_layer() -> None:
    found = wrong_way(edges(PACKAGE), LAYERS)
    if found:
        pytest.fail("imports from a lower layer to a higher one:\n" + "\n".join(found))


def test_no_import_cycles() -> None:
    found = cycles(edges(PACKAGE))
    report = "\n".join(
        f"cycle {i}:\n" + "\n".join(f"  {edge}" for edge in cycle)
        for i, cycle in enumerate(found, 1)
    )
    if found:
        pytest.fail(f"import cycles between modules:\n{report}")


def test_the_library_never_imports_the_command_line() -> None:
    up = [e for e in edges(PACKAGE) if e.target.startswith("workbench.cli")]
    assert all(e.source.startswith("workbench.cli") for e in up), [str(e) for e in up]


# -- the checker itself, on small packages written for it ---------------------------------------


def _package(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_walker_sees_lazy_type_checking_and_relative_imports(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "from pkg.low import thing\n",
            "low.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg.high import Thing\n"
                "def later():\n"
                "    import pkg.sub.deep\n"
            ),
            "high.py": "from . import low\nfrom .sub import deep\n",
            "sub/__init__.py": "",
            "sub/deep.py": "from .. import low\nfrom ..high import Thing\nimport os\n",
        },
    )
    found = sorted((e.source, e.target, e.line) for e in edges(root))
    assert found == [
        ("pkg", "pkg.low", 1),
        ("pkg.high", "pkg.low", 1),
        ("pkg.high", "pkg.sub.deep", 2),
        ("pkg.low", "pkg.high", 3),  # under TYPE_CHECKING
        ("pkg.low", "pkg.sub.deep", 5),  # inside a function
        ("pkg.sub.deep", "pkg.high", 2),
        ("pkg.sub.deep", "pkg.low", 1),
    ]


def test_the_checker_names_every_edge_of_a_cycle_and_every_wrong_way_import(
    tmp_path: Path,
) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "def f():\n    from pkg import b\n",
            "b.py": "from pkg.c import x\n",
            "c.py": "from pkg.a import f\n",
            "d.py": "import pkg.a\n",
        },
    )
    found = edges(root)
    assert [[str(e) for e in cycle] for cycle in cycles(found)] == [
        ["pkg.a -> pkg.b (a.py:2)", "pkg.b -> pkg.c (b.py:1)", "pkg.c -> pkg.a (c.py:1)"]
    ]
    layers = (("bottom", ("pkg.a", "pkg.b")), ("top", ("pkg.c", "pkg.d")))
    assert wrong_way(found, layers) == ["pkg.b -> pkg.c (b.py:1): layer 'bottom' imports 'top'"]
    assert layer_of("pkg", layers) is None and layer_of("pkg.a.inner", layers) == 0


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("workbench", "public API"),
        ("workbench.telemetry.core", "observers"),
        ("workbench.cli.app", "command line"),
        ("workbench.models.replay", "plug-ins"),
    ],
)
def test_layers_cover_packages_and_the_root_only_names_itself(module: str, layer: str) -> None:
    index = layer_of(module, LAYERS)
    assert index is not None and LAYERS[index][0] == layer
    assert layer_of("workbench.not_placed_yet", LAYERS) is None
