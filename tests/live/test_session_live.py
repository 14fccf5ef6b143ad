"""A session against the real llama-server: boundary markers and a summary the server accepts."""

from __future__ import annotations

import pytest

import workbench as wb
from tests.live.fewshot import MODEL
from workbench.models import OpenAIModel
from workbench.session_state import boundary_number, summary_span

pytestmark = pytest.mark.live


def test_a_summarized_session_runs_against_the_real_server(base_url: str) -> None:
    """Gemma's chat template is strict about roles; two user messages in a row must pass."""
    model = OpenAIModel(MODEL, base_url=base_url, api_key="")
    agent = wb.Agent(
        model=model,
        system_prompt="Answer in one short sentence.",
        settings={"max_tokens": 32, "temperature": 0},
        store=False,
    )
    session = wb.Session(agent, retention=wb.Retention(max_executions=1, summarize=True))
    first = session.run_sync("My name is Ada.")
    second = session.run_sync("What is my name?")
    assert first.status is second.status is wb.ExecutionStatus.COMPLETED
    assert second.steps[0].messages_in[-2].text.startswith("[Execution 2 of this conversation")
    (compaction,) = session.state.compactions
    assert compaction.error is None and compaction.usage.output_tokens > 0
    assert summary_span(session.messages[0]) == (1, 1)
    assert [boundary_number(m) for m in session.messages[1:2]] == [2]
