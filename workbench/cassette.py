"""Cassettes: a model's answers recorded to a JSON file once, replayed in every test after.

``wb.cassette(path, model, mode=...)`` wraps any `Model`. In ``record`` mode each request is
passed to the model and the request, the response and (when the answer streamed) its text deltas
are written to the file. In ``replay`` mode the answer comes from the file and the model is never
called: a request the cassette does not hold is a `ReplayDivergence` that shows how it differs
from the recorded request it was expected to be, and there is no live fall-through, which is
what makes a cassette a test fixture and not a cache. ``once`` records when the file is missing
and replays when it exists.

The file is meant to be read and reviewed in a diff: indented JSON with a format name and a
version, the conversation as messages, the tools offered as definitions, the settings. Secrets
never reach it: every string is passed through the telemetry `Redactor` (API keys, bearer tokens,
``password=``-style values, the caller's own patterns, and the wrapped model's own key through its
``redact`` when it has one, as `OpenAIModel` does), and a request is compared after the
same redaction, so a recording stays replayable. Nothing about the wrapped model's client (base
URL headers, API key) is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import ValidationError

from workbench._json import loads
from workbench._record import Record
from workbench.errors import CassetteError, ReplayDivergence, UsageError
from workbench.messages import JsonValue, Message, ModelResponse
from workbench.models.base import Model, ModelRequest
from workbench.models.request_diff import (
    RecordedRequest,
    RequestDiff,
    describe_part,
    first_difference,
    tool_payload,
)
from workbench.redact import Redactor
from workbench.tools import ToolDefinition

__all__ = ["CASSETTE_FORMAT", "CASSETTE_VERSION", "Cassette", "CassetteMode", "cassette"]

CASSETTE_FORMAT: Literal["workbench-cassette"] = "workbench-cassette"
CASSETTE_VERSION = 1
"""The version this workbench writes and reads; a file from a newer one is refused, not guessed."""

CassetteMode = Literal["once", "replay", "record"]


class Interaction(Record):
    """One request and its answer; ``stream`` holds the text deltas when the answer streamed."""

    request: RecordedRequest
    response: ModelResponse
    stream: tuple[str, ...] | None = None


class CassetteFile(Record):
    """What the file holds."""

    format: Literal["workbench-cassette"] = CASSETTE_FORMAT
    version: int = CASSETTE_VERSION
    model: dict[str, str]
    """The recorded model's ``name`` and ``provider``."""
    interactions: tuple[Interaction, ...] = ()


