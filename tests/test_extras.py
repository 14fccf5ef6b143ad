"""``import workbench`` and the offline demo need only the base install and the demo's extras.

`make demo` installs ``.[notebook,otlp]``: the proxy's packages (the ``proxy`` extra) are not
there, so nothing imported with ``workbench`` may need them, and asking for the proxy without them
says which extra to install.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROXY_EXTRA = ("aiohttp", "starlette", "uvicorn", "uvloop")


def test_workbench_runs_an_agent_without_the_proxy_extra_and_says_what_the_proxy_needs() -> None:
    script = textwrap.dedent(
        f"""
        import sys
        for name in {PROXY_EXTRA!r}:
            sys.modules[name] = None  # as if not installed: importing it raises ImportError
        import workbench as wb
        from workbench.demo import DEMO_PROMPT, demo_agent
        result = demo_agent(store=False).run_sync(DEMO_PROMPT)
        print(result.status.value)
        try:
            wb.proxy("http://127.0.0.1:9/v1", store=wb.RunStore(":memory:"))
        except ImportError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    status, refusal = done.stdout.splitlines()[:2]
    assert status in {"paused", "completed"}  # the demo agent asks for an approval on the way
    assert "pip install 'workbench[proxy]'" in refusal
