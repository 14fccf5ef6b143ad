"""How fast a run list is at 1,000, 10,000 and 100,000 runs, and beside Phoenix's own UI (issue 34).

For each size, a run store of the eval's runs (`workbench.demo.run_eval`: 1,000 written by the
agent, the rest copies of them made in SQL, `bench/_many_runs.py`):

- **open**: seconds to construct `RunsBrowser(store)` (the count, the first page, the agents and
  tools offered) and the bytes of widget state the page gets (the ES module and CSS included);
- **list**: seconds for `wb.runs(store)`, every run as a DataFrame (the listing query's rows
  made into columns); beside it **list as records**, the same frame made from a `RunSummary`
  per run (`find`, as a backend's listing is made), and the ratio of the two;
- **filter**: seconds for what the browser asks on a filter change (the count and the page)
  for each filter below; the worst of them;
- **open a run**: seconds to load a stored run and open it in the trace explorer.

Targets: 100,000 runs filter in < 1 s and list in < 2 s; the browser opens in < 1 s with < 1 MB
sent.

Then Phoenix, side by side on the same 1,000 runs (sent to a ``phoenix serve`` on loopback as
OTLP with content): the browser over Phoenix (its first page: one page of root spans and their
traces through the REST API) and over the store, against the query Phoenix's own UI sends to
open its traces table (``TracesTableQuery``, taken from the UI bundle Phoenix ships, to its
``/graphql``), each for 25 rows; and the runs with errors the same ways (our "with errors"
box; Phoenix's trace filter ``error_count > 0``). Ratios are ours / theirs,
from the same run. Times are medians of the repetitions; timers on a shared 2-core machine vary
run to run, so compare within a run.

    .venv/bin/python bench/runs_list.py            # full run (a few minutes)
    .venv/bin/python bench/runs_list.py --quick    # 1,000 and 10,000 runs, 200 in Phoenix
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _many_runs import build
from view_build import timed  # the median-of-repeats timer every view bench uses

import workbench as wb
from workbench.demo import eval_agent, eval_task
from workbench.notebook import RunsBrowser, TraceExplorer
from workbench.runlist import StoreRuns

SIZES = (1_000, 10_000, 100_000)
TARGET_FILTER_S = 1.0
TARGET_LIST_S = 2.0
TARGET_OPEN_S = 1.0
TARGET_OPEN_BYTES = 1_000_000
PAGE = 25
FILTERS: dict[str, dict[str, Any]] = {
    "failed": {"status": "failed"},
    "with errors": {"errors": True},
    "tool": {"tool": "apply_discount"},
    "metadata": {"metadata": {"item": "unicorn"}},
    "text": {"text": "unicorn"},
    "agent+errors+since": {"agent": "shopper", "errors": True, "since": "2000-01-01"},
    "rolled up": {"rollup": True, "errors": True},
}


def sent_bytes(browser: RunsBrowser) -> int:
    """The bytes of widget state the page gets when the browser opens (module and CSS in)."""
    return len(json.dumps(browser.table.get_state(), default=str))


def _open(source: Any) -> RunsBrowser:
    browser = RunsBrowser(source, live=False)
    browser.close()
    return browser


def _open_filtered(source: Any, **traits: Any) -> None:
    """Open the browser and set a filter in it, as a person ticks "with errors"."""
    browser = RunsBrowser(source, live=False)
    for name, value in traits.items():
        setattr(browser.table, name, value)
    browser.close()


def _filtered(store: wb.RunStore, filters: dict[str, Any]) -> None:
    spec = wb.RunFilter(**filters)
    store.count(spec)
    store.find(spec, descending=True, limit=PAGE)


def bench_store(size: int, folder: Path, repeat: int) -> dict[str, Any]:
    """The figures of one store size."""
    started = time.perf_counter()
    store = build(folder / f"runs-{size}.sqlite", size)
    built = time.perf_counter() - started
    row: dict[str, Any] = {"runs": size, "build_s": built}
    row["open_s"] = timed(lambda: _open(store), repeat)
    row["open_bytes"] = sent_bytes(_open(store))
    row["list_s"] = timed(lambda: wb.runs(store), max(repeat - 2, 1))
    row["list_as_records_s"] = timed(lambda: wb.runs(source=StoreRuns(store)), max(repeat - 2, 1))
    row["ratio_list"] = row["list_s"] / row["list_as_records_s"]
    for name, filters in FILTERS.items():
        row[f"filter {name}_s"] = timed(lambda f=filters: _filtered(store, f), repeat)
    row["worst_filter_s"] = max(v for k, v in row.items() if k.startswith("filter "))
    run_id = store.find(wb.RunFilter(status="failed"), limit=1)[0].run_id
    row["open_run_s"] = timed(lambda: TraceExplorer(wb.trace_of(store.load(run_id))), repeat)
    row["load_average"] = round(os.getloadavg()[0], 1)  # a shared machine: say how busy it was
    store.close()
    return row


# -- Phoenix, side by side --------------------------------------------------------------------


def _ui_query(name: str) -> str:
    """The text of a GraphQL query Phoenix's UI sends, from the bundle Phoenix ships."""
    import phoenix

    marker = f"name:`{name}`,operationKind:`query`,text:`"
    for bundle in glob.glob(str(Path(phoenix.__file__).parent / "server/static/assets/*.js")):
        text = Path(bundle).read_text(encoding="utf-8", errors="replace")
        if (at := text.find(marker)) >= 0:
            start = at + len(marker)
            return text[start : text.index("`", start)]
    raise LookupError(f"Phoenix's UI bundle has no {name}")


