"""Secret redaction for everything that leaves a run: span attributes, exported files, hook names.

The built-in patterns catch the usual shapes (``sk-…`` API keys, ``Bearer``/``Basic`` credentials,
``api_key=…``-style assignments, cloud and VCS tokens, JWTs); `Redactor` adds the patterns a user
configures. Structured values (tool arguments) are walked so that ``{"api_key": "…"}`` is caught
by its key, and every string leaf is scanned, which keeps JSON valid whatever a pattern matches.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "REDACTED",
    "Redactor",
    "credential_header",
    "credentials",
    "error_text",
    "redacted",
    "unicode_text",
    "unicode_value",
]

REDACTED = "[REDACTED]"

_SECRET_KEY = (
    r"(?:authorization|proxy-authorization|x-api-key|api[_-]?key|apikey|access[_-]?token|"
    r"auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|secret|password|passwd)"
)

_TOKEN_LIKE = (
    r"(?-i:[A-Za-z0-9._~+/=-]*?(?:[0-9=]|[._~+/-][A-Za-z0-9]|[a-z][A-Z])|[A-Za-z0-9._~+/=-]{20})"
)
"""What a token has and a word does not: a digit or base64's padding, punctuation inside it, a
capital after a small letter (``eyJhb…``), or twenty characters."""

_KEY_TRIGGERS = ("auth", "api", "token", "secret", "passw")
"""Every secret key name in `_SECRET_KEY` contains one of these (lowercased)."""

_BUILTIN: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (pattern, replacement, triggers): a pattern can only match a text whose lowercased form
    # contains one of its triggers, so a text without them is not scanned by the pattern.
    # a credential after Bearer or Basic: a token, not a word of prose ("a basic example").
    # Whatever follows "Authorization:" is caught by the key's pattern below, token or not.
    (
        r"(?i)\b(bearer|basic)\s+(?=" + _TOKEN_LIKE + r")[A-Za-z0-9._~+/=-]{6,}",
        rf"\1 {REDACTED}",
        ("bearer", "basic"),
    ),
    # the password of a URL's user info: scheme://user:password@host
    (r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*):[^/\s@]+@", rf"\1:{REDACTED}@", ("://",)),
    (r"\bsk-[A-Za-z0-9_-]{16,}", REDACTED, ("sk-",)),
    (r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{12,}", REDACTED, ("k_live_", "k_test_")),
    (r"\bAKIA[0-9A-Z]{16}\b", REDACTED, ("akia",)),
    (
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        REDACTED,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    (r"\bAIza[0-9A-Za-z_-]{35}", REDACTED, ("aiza",)),
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", REDACTED, ("xox",)),
    (r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}", REDACTED, ("eyj",)),
    (
        rf"(?i)\b({_SECRET_KEY})(\"?'?\s*[:=]\s*\"?'?)"
        r"(?!(?:(?:bearer|basic)\s+)?\[REDACTED\])"
        r"(?:(?:bearer|basic)\s+)?[^\s\"'\\,;&}]{3,}",
        rf"\1\2{REDACTED}",
        _KEY_TRIGGERS,
    ),
)
_KEY_NAME = re.compile(rf"(?i)^{_SECRET_KEY}$")
_QUICK = re.compile(
    r"(?i)sk-|[rsp]k_|bearer|basic|akia|gh[pousr]_|github_pat|aiza|xox|eyj|://|"
    r"auth|api|key|token|secret|passw"
)
"""Any text a built-in pattern can match has a match here (the check for non-ASCII text)."""


def _alternation(words: Iterable[str]) -> str:
    """A pattern matching where any of ``words`` occurs, their common beginnings written once.

    ``a(?:pi|uth)``, not ``api|auth``: the regular expression engine tries the branches of an
    alternation one by one at each position of the text, so the fewer branches start at a letter
    the faster a long clean text is passed over (a third faster for the triggers). A word that
    begins with another is left out: the shorter one is found wherever the longer one is.
    """
    given = set(words)
    kept = {w for w in given if not any(o != w and w.startswith(o) for o in given)}
    after: dict[str, list[str]] = {}
    for word in sorted(kept):
        after.setdefault(word[0], []).append(word[1:])
    return "|".join(
        re.escape(first + rests[0])
        if len(rests) == 1
        else f"{re.escape(first)}(?:{_alternation(rests)})"
        for first, rests in after.items()
    )


_TRIGGER = re.compile(_alternation(t for _, _, triggers in _BUILTIN for t in triggers))
"""Any lowercased ASCII text a built-in pattern can match has a match here.

