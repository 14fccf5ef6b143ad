"""`RunLog`: which of a run's messages and tool sets already have rows, as the store writes it.

Writing is kept flat per step: a message is serialized once, the first time the store sees it
(known message objects are recognised by identity, others by a content hash), and a snapshot or
record refers to its messages by ranges of a per-run sequence. A snapshot's tool definitions are
written once per run and set of tools, and the snapshot names the set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench import _storage as st
from workbench._runfacts import RunFacts
from workbench.conversation import Messages
from workbench.messages import Message, ToolDefinition
from workbench.state import AgentState


@dataclass
class RunLog:
    """What the store remembers about a run while it writes it: which messages have rows.

    ``known`` maps ``id(message)`` to the message (held, so the id cannot be reused) and its
    ``seq``; ``by_hash`` catches equal messages that are different objects (a run resumed in
    another process, messages copied into a re-run). ``prefix`` is the last full conversation
    referenced: the next one almost always extends it, and a view of the same log knows that at
    once (`Messages.starts_with`), so referencing a long conversation costs nothing per step
    that grows with it.
    """

    run_id: str
    next_seq: int = 0
    next_step: int = 0
    by_hash: dict[str, int] = field(default_factory=dict)
    known: dict[int, tuple[Message, int]] = field(default_factory=dict)
    prefix: Sequence[Message] = ()
    prefix_ranges: tuple[st.Range, ...] = ()
    rows: list[tuple[str, int, str, str]] = field(default_factory=list)
    tool_sets: set[str] = field(default_factory=set)
    """The hashes of the run's tool sets that have rows (or are queued in ``tool_rows``)."""
    tool_rows: list[tuple[str, str, str]] = field(default_factory=list)
    last_tools: tuple[tuple[ToolDefinition, ...], str] | None = None
    """The last set of tools referenced and its hash: the next step almost always has it too."""
    latest: AgentState | None = None
    model_name: str | None = None
    facts: RunFacts | None = None
    """The run's summary so far (errors, tools, time); None until read back or begun."""
    root_run_id: str | None = None

    def refs(self, messages: Sequence[Message], *, full: bool = False) -> list[st.Range]:
        """The ranges of ``messages``, queueing rows for the messages not stored yet.

        ``full`` marks a whole conversation (a state's messages): it becomes the prefix the next
        one is checked against. Windows and per-step additions never replace it.
        """
        if not isinstance(messages, Messages):
            messages = Messages(messages)
        n = len(self.prefix)
        start = 0
        ranges: list[st.Range] = []
        if n and messages.starts_with(self.prefix):
            ranges, start = list(self.prefix_ranges), n
        for message in messages[start:]:
            seq = self._seq(message)
            if ranges and ranges[-1][1] == seq:
                ranges[-1] = (ranges[-1][0], seq + 1)
            else:
                ranges.append((seq, seq + 1))
        if full:
            self.prefix, self.prefix_ranges = messages, tuple(ranges)
        return ranges

    def _seq(self, message: Message) -> int:
        entry = self.known.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        body = message.model_dump_json()
        digest = _digest(body)
        seq = self.by_hash.get(digest)
        if seq is None:
            seq, self.next_seq = self.next_seq, self.next_seq + 1
            self.by_hash[digest] = seq
            self.rows.append((self.run_id, seq, digest, body))
        self.known[id(message)] = (message, seq)
        return seq

    def tools_ref(self, definitions: tuple[ToolDefinition, ...]) -> str | None:
        """The hash naming ``definitions``, queueing their row if the run has none yet."""
        if not definitions:
            return None
        if self.last_tools is not None and self.last_tools[0] == definitions:
            return self.last_tools[1]
        body = st.dump_tools(definitions)
        digest = _digest(body)
        if digest not in self.tool_sets:
            self.tool_sets.add(digest)
            self.tool_rows.append((self.run_id, digest, body))
        self.last_tools = (definitions, digest)
        return digest

    def committed(self) -> None:
        """The queued rows are in the database."""
        self.rows.clear()
        self.tool_rows.clear()

    def rolled_back(self) -> None:
        """The queued rows never made it: forget them so a later step writes them again."""
        if self.rows:
            first = self.rows[0][1]
            self.next_seq = first
            self.by_hash = {h: s for h, s in self.by_hash.items() if s < first}
            self.known = {k: v for k, v in self.known.items() if v[1] < first}
            self.rows.clear()
        self.tool_sets.difference_update(digest for _, digest, _ in self.tool_rows)
        self.tool_rows.clear()
        self.last_tools = None
        self.prefix, self.prefix_ranges = (), ()
        self.model_name = None
        self.facts = None  # it may hold the step that was not written: read it back


def _digest(body: str) -> str:
    """The content hash that recognises a row's payload written before (a message, a tool set)."""
    return hashlib.sha256(body.encode()).hexdigest()[:32]