def _graphql(url: str, query: str, variables: dict[str, Any]) -> httpx.Response:
    answer = httpx.post(f"{url}/graphql", json={"query": query, "variables": variables}, timeout=60)
    answer.raise_for_status()
    if answer.json().get("errors"):
        raise RuntimeError(f"Phoenix's /graphql refused the query: {answer.json()['errors'][:1]}")
    return answer


def _project_id(url: str) -> str:
    found = _graphql(url, "query { projects { edges { node { id name } } } }", {})
    projects = found.json()["data"]["projects"]["edges"]
    return str(next(e["node"]["id"] for e in projects if e["node"]["name"] == "default"))


def _wait_for_roots(url: str, count: int) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        found, params = 0, {"parent_id": "null", "limit": 1000}
        while True:
            page = httpx.get(
                f"{url}/v1/projects/default/spans/otlpv1", params=params, timeout=60
            ).json()
            found += len(page["data"])
            if not page.get("next_cursor"):
                break
            params = {**params, "cursor": page["next_cursor"]}
        if found >= count:
            return
        time.sleep(1)  # Phoenix ingests in the background and offers nothing to wait on
    raise TimeoutError(f"Phoenix did not ingest {count} runs within 10 minutes")


def bench_phoenix(count: int, folder: Path, repeat: int) -> dict[str, Any]:
    """Our browser over Phoenix and over a store, beside Phoenix's UI query, on ``count`` runs."""
    from tests._phoenix import Phoenix

    (folder / "phoenix").mkdir()
    server = Phoenix(folder / "phoenix")
    try:
        server.wait_ready()
        telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=server.url)
        store = wb.RunStore(folder / "phoenix-runs.sqlite")
        agent = eval_agent(store=store, telemetry=telemetry)
        for prompt, metadata in map(eval_task, range(count)):
            agent.run_sync(prompt, metadata=metadata)
        telemetry.shutdown(timeout=120)
        _wait_for_roots(server.url, count)
        source = f"phoenix+{server.url}"
        query, project = _ui_query("TracesTableQuery"), _project_id(server.url)
        ui = {"id": project, "first": PAGE}
        errors_ui = {**ui, "traceFilterCondition": "error_count > 0"}
        row: dict[str, Any] = {
            "runs": count,
            "ours_phoenix_open_s": timed(lambda: _open(source), repeat),
            "ours_phoenix_bytes": sent_bytes(_open(source)),
            "ours_store_open_s": timed(lambda: _open(store), repeat),
            "phoenix_ui_s": timed(lambda: _graphql(server.url, query, ui), repeat),
            "phoenix_ui_bytes": len(_graphql(server.url, query, ui).content),
            "ours_phoenix_errors_s": timed(
                lambda: _open_filtered(source, errors_only=True), repeat
            ),
            "phoenix_ui_errors_s": timed(lambda: _graphql(server.url, query, errors_ui), repeat),
        }
        row["ratio_phoenix_open"] = row["ours_phoenix_open_s"] / row["phoenix_ui_s"]
        row["ratio_store_open"] = row["ours_store_open_s"] / row["phoenix_ui_s"]
        row["ratio_errors"] = row["ours_phoenix_errors_s"] / row["phoenix_ui_errors_s"]
        return row
    finally:
        server.stop()


def _print(row: dict[str, Any]) -> None:
    cells = []
    for key, value in row.items():
        if key.endswith("_s"):
            cells.append(f"{key[:-2]} {value * 1e3:,.1f} ms")
        elif key.endswith("bytes"):
            cells.append(f"{key} {value / 1e3:,.1f} kB")
        elif key.startswith("ratio"):
            cells.append(f"{key} {value:.3g}x")
        else:
            cells.append(f"{key} {value:,}")
    print(" | ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    parser.add_argument("--no-phoenix", action="store_true", help="skip the side by side")
    args = parser.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    repeat = 3 if args.quick else 5
    misses = []
    with tempfile.TemporaryDirectory(prefix="runs-list-bench-") as tmp:
        for size in sizes:
            row = bench_store(size, Path(tmp), repeat)
            _print(row)
            if size == SIZES[-1]:
                if row["list_s"] >= TARGET_LIST_S:
                    misses.append(f"list {row['list_s']:.2f} s at {size:,} runs")
                if row["worst_filter_s"] >= TARGET_FILTER_S:
                    misses.append(f"worst filter {row['worst_filter_s']:.2f} s at {size:,} runs")
                if row["open_s"] >= TARGET_OPEN_S or row["open_bytes"] >= TARGET_OPEN_BYTES:
                    misses.append(f"open {row['open_s']:.2f} s, {row['open_bytes']:,} bytes")
        if not args.no_phoenix:
            _print(bench_phoenix(200 if args.quick else 1_000, Path(tmp), repeat))
    print("targets met" if not misses else "targets missed: " + "; ".join(misses))


if __name__ == "__main__":
    main()
