"""Where the loop fires each hook event, and what it does with the answers.

| event | fires | what the answer can do |
|---|---|---|
| SessionStart | an execution starts (``startup``, or ``resume`` after a pause) | add context |
| UserPromptSubmit | a new run starts, with its prompt | block the run, add context |
| PreCompact | PREPARE: history processors dropped messages | observe |
| PreToolUse | TOOLS: after the guards, before a call runs | allow / deny / ask, rewrite input |
| PermissionRequest | TOOLS: a call needs approval, before it pauses | allow / deny, rewrite input |
| PermissionDenied | TOOLS: a guard or hook refused a call | let the model retry |
| PostToolUse | TOOLS: after a call succeeded | add to the result, block with reason |
| PostToolUseFailure | TOOLS: after a call failed | add to the error |
| Notification | TOOLS: the run pauses for approval | observe |
| Stop | CONTINUATION: the model ended the run on its own | one more turn (bounded) |
| SubagentStart / Stop | a subagent tool (`Agent.as_tool`) starts / ends | Stop: one more turn |
| SessionEnd | the execution ended or paused | observe |

Added context is a user message at the start of the next step (it never lands between a tool
call and its result). Any hook but SessionEnd may end the run (``continue_=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from workbench.hooks.events import (
    HookEvent,
    HookInput,
    NotificationInput,
    PermissionDeniedInput,
    PermissionRequestInput,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreCompactInput,
    PreToolUseInput,
    SessionEndInput,
    SessionStartInput,
    StopInput,
    ToolInput,
    UserPromptSubmitInput,
)
from workbench.hooks.runner import (
    NO_VERDICT,
    AnyHook,
    HookDispatch,
    HookReport,
    HookVerdict,
    ParentHooks,
)
from workbench.messages import JsonValue, Message, ToolCall
from workbench.records import ToolOutcome
from workbench.redact import redacted
from workbench.state import AgentState, PendingCall

__all__ = ["LoopHooks", "with_arguments"]

CONTINUE_MESSAGE = "A Stop hook asked you to continue."


class LoopHooks(HookDispatch):
    """The hook call points of one execution."""

    def __init__(
        self,
        hooks: Sequence[AnyHook],
        state: Callable[[], AgentState],
        on_report: Callable[[HookReport], None],
        max_turns: int,
        redact: Callable[[str], str] = redacted,
    ) -> None:
        super().__init__(hooks, state, on_report, redact)
        self.max_turns = max_turns
        """How many extra turns Stop hooks may force in one run (counted in the state)."""
        self._context: list[str] = []

    async def session_start(self, model: str) -> bool:
        """SessionStart, then UserPromptSubmit for a new run; False if the prompt was refused."""
        if not self.hooks:
            return True
        state = self._state()
        fresh = state.step == 0
        source = "startup" if fresh else "resume"
        self._keep_context(await self.fire(SessionStartInput(source=source, model=model)))
        prompt = _prompt(state)
        if not fresh or prompt is None:
            return True
        verdict = await self.fire(UserPromptSubmitInput(prompt=prompt))
        if verdict.blocked:
            self.note(f"UserPromptSubmit hook refused the prompt: {verdict.reason or 'no reason'}")
            return False
        self._keep_context(verdict)
        return True

    def take_context(self) -> str:
        """Context hooks added since the last step, for the model; empty if none."""
        if not self._context:
            return ""
        text, self._context = "\n\n".join(self._context), []
        return text

    async def pre_compact(self, before: int, after: int) -> None:
        """History processors cut ``before`` messages down to ``after``."""
        if not self.wants(HookEvent.PRE_COMPACT):
            return
        await self.fire(PreCompactInput(messages_before=before, messages_after=after))

    async def pre_tool_use(self, call: ToolCall) -> HookVerdict:
        """The hooks' answer for a call about to run."""
        return await self._about(call, HookEvent.PRE_TOOL_USE, PreToolUseInput)

    async def permission_request(self, call: ToolCall, reason: str) -> HookVerdict:
        """A call needs approval: the hooks may allow or deny it instead of the user."""
        return await self._about(
            call, HookEvent.PERMISSION_REQUEST, PermissionRequestInput, reason=reason
        )

    async def permission_denied(self, call: ToolCall, reason: str) -> bool:
        """A guard or hook refused the call; True when a hook lets the model try it again."""
        verdict = await self._about(
            call, HookEvent.PERMISSION_DENIED, PermissionDeniedInput, reason=reason
        )
        return verdict.retry

    async def _about(
        self, call: ToolCall, event: HookEvent, data: type[ToolInput], **fields: str
    ) -> HookVerdict:
        """Fire ``event`` for a call, if any hook listens for it."""
        if not self.wants(event):
            return NO_VERDICT
        about = {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.call_id}
        return await self.fire(data(**about, **fields))

    async def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> str:
        """PostToolUse or PostToolUseFailure; the text to add to what the model reads."""
        ok = outcome.status == "ok"
        if not self.wants(HookEvent.POST_TOOL_USE if ok else HookEvent.POST_TOOL_USE_FAILURE):
            return ""
        name, arguments, call_id = call.name, call.arguments, call.call_id
        data: HookInput
        if ok:
            response = outcome.content
            data = PostToolUseInput(
                tool_name=name, tool_input=arguments, tool_use_id=call_id, tool_response=response
            )
        else:
            data = PostToolUseFailureInput(
                tool_name=name, tool_input=arguments, tool_use_id=call_id, error=outcome.content
            )
        return (await self.fire(data)).feedback

    async def notification(self, pending: Sequence[PendingCall]) -> None:
        """The run pauses: tell the hooks which calls wait for approval."""
        asks = [f"{p.tool} ({p.call_id})" for p in pending if p.kind == "approval"]
        if asks:
            await self.fire(NotificationInput(message=f"Approval needed for {', '.join(asks)}"))

    async def stop(self) -> str | None:
        """Ask the Stop hooks; the message for one more turn, or None to let the run end."""
        if not self.wants(HookEvent.STOP):
            return None
        turns = self._state().hook_turns
        verdict = await self.fire(StopInput(stop_hook_active=turns > 0))
        if not verdict.blocked or self.stop_reason is not None:
            return None
        if turns >= self.max_turns:
            self.note(
                f"a Stop hook asked for another turn after {self.max_turns} forced turns; "
                "the run ends",
                error=True,
            )
            return None
        return verdict.reason or CONTINUE_MESSAGE

    async def session_end(self) -> None:
        """The execution ended or paused; the transcript file goes."""
        if not self.hooks:
            return
        state = self._state()
        reason = state.stop_reason.value if state.stop_reason else state.status.value
        await self.fire(SessionEndInput(reason=reason))
        self.close()

    def for_subagents(self) -> ParentHooks | None:
        """What a subagent tool run during this execution uses to fire subagent events.

        Made for each TOOLS phase and held only while it runs (kept here, it would tie these
        hooks into a reference cycle); None without hooks, as there is nothing to fire.
        """
        if not self.hooks:
            return None
        return ParentHooks(
            fire=self.fire, note=lambda text: self.note(text, error=True), max_turns=self.max_turns
        )

    def _keep_context(self, verdict: HookVerdict) -> None:
        if verdict.additional_context:
            self._context.append(verdict.additional_context)


def _prompt(state: AgentState) -> str | None:
    last = state.messages[-1] if state.messages else None
    return last.text if last is not None and last.role == "user" else None


def with_arguments(
    messages: Sequence[Message], arguments: Mapping[str, dict[str, JsonValue]]
) -> tuple[Message, ...]:
    """The conversation with the last answer's calls given these arguments (by call id)."""
    history = list(messages)
    index = next(i for i in reversed(range(len(history))) if history[i].role == "assistant")
    parts = tuple(
        p.model_copy(update={"arguments": arguments[p.call_id]})
        if isinstance(p, ToolCall) and p.call_id in arguments
        else p
        for p in history[index].parts
    )
    history[index] = history[index].model_copy(update={"parts": parts})
    return tuple(history)
