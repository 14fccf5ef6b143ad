"""`AnthropicModel`: the Anthropic Messages API over httpx, streaming or not.

One request is one ``POST {base_url}/v1/messages``; the wire format (system placement, turns,
thinking blocks sent back with their signatures, cache token counts) is
`workbench.models._anthropic_wire`, and retries (``retry-after`` and 529 "overloaded" included),
timeouts, typed errors and redaction are every HTTP client's (`workbench.models._http`).
"""

from __future__ import annotations

import httpx

from workbench.messages import JsonValue, ModelResponse
from workbench.models._anthropic_wire import (
    ANTHROPIC_VERSION,
    AnthropicStream,
    build_body,
    message_response,
    parse_message,
)
from workbench.models._http import HTTPModel
from workbench.models.base import ModelRequest, ModelSettings

__all__ = ["AnthropicModel"]


class AnthropicModel(HTTPModel):
    """A model behind Anthropic's Messages API (or a server that speaks it, as llama.cpp's does).

    ``base_url`` defaults to ``$ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``, and
    is the API's root, without ``/v1`` (as Claude Code and the ``anthropic`` SDK take it);
    ``api_key`` defaults to ``$ANTHROPIC_API_KEY`` and is sent as ``x-api-key``, with
    ``anthropic-version``. Beta features are a header away: ``headers={"anthropic-beta": ...}``.
    ``settings={"thinking_budget": n}`` turns extended thinking on; ``max_tokens`` is 4096 when
    not set (the API requires one). The other arguments are every HTTP client's (`HTTPModel`).

    Example (no request is made until ``request()`` is awaited)::

        >>> AnthropicModel("claude-sonnet-4-5", base_url="http://127.0.0.1:8088", api_key="k")
        AnthropicModel('claude-sonnet-4-5', base_url='http://127.0.0.1:8088')
    """

    PATH = "/v1/messages"
    DEFAULT_BASE_URL = "https://api.anthropic.com"
    KEY_VARIABLE = "ANTHROPIC_API_KEY"
    BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"
    DEFAULT_PROVIDER = "anthropic"

    def _headers(self) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION, **super()._headers()}

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def _body(
        self, request: ModelRequest, settings: ModelSettings, stream: bool
    ) -> dict[str, JsonValue]:
        return build_body(
            self.name,
            request.messages,
            request.tools,
            settings,
            stream=stream,
            provider=self.provider,
        )

    async def _read(
        self, response: httpx.Response, started: float, request: ModelRequest, stream: bool
    ) -> ModelResponse:
        if not stream:
            message = parse_message(await response.aread(), self.redact, self.where)
            return message_response(message, self.price, self.name, self.provider)
        assembler = AnthropicStream(
            self.provider,
            self.redact,
            where=self.where,
            started=started,
            on_text_delta=request.on_text_delta,
        )
        return await self._fed(response, assembler, "message_stop")
