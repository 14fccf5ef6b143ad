"""Models: the protocol and the shipped implementations."""

from workbench.models.anthropic import AnthropicModel
from workbench.models.base import Model, ModelError, ModelRequest, ModelSettings
from workbench.models.offline import FunctionModel, ScriptedModel, ScriptExhausted
from workbench.models.openai import (
    APIError,
    AuthenticationError,
    BadRequestError,
    MalformedResponseError,
    ModelConnectionError,
    ModelTimeoutError,
    OpenAIModel,
    RateLimitError,
    RetryPolicy,
    ServerError,
)
from workbench.models.openai_responses import OpenAIResponsesModel
from workbench.models.prices import PRICES, ModelPrice, price_for
from workbench.models.replay import RecordedCall, ReplayDivergence, ReplayExhausted, ReplayModel
from workbench.models.request_diff import RequestDiff

__all__ = [
    "PRICES",
    "APIError",
    "AnthropicModel",
    "AuthenticationError",
    "BadRequestError",
    "FunctionModel",
    "MalformedResponseError",
    "Model",
    "ModelConnectionError",
    "ModelError",
    "ModelPrice",
    "ModelRequest",
    "ModelSettings",
    "ModelTimeoutError",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "RateLimitError",
    "RecordedCall",
    "ReplayDivergence",
    "ReplayExhausted",
    "ReplayModel",
    "RequestDiff",
    "RetryPolicy",
    "ScriptExhausted",
    "ScriptedModel",
    "ServerError",
    "price_for",
]
