"""The conversation as a JSONL file in Claude Code's transcript layout, for command hooks.

Published hook scripts read ``transcript_path`` the way Claude Code writes it: one JSON object per
line, ``type`` (``user`` / ``assistant``), ``message.role`` and ``message.content`` as a list of
Anthropic content blocks (``text``, ``tool_use``, ``tool_result``), plus ``uuid``,
``parentUuid``, ``sessionId``, ``timestamp``, ``cwd`` and ``version``. So
``jq '.message.content[] | select(.type=="text")'`` and ``grep '"role":"assistant"'`` work
unchanged: every line has a ``message.content`` list, and the JSON is compact (no spaces after
``:``), as Claude Code's is.

Mapping: a user message is a ``user`` line with text blocks; an assistant message an
``assistant`` line with ``thinking`` (or ``redacted_thinking``), text and ``tool_use`` blocks;
tool results and retry prompts are ``user`` lines with ``tool_result`` blocks (``is_error`` set
for errors and retries), as Claude Code sends them to the model; a system message is a
``system`` line whose ``message`` has text blocks.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.hooks.events import PROTOCOL_VERSION
from workbench.messages import Message, RetryPrompt, TextPart, ThinkingPart, ToolCall, ToolResult

__all__ = ["Transcript", "transcript_line"]

_NAMESPACE = uuid.UUID("1b0e5c51-7a63-4c1d-9d0e-2f4d7f3c9a10")


def _block(part: Any) -> dict[str, Any]:
    """One message part as an Anthropic content block."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingPart):
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.signature or ""}
        return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
    if isinstance(part, ToolCall):
        return {"type": "tool_use", "id": part.call_id, "name": part.name, "input": part.arguments}
    if isinstance(part, ToolResult):
        return {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.content,
            "is_error": part.is_error,
        }
    if isinstance(part, RetryPrompt) and part.call_id is not None:
        return {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.content,
            "is_error": True,
        }
    return {"type": "text", "text": getattr(part, "content", "") or getattr(part, "text", "")}


def transcript_line(
    message: Message, index: int, *, session_id: str, cwd: str, timestamp: str
) -> dict[str, Any]:
    """Message number ``index`` of a conversation as one Claude Code transcript entry."""
    content = [_block(part) for part in message.parts]
    if message.role == "assistant":
        calls = any(isinstance(p, ToolCall) for p in message.parts)
        kind = "assistant"
        body: dict[str, Any] = {
            "id": f"msg_{_uuid(session_id, index).hex}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
        }
    elif message.role == "system":
        kind, body = "system", {"role": "system", "content": content}
    else:  # user, and tool results (which Claude Code sends as the user's turn)
        kind, body = "user", {"role": "user", "content": content}
    return {
        "parentUuid": str(_uuid(session_id, index - 1)) if index else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": PROTOCOL_VERSION,
        "type": kind,
        "message": body,
        "uuid": str(_uuid(session_id, index)),
        "timestamp": timestamp,
    }


def _uuid(session_id: str, index: int) -> uuid.UUID:
    """A stable id per message: rewriting the file keeps the chain's ids."""
    return uuid.uuid5(_NAMESPACE, f"{session_id}:{index}")


class Transcript:
    """The conversation as a JSONL file for command hooks (``transcript_path``).

    Written only when a command hook is about to run, and only the new messages are appended
    while the history just grows; removed when the execution ends.
    """

    def __init__(self) -> None:
        self._dir: str | None = None
        self._written: tuple[Message, ...] = ()

    def write(self, messages: Sequence[Message], *, session_id: str = "", cwd: str = "") -> str:
        """Bring the file up to date with ``messages``; its path ("" if it cannot be written)."""
        try:
            return self._write(messages, session_id, cwd)
        except OSError:
            self._written = ()
            return ""

    def _write(self, messages: Sequence[Message], session_id: str, cwd: str) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="workbench-hooks-")
        path = Path(self._dir) / "transcript.jsonl"
        written = self._written
        grows = len(messages) >= len(written) and all(
            a is b for a, b in zip(written, messages, strict=False)
        )
        start = len(written) if grows else 0
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with path.open("a" if grows else "w", encoding="utf-8") as file:
            for index in range(start, len(messages)):
                line = transcript_line(
                    messages[index], index, session_id=session_id, cwd=cwd, timestamp=now
                )
                file.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._written = tuple(messages)
        return str(path)

    def remove(self) -> None:
        """Delete the file (hooks that still hold the path find it gone)."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir, self._written = None, ()
