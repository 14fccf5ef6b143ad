"""Every error the workbench raises on purpose, in one hierarchy under `WorkbenchError`.

Who caused it decides where an error sits, because that decides what the user does about it::

    WorkbenchError
    ├── UsageError                  the caller used the workbench wrongly: fix the code
    │   ├── InvalidTransition       a status change the run lifecycle forbids
    │   ├── MessageFormatError      edited messages that cannot be read
    │   ├── SessionBusy             a session asked to start while an execution is unfinished
    │   ├── NoSuchStep              a run asked for a step it does not have (a LookupError)
    │   ├── InvalidURL              an endpoint or upstream that is no http(s) URL (a ValueError)
    │   └── ScriptExhausted         a ScriptedModel asked for more responses than it was given
    ├── ModelBehaviourError         the model did something the run cannot use
    │   ├── ArgumentError           tool arguments that do not fit the schema (the model retries)
    │   ├── ToolRetry               a tool asks the model to try again (raised by tools)
    │   ├── ToolRetriesExceeded     a tool's retries ran out: the run fails
    │   ├── ToolRateLimited         a call over a toolset's rate limit (a tool error; says when)
    │   └── ResponseRetriesExceeded unusable (empty) responses ran out: the run fails
    ├── ExternalError               the world outside failed: a server, a file, a process
    │   ├── ModelError              the model could not answer; the run ends with ERROR
    │   │   ├── APIError            an HTTP error: AuthenticationError, BadRequestError,
    │   │   │                       RateLimitError, ServerError
    │   │   ├── ModelConnectionError, ModelTimeoutError
    │   │   ├── MalformedResponseError   a 2xx that is not a valid response
    │   │   └── ReplayDivergence, ReplayExhausted   a recording that no longer fits the run
    │   ├── ToolTimeout             a tool ran past its timeout (the model retries)
    │   ├── MCPServerError          an MCP server unreachable, gone, or failing a call
    │   ├── ToolInterrupted         a tool raised CancelledError, SystemExit or KeyboardInterrupt
    │   │                           of its own (the model reads it as the tool's failure)
    │   ├── HookFailure             a hook gave no usable answer (recorded, never raised out)
    │   ├── StoreError              a store that cannot do what was asked; RunNotFound
    │   ├── StateFormatError        a serialized state that cannot be read
    │   │   └── SessionFormatError  a serialized session that cannot be read
    │   ├── CassetteError           a cassette file that is damaged, foreign or from a newer version
    │   ├── TraceLoadError          a trace file or backend that cannot be read as a trace
    │   └── SubagentError           a sub-agent's run ended without an answer
    ├── RunFatalError               raised by a tool to end the whole run as FAILED
    └── ExpectationFailed           a run is not what a `wb.expect` check asked for (a test failed)

Each class also derives from the built-in exception it has always been (``ValueError``,
``RuntimeError``, ``TimeoutError``, ``LookupError``), so existing ``except`` clauses keep working;
``ExpectationFailed`` is an ``AssertionError``, so pytest reports it as a failed assertion.
"""

from __future__ import annotations

from typing import Protocol


class _Described(Protocol):
    """A structured difference that can say itself (`workbench.models.request_diff.RequestDiff`)."""

    def text(self) -> str: ...


__all__ = [
    "APIError",
    "ArgumentError",
    "AuthenticationError",
    "BadRequestError",
    "CassetteError",
    "ExpectationFailed",
    "ExternalError",
    "HookFailure",
    "InvalidTransition",
    "MCPServerError",
    "MalformedResponseError",
    "MessageFormatError",
    "ModelBehaviourError",
    "ModelConnectionError",
    "ModelError",
    "ModelTimeoutError",
    "NoSuchStep",
    "RateLimitError",
    "ReplayDivergence",
    "ReplayExhausted",
    "ResponseRetriesExceeded",
    "RunFatalError",
    "RunNotFound",
    "ScriptExhausted",
    "ServerError",
    "SessionBusy",
    "SessionFormatError",
    "StateFormatError",
    "StepNotInTrace",
    "StoreError",
    "SubagentError",
    "ToolInterrupted",
    "ToolRateLimited",
    "ToolRetriesExceeded",
    "ToolRetry",
    "ToolTimeout",
    "TraceLoadError",
    "UsageError",
    "WorkbenchError",
]


class WorkbenchError(Exception):
    """The root of every error the workbench raises on purpose."""


# -- the caller's mistakes ----------------------------------------------------------------------


class UsageError(WorkbenchError):
    """The workbench was used wrongly; the message says how to use it."""


class InvalidTransition(UsageError, RuntimeError):
    """A status change that the run lifecycle does not allow (e.g. COMPLETED -> RUNNING)."""


class NoSuchStep(UsageError, LookupError):
    """A run asked for a step it does not have (`RunResult.snapshot`); the message lists them."""


class MessageFormatError(UsageError, ValueError):
    """Edited messages that cannot be read; the message says where and what is wrong."""


class InvalidURL(UsageError, ValueError):
    """A URL to send to that is not ``http://`` or ``https://`` with a host; says whose it is."""


class SessionBusy(UsageError, RuntimeError):
    """A session cannot start an execution while its last one is still running or paused."""


