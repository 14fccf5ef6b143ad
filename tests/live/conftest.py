"""Live tests talk to a real OpenAI-compatible server: ``scripts/llm-server start``.

Each test module is marked ``live``; the ``base_url`` fixture skips, saying why, when no server
answers ``/health`` at ``$WORKBENCH_LLM_BASE_URL`` (default ``http://127.0.0.1:8088/v1``).
"""

from __future__ import annotations

import pytest

from tests.live.fewshot import BASE_URL, server_down_reason


@pytest.fixture(scope="session")
def base_url() -> str:
    """The live server's base URL; skips the test when it is not answering."""
    reason = server_down_reason(BASE_URL)
    if reason is not None:
        pytest.skip(reason)
    return BASE_URL
