"""The recording proxy: debug an agent written with any framework by standing in for its model.

`proxy()` starts one endpoint for the wires agents speak (Chat Completions, the Responses API,
Anthropic Messages) that forwards to an upstream model (or answers from recorded runs) and records
each conversation as a run: `handle` starts it, `server` routes each request to its `wire`
(`chat`, `responses`, `anthropic`), `exchange` answers it, `replaying` answers from recordings,
`recorder` turns the calls into runs, `scrub` keeps credentials out of them. Only `handle` (and
`replaying`, for its types) is imported with ``workbench``: the rest needs the ``proxy`` extra
(aiohttp, starlette, uvicorn).
"""

from workbench._proxy.handle import ProxyHandle, proxy

__all__ = ["ProxyHandle", "proxy"]
