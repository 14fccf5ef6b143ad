"""Every notebook in notebooks/ runs top to bottom in a real kernel, offline, without an error.

Each runs in a fresh kernel whose working directory is a temporary folder (the files a notebook
writes land there) and which can import only what `make demo` installs (`tests/demo_install.py`):
the README sends a newcomer from `make demo` straight to the notebooks. 05_real_model talks to
the local LLM server when one is up and otherwise says so and skips its cells; both paths must
run clean. The notebooks are kept with their outputs stripped, which is checked too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.demo_install import demo_kernel_env

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = [
    "01_quickstart",
    "02_timing",
    "03_rerun",
    "04_export_to_jaeger",
    "05_real_model",
    "06_multi_agent",
    "07_debugger",
    "08_trace_explorer",
    "09_claude_code",
    "10_many_runs",
]


def execute(
    name: str, cwd: Path, env: dict[str, str] | None = None, book: nbformat.NotebookNode = None
) -> nbformat.NotebookNode:
    """Run a notebook in a fresh kernel; nbclient raises `CellExecutionError` on any error.

    A cell's printed text is kept as one output, as the notebook shows it: the kernel sends what
    was written every 0.2 s, wherever a line is, so a kernel held up mid-``print`` on a loaded
    machine sent one line as two outputs, which `text_of` put on two lines (06_multi_agent's
    'invoke_agent researcher under execute_tool research' went missing so).
    """
    book = book or nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(
        book,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        coalesce_streams=True,
    )
    client.execute(env=env or dict(os.environ))
    return book


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernel environment in which only what `make demo` installs can be imported."""
    return demo_kernel_env(tmp_path_factory.mktemp("demo-install"))


def text_of(book: nbformat.NotebookNode) -> str:
    """Everything the notebook printed or displayed as text."""
    parts = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def test_the_notebooks_are_there() -> None:
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_is_stored_without_outputs(name: str) -> None:
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(book)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_a_demo_kernel_refuses_what_make_demo_does_not_install(
    demo_env: dict[str, str], tmp_path: Path
) -> None:
    """The guard is on in the notebooks' kernels: a test-only package cannot be imported."""
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import playwright")])
    with pytest.raises(CellExecutionError, match=r"playwright is not installed by `make demo`"):
        execute("guard", tmp_path, demo_env, book)


def test_a_line_the_kernel_sent_in_two_pieces_is_read_whole(tmp_path: Path) -> None:
    """As a loaded machine holds a kernel up mid-``print`` (a flush falls inside the line)."""
    code = 'import time\nprint("one", end=" "); time.sleep(0.5); print("line")'
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    assert "one line" in text_of(execute("pieces", tmp_path, book=book))


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_top_to_bottom(name: str, tmp_path: Path, demo_env: dict[str, str]) -> None:
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    if name == "10_many_runs":  # what its store holds at the end (the store is in a temp folder)
        counts = 'store.count(), store.count(wb.RunFilter(status="failed"))'
        book.cells.append(nbformat.v4.new_code_cell(f'print("stored:", *({counts}))'))
    book = execute(name, tmp_path, demo_env, book)
    errors = [o for c in book.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    text = text_of(book)
    if name == "01_quickstart":
        assert "saved as 'double'" in text and "TraceView(" in text
    elif name == "03_rerun":
        assert "The answer is 123." in text and "b is a re-run of a from step 1" in text
    elif name == "10_many_runs":  # 200 runs listed, the failures found, one re-run and fixed
        assert "step 2 in shopper: ConnectionError: the model server closed the connection" in text
        assert "<ExecutionStatus.COMPLETED: 'completed'>, 'One " in text and "RunDiff(" in text
        assert "stored: 201 7" in text  # the 200 runs and the re-run; 7 failed
        assert list(tmp_path.iterdir()) == []  # nothing left where the notebook ran
    elif name == "04_export_to_jaeger":
        jaeger = json.loads((tmp_path / "run.jaeger.json").read_text())
        assert jaeger["data"] and (tmp_path / "run.otlp.json").exists()
        readme = (NOTEBOOKS.parent / "README.md").read_text()
        docker = next(line for line in text.splitlines() if "docker run" in line)
        assert docker in readme  # the same command, image and version as the README's
    elif name == "06_multi_agent":
        assert "paused [('wipe', 'c1')]" in text and "cleaner c1 completed 'Wiped.'" in text
        assert "hidden: (('delete_file', 'the researcher only reads'),)" in text
        assert "tokens of the whole tree: 840" in text
        assert "invoke_agent researcher under execute_tool research" in text
        assert "2 traces, one per execution of the lead" in text
        assert "        digger step 1 tools" in text and "    scout step 2 continuation" in text
        assert "PhaseEvent(agent='scout', depth=1, phase=prepare, step=1" in text
        assert "stopped in: scout" in text and "PhaseEvent(phase=tools, step=1" in text
        assert "PhaseEvent(agent='scout', depth=1, phase=inference, step=1" in text
        assert "scout tools" in text  # the Stepper's Step out, from the digger
        assert "on tool 'search' in digger at depth 2" in text
        assert "[('s1', {'query': 'tide tables'})]" in text
        assert "found: tide tables for Saturday is at noon | Swim at noon." in text
        assert "on tool 'search' in digger | Step over" in text
        assert "Noted. | Your name is Ada." in text and "Your name is Ada. | 3 executions" in text
        assert "['summarized', 'summarized', 'kept', 'kept']" in text
        assert "Your name is Grace." in text and "refused: session schema version 7" in text
        assert "[Summary of executions 1 to 3 of this conversation" in text
    elif name == "07_debugger":
        assert "2 ('read',) (('delete_file', 'no deleting after the first step'),)" in text
        assert "mcp_add ok 42" in text and "stopped: on tool 'delete_file'" in text
        assert "+ sent:     text 'Be very brief.'" in text and "live calls: 2" in text
        assert "delete_file         allow         deny deleting is off" in text
        assert "mails sent: 1 | sent | sent to ada@example.com | replayed: True" in text
        assert "completed 42 | mcp_add 42 | replayed: True" in text
    elif name == "08_trace_explorer":
        assert "(True, 'execute_tool add')" in text and "17 + 25 = 42" in text
    elif name == "09_claude_code":
        assert "completed completed | 3 steps" in text and "step 1: Bash('ls')" in text
        assert "steps in the Stepper: ['step 1', 'step 2', 'step 3', 'live']" in text
        assert "steps: ['step 1', 'step 2', 'step 3']" in text  # the history view, Stepper.of
        assert "\nstep 2 shows the listing: True" in text
        assert "replayed step 2 shows the listing: True" in text
        assert "1 Bash         allow         deny list files with the Glob tool, not ls" in text
        assert "completed | Ship the proxy on Friday; Ada knows the Responses wire." in text
        assert "answers replayed: 1 | answered live: 1" in text and "step 3: changed" in text
        assert list(tmp_path.iterdir()) == []  # its hook script went to a temporary folder
    elif name == "05_real_model":
        assert "LLM server at http://127.0.0.1:8088/v1: up" in text or "Skipping the rest" in text
