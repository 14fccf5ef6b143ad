"""`diff(a, b)`: how two runs differ, step by step: messages, tool calls, stop reasons, timing.

Built for the re-run question, "I changed this at step 5: what changed after?", and for "I fixed
the tool: does the call succeed now?" (a call whose outcome differs is said first, in words: failed
in a, succeeds in b). Steps are matched
by index. For each step the diff compares what the model was sent and what the step added to the
conversation, message by message and part by part. Provenance is ignored: run ids (a re-run's
inherited messages count as the same) and tool call ids, which a provider mints anew for every
call, so two runs of one conversation never share them. A difference is reported once, at the
first step where it shows: a changed answer at step 5 is not reported again in what step 6 was
sent. Steps a re-run inherited from the run it was made from are marked ``inherited``. Timing is
shown but never makes a step "changed", since no two runs take the same time. Sub-runs
(sub-agents) are paired by the step and the tool call that started them and diffed the same way,
so a diff says which sub-run diverged: by the call's id first, then by its place in the step (a
re-run's calls get new ids). A sub-run of a step a re-run inherited is inherited too, not
missing: the re-run did not run it again, its conversation holds that sub-run's answer.

`_compare` holds the comparison (`diff`), `_result` what it finds and how that reads
(`RunDiff.to_text`, `to_df`).
"""

from workbench.diff._compare import diff
from workbench.diff._result import MessageChange, OutcomeChange, PartChange, RunDiff, StepDiff

__all__ = ["MessageChange", "OutcomeChange", "PartChange", "RunDiff", "StepDiff", "diff"]