# -- what the model did -------------------------------------------------------------------------


class ModelBehaviourError(WorkbenchError):
    """The model answered with something the run cannot use."""


class ArgumentError(ModelBehaviourError, ValueError):
    """The model's arguments do not fit the tool's schema; the message says what to fix."""


class ToolRetry(ModelBehaviourError):
    """Raised by a tool to send feedback to the model and let it try again."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolRetriesExceeded(ModelBehaviourError, RuntimeError):
    """A tool needed more retries than it allows; the run fails."""


class ToolRateLimited(ModelBehaviourError, RuntimeError):
    """A call over a `Toolset.rate_limited` limit: not run; ``retry_after`` says when it may be."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ResponseRetriesExceeded(ModelBehaviourError, RuntimeError):
    """The model kept giving unusable (empty) responses past the agent's ``response_retries``."""


# -- the world outside --------------------------------------------------------------------------


class ExternalError(WorkbenchError):
    """Something outside the workbench failed: a server, a file, a process."""


class ModelError(ExternalError):
    """A model call failed in a way the loop cannot recover from; the run ends with ERROR."""


class ScriptExhausted(ModelError, UsageError):
    """A `ScriptedModel` was asked for more responses than it was given."""


class APIError(ModelError):
    """The server answered with an HTTP error; ``status_code`` says which."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class AuthenticationError(APIError):
    """401 or 403: the API key is missing, wrong, or not allowed to use this model."""


class BadRequestError(APIError):
    """A 4xx the request itself caused (bad model name, bad parameters); the server's message."""


class RateLimitError(APIError):
    """429, still, after the retries the `RetryPolicy` allows."""


class ServerError(APIError):
    """5xx, still, after the retries the `RetryPolicy` allows."""


class ModelConnectionError(ModelError):
    """The server could not be reached (refused, reset, DNS), still, after the retries."""


class ModelTimeoutError(ModelError):
    """The server did not answer within the timeout."""


class MalformedResponseError(ModelError):
    """The server answered 2xx with something that is not a valid Chat Completions response."""


class ReplayDivergence(ModelError):
    """The conversation departed from the recording; ``step`` and ``detail`` say where and how.

    ``diff`` is the structured difference (which message, part, tool or setting; recorded
    against sent) when the request could be compared with a recorded one; the message then
    shows it as ``-`` recorded / ``+`` sent lines.
    """

    def __init__(self, step: int, detail: str, *, diff: _Described | None = None) -> None:
        super().__init__(f"replay departs from the recording at step {step}: {detail}")
        self.step = step
        self.detail = detail
        self.diff = diff

    @classmethod
    def at(cls, step: int, diff: _Described) -> ReplayDivergence:
        """The divergence at ``step`` that ``diff`` describes."""
        return cls(step, diff.text(), diff=diff)


class ReplayExhausted(ModelError):
    """The replay was asked for more responses than it may give, and has no live model after it."""


class ToolTimeout(ExternalError, TimeoutError):
    """A tool ran past its timeout."""


class MCPServerError(ExternalError, RuntimeError):
    """An MCP server could not be started or reached, went away, or failed a call.

    Raised inside a tool call it is a tool error the model reads; raised while listing tools
    (before a model call) it ends the run with the server's problem in the message.
    """


class ToolInterrupted(ExternalError):
    """A tool raised a task- or process-ending exception of its own; the model reads it.

    ``CancelledError`` while the run was not cancelled, ``SystemExit``, ``KeyboardInterrupt``.
    """


class HookFailure(ExternalError):
    """A hook that did not give a usable answer; recorded on the step, the run goes on."""


class StoreError(ExternalError, RuntimeError):
    """The store cannot do what was asked: damaged or foreign file, newer schema, bad payload."""


class RunNotFound(StoreError, LookupError):
    """No run (or no snapshot for that step) with that id in the store."""


class StateFormatError(ExternalError, ValueError):
    """A serialized state that cannot be read: bad JSON, wrong version, unknown fields or kinds."""


class SessionFormatError(StateFormatError):
    """A serialized session that cannot be read: newer version, broken boundary, bad fields."""


class CassetteError(ExternalError, ValueError):
    """A cassette file that cannot be replayed: damaged, not a cassette, or a newer version."""


class TraceLoadError(ExternalError, ValueError):
    """A trace that cannot be loaded: a truncated or foreign file, bad ids, a backend down."""


class StepNotInTrace(TraceLoadError, LookupError):
    """The trace has no model call at the step asked for (`Trace.messages`, a re-run from it)."""


class SubagentError(ExternalError, RuntimeError):
    """The subagent's run did not end with an answer (it failed, or paused for approval)."""


# -- raised by tools to end the run -------------------------------------------------------------


class RunFatalError(WorkbenchError):
    """Raised by a tool when the whole run must stop: the run ends FAILED with this message."""


# -- a regression check that did not hold -------------------------------------------------------


class ExpectationFailed(WorkbenchError, AssertionError):
    """A `wb.expect` check failed: ``check`` names it, ``step`` is where the run differs."""

    def __init__(self, check: str, step: int | None, message: str) -> None:
        super().__init__(message)
        self.check = check
        self.step = step
