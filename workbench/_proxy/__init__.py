"""The recording proxy: debug an agent written with any framework by standing in for its model.

`proxy()` starts an OpenAI-compatible Chat Completions endpoint that forwards to an upstream model
(or answers from a recorded run) and records each conversation as a run: `handle` starts it,
`server` answers, `recorder` turns the calls into step records, `scrub` keeps the API key out
of them, `usage` asks for a stream's usage for agents that do not. Only `handle` is imported with
``workbench``: the rest needs the ``proxy`` extra (aiohttp, starlette, uvicorn).
"""

from workbench._proxy.handle import ProxyHandle, proxy

__all__ = ["ProxyHandle", "proxy"]
