"""A replay divergence as the views show it: the Stepper's status and the standalone report."""

from __future__ import annotations

import pytest

import workbench as wb
from tests._counting import PROMPT, counting_agent
from workbench.notebook.html import error_html
from workbench.notebook.status_line import status_html
from workbench.report import report_html

pytest.importorskip("ipywidgets")

SETTINGS: wb.ModelSettings = {"temperature": 0}


def diverged() -> wb.RunResult:
    recorded = counting_agent(3).run_sync(PROMPT, settings=SETTINGS)
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    result = counting_agent(3, model=replay).run_sync(PROMPT, settings={"temperature": 1})
    assert result.error is not None and result.error.type == "ReplayDivergence"
    return result


RED_LINE = 'color:#b71c1c;background:#ffebee"><span>-</span> recorded: 0</div>'
GREEN_LINE = 'color:#1b5e20;background:#e8f5e9"><span>+</span> sent:     1</div>'


def test_the_divergence_is_a_red_green_diff_in_the_status() -> None:
    result = diverged()
    html = status_html(result.state, None, None)
    assert "ReplayDivergence: replay departs from the recording at step 1: setting" in html
    assert RED_LINE in html and GREEN_LINE in html


def test_the_report_shows_the_divergence() -> None:
    html = report_html(diverged())
    assert RED_LINE in html and GREEN_LINE in html


def test_the_stepper_shows_the_divergence() -> None:
    from workbench.notebook import Stepper

    recorded = counting_agent(3).run_sync(PROMPT, settings=SETTINGS)
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    stepper = Stepper(counting_agent(3, model=replay), PROMPT, settings={"temperature": 1})
    stepper.run.run_to_end()
    stepper.refresh()
    assert RED_LINE in stepper.status.value and GREEN_LINE in stepper.status.value


def test_error_text_stays_text() -> None:
    error = wb.ErrorInfo(
        type="ReplayDivergence", message="at <b>\n- recorded: <script>x</script>\n+ sent: &"
    )
    html = error_html(error)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;" in html
    assert "<span>+</span> sent: &amp;" in html
