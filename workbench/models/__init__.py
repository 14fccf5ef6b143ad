"""Models: the protocol and the shipped implementations."""

from workbench.models.base import Model, ModelError, ModelRequest, ModelSettings
from workbench.models.offline import FunctionModel, ScriptedModel, ScriptExhausted
from workbench.models.replay import RecordedCall, ReplayDivergence, ReplayExhausted, ReplayModel

__all__ = [
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelSettings",
    "RecordedCall",
    "ReplayDivergence",
    "ReplayExhausted",
    "ReplayModel",
    "ScriptExhausted",
    "ScriptedModel",
]
