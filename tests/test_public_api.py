"""The public surface: `__all__` matches what `workbench` exports, and DESIGN §9 names exist."""

from __future__ import annotations

import subprocess
import sys

import workbench as wb


def test_all_matches_exports() -> None:
    exported = {name for name in dir(wb) if not name.startswith("_")}
    modules = {name for name in exported if type(getattr(wb, name)).__name__ == "module"}
    assert set(wb.__all__) == exported - modules
    assert len(set(wb.__all__)) == len(wb.__all__)  # no name listed twice


def test_design_names_exist() -> None:
    for name in [
        "Agent",
        "tool",
        "ToolRetry",
        "ScriptedModel",
        "FunctionModel",
        "ModelResponse",
        "Message",
        "MaxSteps",
        "MaxTokens",
        "Timeout",
        "MaxCost",
        "ToolCalled",
        "DoomLoop",
        "ErrorBudget",
        "External",
        "ToolPermission",
        "ExecutionStatus",
        "StopReason",
        "AgentState",
        "Phase",
        "PhaseEvent",
        "StepContext",
    ]:
        assert hasattr(wb, name), name


def test_demo_command_runs_offline() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "add (retry)" in out and "save_result (waits)" in out
    assert "\n3 (resumed)  " in out and out.count("\n3  ") == 1  # each part of a step once
    assert "  retry: the call could not run as sent" in out  # the words beside calls, explained
    assert "(calculator): completed; stop reason completed; 1 approval granted" in out
