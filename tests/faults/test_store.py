"""Fault table: damaged store files, schema versions, concurrent writers and readers, kill -9.

Already covered in ``tests/test_store.py`` and not repeated: a store from a newer workbench, a
truncated file, a file that is not SQLite, a foreign SQLite database (all refused untouched), an
unknown part kind, wrong types and oversized payloads (clear errors, other runs still load),
damaged message references, an older store migrated, a failing store never breaking the run, and
a run killed while blocked in a tool (its finished steps kept, re-run from its last snapshot).

Here: bytes damaged at random and in the schema, a damaged listing, several processes writing one
file at once while this one reads, and processes killed at random moments in the middle of writes.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import workbench as wb
from tests._counting import PROMPT, counting_agent

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]


def stored(path: Path, runs: int = 3) -> list[str]:
    with wb.RunStore(path) as store:
        ids = [counting_agent(3, store).run_sync(PROMPT).run_id for _ in range(runs)]
    checkpoint = sqlite3.connect(path)  # fold the WAL in: the damage below hits every page
    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint.close()
    return ids


def every_read(path: Path, ids: list[str]) -> list[str]:
    """Try each kind of read; return what each did: ``ok`` or the error class's name."""
    outcomes = []
    store = wb.RunStore(path)
    reads = [store.runs, store.list_runs, lambda: store.resolve("last")]
    reads += [lambda i=i: store.load(i) for i in ids] + [lambda: store.snapshot(ids[0], 1)]
    for read in reads:
        try:
            read()
        except Exception as exc:
            outcomes.append(type(exc).__name__)
        else:
            outcomes.append("ok")
    store.close()
    return outcomes


# --- issue 15 #7: damage never escapes as anything but StoreError ---------------------------------


def test_a_damaged_schema_is_a_store_error_not_a_unicode_error(tmp_path: Path) -> None:
    """SQLite quotes the damaged bytes in its message; Python could not decode it."""
    path = tmp_path / "runs.sqlite"
    ids = stored(path, runs=1)
    data = path.read_bytes()
    at = data.index(b"agent_name TEXT NOT NULL")
    path.write_bytes(data[:at] + b"agent_name TEXT NOT \x88ULL" + data[at + 24 :])
    with pytest.raises(wb.StoreError, match="looks damaged"):
        wb.RunStore(path).runs()
    assert set(every_read(path, ids)) == {"StoreError"}


def test_random_damage_only_ever_raises_store_error(tmp_path: Path) -> None:
    original = tmp_path / "runs.sqlite"
    ids = stored(original)
    data = original.read_bytes()
    rng = random.Random(15)
    escaped: dict[str, int] = {}
    for attempt in range(120):
        damaged = bytearray(data)
        for _ in range(rng.choice([1, 4, 16, 64])):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path = tmp_path / f"damaged-{attempt}.sqlite"
        path.write_bytes(bytes(damaged))
        for outcome in every_read(path, ids):
            if outcome not in {"ok", "StoreError", "RunNotFound"}:
                escaped[outcome] = escaped.get(outcome, 0) + 1
    assert not escaped, f"damage escaped as {escaped}"


def test_a_damaged_time_in_the_listing_shows_as_not_a_time(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    ids = stored(path, runs=2)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET created_at = 'yesterday' WHERE run_id = ?", (ids[0],))
    with wb.RunStore(path) as store:
        frame = store.list_runs()
    assert sorted(frame["run_id"]) == sorted(ids)
    assert frame["created_at"].isna().sum() == 1
    assert frame["updated_at"].notna().all()


# --- concurrent writers and readers --------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    import workbench as wb
    from tests._counting import PROMPT, counting_agent

    store = wb.RunStore(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        result = counting_agent(3, store).run_sync(PROMPT)
        assert result.status is wb.ExecutionStatus.COMPLETED, result
        print(result.run_id, flush=True)
    """
)


def writer(path: Path, runs: int, script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), str(path), str(runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_three_processes_write_one_store_while_this_one_reads(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    stored(path, runs=1)  # the file exists: every process opens, none creates
    writers = [writer(path, 8, script) for _ in range(3)]
    read_errors: list[BaseException] = []
    done = threading.Event()

    def read_all_the_time() -> None:
        with wb.RunStore(path) as reader:
            while not done.is_set():
                try:
                    for summary in reader.runs():
                        reader.load(summary.run_id)
                except BaseException as exc:
                    read_errors.append(exc)
                    return

    reading = threading.Thread(target=read_all_the_time)
    reading.start()
    written: list[str] = []
    try:
        for process in writers:
            out, err = process.communicate(timeout=180)
            assert process.returncode == 0, err
            written += out.split()
    finally:
        done.set()
        reading.join(30)
    assert not read_errors, read_errors
    with wb.RunStore(path) as store:
        stored_ids = {s.run_id for s in store.runs()}
        assert set(written) <= stored_ids and len(written) == 24
        for run_id in written:
            run = store.load(run_id)
            assert run.status is wb.ExecutionStatus.COMPLETED
            assert [s.index for s in run.steps] == [1, 2, 3]


# --- kill -9 in the middle of writes -------------------------------------------------------------


def test_processes_killed_mid_write_leave_a_store_that_reads(tmp_path: Path) -> None:
    """Each writer is killed at a random moment while it writes run after run; every run it
    reported finished is whole, the one it was writing loads as far as it got."""
    path = tmp_path / "runs.sqlite"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    rng = random.Random(7)
    finished: list[str] = []
    for _ in range(4):
        process = writer(path, 1000, script)
        assert process.stdout is not None
        for _ in range(rng.randrange(1, 5)):
            finished.append(process.stdout.readline().strip())
        os.kill(process.pid, signal.SIGKILL)  # mid-run, most likely mid-transaction
        process.communicate()
    with wb.RunStore(path) as store:
        summaries = store.runs()
        for summary in summaries:
            run = store.load(summary.run_id)  # half-written runs load too
            if summary.run_id in finished:
                assert run.status is wb.ExecutionStatus.COMPLETED
                assert [s.index for s in run.steps] == [1, 2, 3]
        assert set(finished) <= {s.run_id for s in summaries}
        # and the store still takes new runs
        assert counting_agent(3, store).run_sync(PROMPT).status is wb.ExecutionStatus.COMPLETED
