#!/usr/bin/env python3
"""A Claude-Code-style hook script: reads the event on stdin, answers on stdout.

Usage: decide.py ACTION [ARG]. With HOOK_RECORD=FILE it also appends its input (and how many
lines the transcript had) to FILE as one JSON line.
"""

import json
import os
import sys


def main() -> int:
    event = json.load(sys.stdin)
    record = os.environ.get("HOOK_RECORD")
    if record:
        path = event.get("transcript_path") or ""
        lines = None
        if path and os.path.exists(path):
            with open(path) as transcript:
                lines = sum(1 for _ in transcript)
        with open(record, "a") as file:
            file.write(json.dumps({**event, "_transcript_lines": lines}) + "\n")
    action = sys.argv[1] if len(sys.argv) > 1 else "none"
    arg = sys.argv[2] if len(sys.argv) > 2 else ""
    name = event["hook_event_name"]
    if action in ("allow", "deny", "ask", "defer"):
        answer = {"permissionDecision": action, "permissionDecisionReason": arg}
        print(json.dumps({"hookSpecificOutput": {"hookEventName": name, **answer}}))
    elif action == "rewrite":
        answer = {"permissionDecision": "allow", "updatedInput": json.loads(arg)}
        print(json.dumps({"hookSpecificOutput": {"hookEventName": name, **answer}}))
    elif action == "block":
        print(json.dumps({"decision": "block", "reason": arg}))
    elif action == "stop":
        print(json.dumps({"continue": False, "stopReason": arg}))
    elif action == "context":
        print(json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": arg}}))
    elif action == "plain":
        print(arg)
    elif action == "message":
        print(json.dumps({"systemMessage": arg}))
    elif action == "crash":
        raise RuntimeError("the hook script crashed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
