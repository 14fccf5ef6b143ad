"""Every error the workbench raises on purpose, in one hierarchy under `WorkbenchError`.

Who caused it decides where an error sits, because that decides what the user does about it::

    WorkbenchError
    ├── UsageError                  the caller used the workbench wrongly: fix the code
    │   ├── InvalidTransition       a status change the run lifecycle forbids
    │   ├── MessageFormatError      edited messages that cannot be read
    │   └── ScriptExhausted         a ScriptedModel asked for more responses than it was given
    ├── ModelBehaviourError         the model did something the run cannot use
    │   ├── ArgumentError           tool arguments that do not fit the schema (the model retries)
    │   ├── ToolRetry               a tool asks the model to try again (raised by tools)
    │   ├── ToolRetriesExceeded     a tool's retries ran out: the run fails
    │   └── ResponseRetriesExceeded unusable (empty) responses ran out: the run fails
    ├── ExternalError               the world outside failed: a server, a file, a process
    │   ├── ModelError              the model could not answer; the run ends with ERROR
    │   │   ├── APIError            an HTTP error: AuthenticationError, BadRequestError,
    │   │   │                       RateLimitError, ServerError
    │   │   ├── ModelConnectionError, ModelTimeoutError
    │   │   ├── MalformedResponseError   a 2xx that is not a valid response
    │   │   └── ReplayDivergence, ReplayExhausted   a recording that no longer fits the run
    │   ├── ToolTimeout             a tool ran past its timeout (the model retries)
    │   ├── HookFailure             a hook gave no usable answer (recorded, never raised out)
    │   ├── StoreError              a store that cannot do what was asked; RunNotFound
    │   ├── StateFormatError        a serialized state that cannot be read
    │   ├── TraceLoadError          a trace file or backend that cannot be read as a trace
    │   └── SubagentError           a sub-agent's run ended without an answer
    └── RunFatalError               raised by a tool to end the whole run as FAILED

Each class also derives from the built-in exception it has always been (``ValueError``,
``RuntimeError``, ``TimeoutError``, ``LookupError``), so existing ``except`` clauses keep working.
"""

from __future__ import annotations

__all__ = [
    "APIError",
    "ArgumentError",
    "AuthenticationError",
    "BadRequestError",
    "ExternalError",
    "HookFailure",
    "InvalidTransition",
    "MalformedResponseError",
    "MessageFormatError",
    "ModelBehaviourError",
    "ModelConnectionError",
    "ModelError",
    "ModelTimeoutError",
    "RateLimitError",
    "ReplayDivergence",
    "ReplayExhausted",
    "ResponseRetriesExceeded",
    "RunFatalError",
    "RunNotFound",
    "ScriptExhausted",
    "ServerError",
    "StateFormatError",
    "StoreError",
    "SubagentError",
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


class MessageFormatError(UsageError, ValueError):
    """Edited messages that cannot be read; the message says where and what is wrong."""


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
    """The conversation departed from the recording; ``step`` and ``detail`` say where and how."""

    def __init__(self, step: int, detail: str) -> None:
        super().__init__(f"replay departs from the recording at step {step}: {detail}")
        self.step = step
        self.detail = detail


class ReplayExhausted(ModelError):
    """The replay was asked for more responses than it may give, and has no live model after it."""


class ToolTimeout(ExternalError, TimeoutError):
    """A tool ran past its timeout."""


class HookFailure(ExternalError):
    """A hook that did not give a usable answer; recorded on the step, the run goes on."""


class StoreError(ExternalError, RuntimeError):
    """The store cannot do what was asked: damaged or foreign file, newer schema, bad payload."""


class RunNotFound(StoreError, LookupError):
    """No run (or no snapshot for that step) with that id in the store."""


class StateFormatError(ExternalError, ValueError):
    """A serialized state that cannot be read: bad JSON, wrong version, unknown fields or kinds."""


class TraceLoadError(ExternalError, ValueError):
    """A trace that cannot be loaded: a truncated or foreign file, bad ids, a backend down."""


class SubagentError(ExternalError, RuntimeError):
    """The subagent's run did not end with an answer (it failed, or paused for approval)."""


# -- raised by tools to end the run -------------------------------------------------------------


class RunFatalError(WorkbenchError):
    """Raised by a tool when the whole run must stop: the run ends FAILED with this message."""
