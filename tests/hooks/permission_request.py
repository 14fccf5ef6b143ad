#!/usr/bin/env python3
"""A PermissionRequest hook in the style of the published ones: answer the approval prompt.

Read-only and arithmetic tools are approved, destructive ones refused (with ``interrupt`` when
they would touch everything), writes are approved into a sandbox directory (``updatedInput``);
anything else gets no answer, so the user is asked as usual. MCP names (``mcp__server__tool``)
are judged by their tool part.
"""

import json
import re
import sys

SAFE = re.compile(r"^(get|list|read|search|add)")
DESTRUCTIVE = re.compile(r"(delete|remove|drop|rm)")


def answer(decision: dict) -> None:
    output = {"hookEventName": "PermissionRequest", "decision": decision}
    print(json.dumps({"hookSpecificOutput": output}))


def main() -> int:
    event = json.load(sys.stdin)
    name = event["tool_name"].split("__")[-1]
    arguments = event["tool_input"]
    if SAFE.match(name):
        answer({"behavior": "allow"})
    elif DESTRUCTIVE.search(name):
        everything = bool(arguments.get("everything"))
        answer({"behavior": "deny", "message": f"{name} is destructive", "interrupt": everything})
    elif name == "write_file":
        sandboxed = {**arguments, "path": "sandbox/" + arguments["path"].rsplit("/", 1)[-1]}
        answer({"behavior": "allow", "updatedInput": sandboxed})
    return 0


if __name__ == "__main__":
    sys.exit(main())
