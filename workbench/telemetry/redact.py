"""Secret redaction for everything telemetry writes: attributes, events and exported files.

The built-in patterns catch the usual shapes (``sk-…`` API keys, ``Bearer``/``Basic`` credentials,
``api_key=…``-style assignments, cloud and VCS tokens, JWTs); `Redactor` adds the patterns a user
configures. Structured values (tool arguments) are walked so that ``{"api_key": "…"}`` is caught
by its key, and every string leaf is scanned, which keeps JSON valid whatever a pattern matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[REDACTED]"

_SECRET_KEY = (
    r"(?:authorization|proxy-authorization|x-api-key|api[_-]?key|apikey|access[_-]?token|"
    r"auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|secret|password|passwd)"
)

_BUILTIN: tuple[tuple[str, str], ...] = (
    (r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}", rf"\1 {REDACTED}"),
    (r"\bsk-[A-Za-z0-9_-]{16,}", REDACTED),
    (r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{12,}", REDACTED),
    (r"\bAKIA[0-9A-Z]{16}\b", REDACTED),
    (r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", REDACTED),
    (r"\bAIza[0-9A-Za-z_-]{35}", REDACTED),
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", REDACTED),
    (r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}", REDACTED),
    (
        rf"(?i)\b({_SECRET_KEY})(\"?'?\s*[:=]\s*\"?'?)"
        r"(?!(?:(?:bearer|basic)\s+)?\[REDACTED\])"
        r"(?:(?:bearer|basic)\s+)?[^\s\"'\\,;&}]{3,}",
        rf"\1\2{REDACTED}",
    ),
)
_KEY_NAME = re.compile(rf"(?i)^{_SECRET_KEY}$")
_QUICK = re.compile(
    r"(?i)sk-|[rsp]k_|bearer|basic|akia|gh[pousr]_|github_pat|aiza|xox|eyj|"
    r"auth|api|key|token|secret|passw"
)


class Redactor:
    r"""Replaces secrets in text with ``[REDACTED]``.

    ``patterns`` are extra regular expressions (strings or compiled); each whole match is
    replaced. The built-in patterns always apply.

    >>> Redactor().text("key sk-abcdefghijklmnop1234 and Authorization: Bearer abc.def.ghi")
    'key [REDACTED] and Authorization: Bearer [REDACTED]'
    >>> Redactor([r"acct-\d+"]).text("account acct-12345")
    'account [REDACTED]'
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] = ()) -> None:
        self._builtin = tuple((re.compile(p), r) for p, r in _BUILTIN)
        self._extra = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)

    def text(self, value: str) -> str:
        """The text with every secret replaced."""
        if _QUICK.search(value):
            for pattern, replacement in self._builtin:
                value = pattern.sub(replacement, value)
        for extra in self._extra:
            value = extra.sub(REDACTED, value)
        return value

    def value(self, value: Any) -> Any:
        """A JSON-like value with secrets replaced: string leaves scanned, secret keys masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                k: REDACTED
                if isinstance(v, str) and isinstance(k, str) and _KEY_NAME.match(k)
                else self.value(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
