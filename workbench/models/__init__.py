"""Models: the protocol and the shipped implementations."""

from workbench.models.base import Model, ModelError, ModelRequest, ModelSettings
from workbench.models.offline import FunctionModel, ScriptedModel, ScriptExhausted

__all__ = [
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelSettings",
    "ScriptExhausted",
    "ScriptedModel",
]