class Cassette:
    """A `Model` that records to, or replays from, a cassette file (see the module docstring).

    ``mode`` is the mode in effect (``once`` resolved to ``record`` or ``replay`` when made).
    Every request is kept in ``calls``; ``interactions`` are those recorded or loaded; ``used``
    counts the replayed ones and `assert_complete()` checks every recorded answer was asked for
    again.
    """

    __test__ = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        model: Model | None = None,
        *,
        mode: CassetteMode = "once",
        redact: Iterable[str | re.Pattern[str]] = (),
    ) -> None:
        if mode not in get_args(CassetteMode):
            raise UsageError(f"cassette mode must be 'once', 'replay' or 'record', not {mode!r}")
        self.path = Path(path)
        self.model = model
        self.mode: Literal["replay", "record"] = (
            ("replay" if self.path.exists() else "record") if mode == "once" else mode
        )
        self.redactor = Redactor(redact).with_model(model)
        self.interactions: list[Interaction] = []
        self.calls: list[ModelRequest] = []
        self.departures: list[ReplayDivergence] = []
        """Each request that departed from the recording, as it was raised (the run that sent
        it failed with it: the pytest plugin shows them beside a failed test)."""
        self._used: set[int] = set()
        self._recorded_model = {"name": "", "provider": ""}
        if self.mode == "record" and model is None:
            raise UsageError(
                f"cassette {self.path} records (mode={mode!r}, "
                f"{'file missing' if mode == 'once' else 'record'}): pass the model to record"
            )
        if self.mode == "record":  # said now, not after the model was paid for its first answer
            _writable(self.path)
        if self.mode == "replay":
            loaded = load_cassette(self.path)
            self.interactions = list(loaded.interactions)
            self._recorded_model = loaded.model

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r}, {len(self.interactions)} held)"

    def redact(self, text: str) -> str:
        """``text`` as the file would hold it: no secret, the wrapped model's own key included.

        Telemetry asks a model for this (as it asks `OpenAIModel`), so wrapping a model in a
        cassette does not let its key into the spans either.
        """
        return self.redactor.text(text)

    @property
    def name(self) -> str:
        """The wrapped model's name (the recorded one's when replaying without a model)."""
        return self.model.name if self.model is not None else self._recorded_model["name"]

    @property
    def provider(self) -> str:
        """The wrapped model's provider (the recorded one's when replaying without a model)."""
        if self.model is not None:
            return self.model.provider
        return self._recorded_model["provider"]

    @property
    def used(self) -> int:
        """How many recorded answers were replayed."""
        return len(self._used)

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Record the model's answer, or replay the recorded one (never calling the model)."""
        self.calls.append(request)
        if self.mode == "replay":
            try:
                return self._replay(request)
            except ReplayDivergence as departed:
                self.departures.append(departed)
                raise
        return await self._record(request)

    def assert_complete(self) -> None:
        """Raise AssertionError unless every recorded answer was replayed.

        A recording run holds only the answers it was just given, so it is complete: the same
        test, with this check, passes on the run that records and on the runs that replay.
        """
        if self.mode == "record":
            return
        held = len(self.interactions)
        assert self.used == held, f"the cassette replayed {self.used} of its {held} answers"

    # -- record ---------------------------------------------------------------------------------

    async def _record(self, request: ModelRequest) -> ModelResponse:
        assert self.model is not None
        deltas: list[str] = []
        forward = request.on_text_delta

        def collect(text: str) -> None:  # kept even when nobody listens now: a replay may
            deltas.append(text)
            if forward is not None:
                forward(text)

        sent = request.model_copy(update={"on_text_delta": collect})
        response = (await self.model.request(sent)).writable()  # the cassette is a file
        self.interactions.append(
            Interaction(
                request=self._recorded(request),
                response=self._redacted(response),
                stream=self._stream(deltas) if deltas else None,
            )
        )
        self._write()
        return response

    def _stream(self, deltas: list[str]) -> tuple[str, ...]:
        """The deltas, redacted; as one piece if a secret was split across them."""
        whole = "".join(deltas)
        if self.redactor.text(whole) != whole:
            return (self.redactor.text(whole),)
        return tuple(deltas)

    def _write(self) -> None:
        """The whole file, replaced at once: a crash mid-write never leaves half a cassette."""
        assert self.model is not None
        content = CassetteFile(
            model={"name": self.model.name, "provider": self.model.provider},
            interactions=tuple(self.interactions),
        )
        data = content.model_dump(mode="json", exclude=_PROVENANCE)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        except OSError as exc:
            raise _unwritable(self.path, exc) from None
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, self.path)
        except BaseException as exc:
            Path(temporary).unlink(missing_ok=True)
            if isinstance(exc, OSError):  # a disk full, the file made a directory meanwhile
                raise _unwritable(self.path, exc) from None
            raise

    # -- replay ---------------------------------------------------------------------------------

    def _replay(self, request: ModelRequest) -> ModelResponse:
        sent = self._recorded(request)
        definitions = tuple(
            ToolDefinition(
                name=str(d["name"]), description=str(d["description"]), parameters=d["parameters"]
            )
            for d in sent.definitions or ()
        )
        unused = [i for i in range(len(self.interactions)) if i not in self._used]
        for i in unused:
            if self._difference(i, sent, definitions) is None:
                return self._answer(i, request)
        if not unused:
            last = sent.messages[-1] if sent.messages else None
            what = describe_part(last.parts[0]) if last is not None and last.parts else "nothing"
            raise ReplayDivergence(
                len(self.interactions) + 1,
                f"the cassette {self.path} holds {len(self.interactions)} requests, all answered; "
                f"request {len(self.interactions) + 1} (last message: {what}) is not in it. "
                "Record again (mode='record') if the test changed on purpose",
            )
        expected = unused[0]
        diff = self._difference(expected, sent, definitions)
        assert diff is not None
        raise ReplayDivergence(
            expected + 1,
            f"(cassette {self.path}, request {expected + 1}) {diff.text()}",
            diff=diff,
        )

    def _difference(
        self, index: int, sent: RecordedRequest, definitions: tuple[ToolDefinition, ...]
    ) -> RequestDiff | None:
        recorded = self.interactions[index].request
        return first_difference(recorded, sent.messages, definitions, sent.settings or {})

    def _answer(self, index: int, request: ModelRequest) -> ModelResponse:
        self._used.add(index)
        interaction = self.interactions[index]
        if request.on_text_delta is not None and interaction.stream is not None:
            for text in interaction.stream:
                request.on_text_delta(text)
        return interaction.response

    # -- both -----------------------------------------------------------------------------------

    def _recorded(self, request: ModelRequest) -> RecordedRequest:
        """The request as the cassette keeps it: no provenance, secrets redacted."""
        payload = {
            "messages": [_plain(m) for m in request.messages],
            "tools": [d.name for d in request.tools],
            "definitions": [tool_payload(d) for d in request.tools],
            "settings": dict(request.settings),
        }
        return RecordedRequest.model_validate(self.redactor.value(payload))

    def _redacted(self, response: ModelResponse) -> ModelResponse:
        return ModelResponse.model_validate(self.redactor.value(response.model_dump(mode="json")))


