"""`OpenAIModel`: OpenAI-compatible Chat Completions over httpx, streaming or not.

Works with OpenAI and with servers that speak its dialect (vLLM, llama.cpp's ``llama-server``,
Ollama, LM Studio). One request is one ``POST {base_url}/chat/completions``; the wire format is
`workbench.models._openai_wire`, and retries, timeouts, typed errors and redaction are every
HTTP client's (`workbench.models._http`). Tool-call arguments that are not valid JSON are not an
error here: they come back as a `ToolCall` with ``invalid_arguments``, and the loop asks the model
to try again.
"""

from __future__ import annotations

import httpx

from workbench.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from workbench.messages import JsonValue, ModelResponse
from workbench.models._http import HTTPModel, RetryPolicy
from workbench.models._openai_wire import (
    MalformedResponseError,
    StreamAssembler,
    build_body,
    completion_response,
    finish_reason,
    parse_chunk,
    parse_completion,
    to_usage,
)
from workbench.models.base import ModelRequest, ModelSettings

__all__ = [
    "APIError",
    "AuthenticationError",
    "BadRequestError",
    "MalformedResponseError",
    "ModelConnectionError",
    "ModelTimeoutError",
    "OpenAIModel",
    "RateLimitError",
    "RetryPolicy",
    "ServerError",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIModel(HTTPModel):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent as ``Authorization: Bearer``); the other
    arguments are every HTTP client's (`HTTPModel`).

    Example (no request is made until ``request()`` is awaited)::

        >>> model = OpenAIModel("gemma", base_url="http://127.0.0.1:8088/v1", api_key="sk-x")
        >>> model
        OpenAIModel('gemma', base_url='http://127.0.0.1:8088/v1')
    """

    PATH = "/chat/completions"
    DEFAULT_BASE_URL = DEFAULT_BASE_URL
    KEY_VARIABLE = "OPENAI_API_KEY"
    DEFAULT_PROVIDER = "openai"

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def _body(
        self, request: ModelRequest, settings: ModelSettings, stream: bool
    ) -> dict[str, JsonValue]:
        return build_body(self.name, request.messages, request.tools, settings, stream=stream)

    async def _read(
        self, response: httpx.Response, started: float, request: ModelRequest, stream: bool
    ) -> ModelResponse:
        if not stream:
            completion = parse_completion(await response.aread(), self.redact)
            return completion_response(completion, self.price, self.name)
        assembler = StreamAssembler(started=started, on_text_delta=request.on_text_delta)
        done = False
        async for event, data in self._events(response):
            if done or data.strip() == "[DONE]":  # read to the end: the connection is reused
                done = True
                continue
            if event == "error":
                raise ServerError(f"the server's stream failed: {self.redact(data)[:500]}")
            chunk = parse_chunk(data, self.redact)
            if chunk.error is not None:
                raise ServerError(f"the server's stream failed: {chunk.error.message}")
            assembler.feed(chunk)
        if not done and assembler.finish is None:
            raise self._ended_early("before [DONE] or a finish reason")
        return ModelResponse(
            parts=assembler.parts(),
            usage=to_usage(assembler.usage, self.price),
            finish_reason=finish_reason(assembler.finish),
            model_name=assembler.model or self.name,
            response_id=assembler.response_id,
            time_to_first_token=assembler.time_to_first_token,
        )
