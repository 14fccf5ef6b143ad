"""`OpenAIResponsesModel`: the OpenAI Responses API over httpx, stateless, streaming or not.

One request is one ``POST {base_url}/responses`` with ``store: false`` and the whole conversation
as input items; the wire format (items, reasoning items with their encrypted content, usage) is
`workbench.models._responses_wire`, and retries, timeouts, typed errors and redaction are every
HTTP client's (`workbench.models._http`).
"""

from __future__ import annotations

import httpx

from workbench.messages import JsonValue, ModelResponse
from workbench.models._http import HTTPModel
from workbench.models._responses_wire import (
    ResponsesStream,
    build_body,
    parse_response,
    response_of,
)
from workbench.models.base import ModelRequest, ModelSettings

__all__ = ["OpenAIResponsesModel"]


class OpenAIResponsesModel(HTTPModel):
    """A model behind the OpenAI Responses API (``/responses``), used statelessly.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` (sent as ``Authorization: Bearer``) and
    ``base_url`` to OpenAI's, ``.../v1`` included, as `OpenAIModel` takes it. Every call sends
    the whole conversation with ``store: false``; reasoning models' reasoning comes back
    encrypted (``include: ["reasoning.encrypted_content"]``) and is sent back on the next call.
    A server that refuses that ``include`` is sent none with ``extra_body={"include": []}``.
    ``settings={"reasoning_effort": "low"}`` sets ``reasoning.effort`` and asks for a summary
    of the reasoning. The other arguments are every HTTP client's (`HTTPModel`).

    Example (no request is made until ``request()`` is awaited)::

        >>> OpenAIResponsesModel("gpt-5-mini", base_url="http://127.0.0.1:8088/v1", api_key="k")
        OpenAIResponsesModel('gpt-5-mini', base_url='http://127.0.0.1:8088/v1')
    """

    PATH = "/responses"
    DEFAULT_BASE_URL = "https://api.openai.com/v1"
    KEY_VARIABLE = "OPENAI_API_KEY"
    DEFAULT_PROVIDER = "openai"

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

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
            whole = parse_response(await response.aread(), self.redact, self.where)
            return response_of(whole, self.price, self.name, self.provider)
        assembler = ResponsesStream(
            self.provider,
            self.redact,
            where=self.where,
            started=started,
            on_text_delta=request.on_text_delta,
        )
        return await self._fed(response, assembler, "response.completed")