_PROVENANCE: Any = {
    "interactions": {
        "__all__": {"request": {"messages": {"__all__": {"run_id", "execution_id", "step"}}}}
    }
}
"""Left out of the file: a cassette's messages have none (see `_plain`), and nulls are noise."""


def _plain(message: Message) -> dict[str, JsonValue]:
    """A message without its provenance (run, execution, step): what the model was asked."""
    return {"role": message.role, "parts": [p.model_dump(mode="json") for p in message.parts]}


def load_cassette(path: Path) -> CassetteFile:
    """Read a cassette file; a damaged, foreign or newer file is a `CassetteError` saying which."""
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"cassette {path} cannot be read: {exc}") from exc
    except ValueError as exc:  # not JSON, or nested deeper than MAX_DEPTH
        raise CassetteError(f"cassette {path} is damaged: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != CASSETTE_FORMAT:
        raise CassetteError(f"{path} is not a workbench cassette (no format {CASSETTE_FORMAT!r})")
    version = data.get("version")
    if not isinstance(version, int) or version > CASSETTE_VERSION or version < 1:
        raise CassetteError(
            f"cassette {path} has version {version!r}; this workbench reads version "
            f"{CASSETTE_VERSION} (a newer workbench wrote it: upgrade, or record it again)"
        )
    try:
        return CassetteFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CassetteError(f"cassette {path} is damaged at {where}: {first['msg']}") from None


def _writable(path: Path) -> None:
    """A `CassetteError` unless the cassette can be written where it is to be (a file beside it).

    Nothing there is changed: in record mode the old file stays until the first answer is in.
    """
    if path.is_dir():
        raise CassetteError(f"cassette {path} cannot be written: it is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    os.close(handle)
    os.unlink(temporary)


def _unwritable(path: Path, exc: OSError) -> CassetteError:
    return CassetteError(f"cassette {path} cannot be written: {exc.strerror or exc}")


def cassette(
    path: str | os.PathLike[str],
    model: Model | None = None,
    *,
    mode: CassetteMode = "once",
    redact: Iterable[str | re.Pattern[str]] = (),
) -> Cassette:
    """Wrap ``model`` in a cassette at ``path`` (see the module docstring).

    ``mode``: ``once`` (record when the file is missing, else replay), ``replay`` (answer only
    from the file; the model may be omitted) or ``record`` (call the model, overwrite the
    file). ``redact``: extra regular expressions to keep out of the file.
    """
    return Cassette(path, model, mode=mode, redact=redact)