Lowercasing first and matching case-sensitively is about ten times faster than ``(?i)``. For ASCII
text the two agree; other text (where Unicode case folding could let ``K`` stand for ``k``) takes
`_QUICK` and every pattern. Messages are most of what a trace holds, and this is what passes a
clean one.
"""
_SCALARS = (bool, int, float, type(None))


class Redactor:
    r"""Replaces secrets in text with ``[REDACTED]``.

    ``patterns`` are extra regular expressions (strings or compiled); each whole match is
    replaced. The built-in patterns always apply. `including` adds a scrubber that knows literal
    secrets (a model's own API key, whatever its length or shape).

    >>> Redactor().text("key sk-abcdefghijklmnop1234 and Authorization: Bearer abc.def.ghi")
    'key [REDACTED] and Authorization: Bearer [REDACTED]'
    >>> Redactor([r"acct-\d+"]).text("account acct-12345")
    'account [REDACTED]'
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] = ()) -> None:
        self._builtin = tuple((re.compile(p), r, t) for p, r, t in _BUILTIN)
        self._extra = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)
        self._scrubbers: tuple[Callable[[str], str], ...] = ()

    def including(self, scrubber: Callable[[str], str]) -> Redactor:
        """A redactor that also passes every text through ``scrubber`` (e.g. `OpenAIModel.redact`).

        The patterns catch secrets by their shape; a client knows its own key, which may have none.
        """
        wider = Redactor()
        wider._builtin, wider._extra = self._builtin, self._extra
        wider._scrubbers = (*self._scrubbers, scrubber)
        return wider

    def with_model(self, model: object) -> Redactor:
        """The redactor plus the model's own scrubber, if it has one (`OpenAIModel.redact`).

        A client knows its own key, whatever its shape; a model without ``redact`` adds nothing.
        """
        scrubber = getattr(model, "redact", None)
        return self.including(scrubber) if callable(scrubber) else self

    def text(self, value: str) -> str:
        """The text with every secret replaced."""
        if value.isascii():
            lowered = value.lower()
            if _TRIGGER.search(lowered):
                for pattern, replacement, triggers in self._builtin:
                    if any(t in lowered for t in triggers):
                        value = pattern.sub(replacement, value)
        elif _QUICK.search(value):
            for pattern, replacement, _ in self._builtin:
                value = pattern.sub(replacement, value)
        for extra in self._extra:
            value = extra.sub(REDACTED, value)
        for scrubber in self._scrubbers:
            value = scrubber(value)
        return value

    def value(self, value: Any) -> Any:
        """A JSON-like value with secrets replaced: string leaves scanned, secret keys masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._item(k, v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [v if isinstance(v, _SCALARS) else self.value(v) for v in value]
        return value

    def _item(self, key: Any, value: Any) -> Any:
        if isinstance(value, _SCALARS):  # numbers, booleans and nulls hold no secret
            return value
        if isinstance(value, str) and isinstance(key, str) and _secret_key(key):
            return REDACTED
        return self.value(value)


def _secret_key(name: str) -> bool:
    """Whether a key names a secret (``api_key``, ``password``, ``Authorization``...)."""
    return _KEY_NAME.match(name) is not None


_PATTERNS = Redactor()


def redacted(text: str) -> str:
    """``text`` with the built-in patterns applied: for errors a run keeps and a model reads.

    An exception's message may quote a credential (a client's "invalid key sk-…"); what a run
    keeps goes to the store and, as a tool error, to the model's provider.
    """
    return _PATTERNS.text(text)


def error_text(exc: BaseException) -> str:
    """An exception as a run tells it (``Type: message``), redacted: the model reads it."""
    return redacted(f"{type(exc).__name__}: {exc}")


_CREDENTIAL_HEADER = re.compile(r"(?i)auth|key|token|secret|passw|cookie")
"""A header whose name says it carries a credential: ``Authorization``, ``Proxy-Authorization``,
``api-key`` (Azure), ``x-api-key`` (Anthropic), ``x-goog-api-key``, ``Cookie``, ``X-Auth-Token``."""


def credential_header(name: str) -> bool:
    """Whether a header of this name carries a credential (and must not be kept)."""
    return _CREDENTIAL_HEADER.search(name) is not None


def credentials(headers: Mapping[str, str], url: str = "") -> list[str]:
    """The secrets a request carries, longest first, for a scrubber that knows them literally.

    Each credential header's last word (the token of ``Bearer x`` or ``Basic x``, or the whole
    value of ``x-api-key: x``), so that what is left reads ``Bearer [REDACTED]``; a Basic
    credential's ``user:password`` and password too, as a server may quote them decoded; and
    the password in ``url`` (``https://user:password@host``), as written and decoded. A key of
    no known shape is caught only this way.
    """
    password = _url_password(url)
    found = [password, unquote(password)]
    for name, value in headers.items():
        if credential_header(name):
            found += [*value.split()[-1:], *_basic(value)]
    return sorted({v for v in found if v}, key=len, reverse=True)


def _url_password(url: str) -> str:
    try:
        password = urlsplit(url).password
    except ValueError:
        return ""
    return password or ""


def _basic(value: str) -> list[str]:
    """``user:password`` and the password of a ``Basic`` credential, when it is one."""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "basic":
        return []
    try:
        pair = base64.b64decode(token.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    password = pair.partition(":")[2]
    return [pair, password, unquote(password)] if password else []


def unicode_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so that it can be written as UTF-8.

    Python decodes a file name that is not UTF-8 with ``surrogateescape``, so a tool that lists a
    directory can return such text; a model's JSON can escape half a character (a server that
    streams an emoji's two escapes in two chunks: each chunk's text holds one). JSON, SQLite and
    protobuf refuse it, and the run could not be stored, serialized or exported. A pair split
    that way and put back together is the character it was. ASCII text, the usual case, is
    returned at once.
    """
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def unicode_value(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with `unicode_text` in every string."""
    if isinstance(value, str):
        return unicode_text(value)
    if isinstance(value, dict):
        return {unicode_text(k): unicode_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unicode_value(v) for v in value]
    return value
