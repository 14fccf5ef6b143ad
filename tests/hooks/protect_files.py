#!/usr/bin/env python3
"""A PreToolUse permission hook in the style of published Claude Code examples.

Denies edits of sensitive files (``.env``, anything under ``.git/``, keys), asks before
destructive shell commands (``rm -rf``, ``git push --force``), and stays silent otherwise. It
answers with JSON on stdout (``hookSpecificOutput.permissionDecision``), exit code 0.
"""

import json
import re
import sys

PROTECTED = [r"(^|/)\.env(\.|$)", r"(^|/)\.git/", r"\.pem$", r"(^|/)id_rsa"]
DESTRUCTIVE = [r"\brm\s+-[a-z]*r[a-z]*f", r"\bgit\s+push\b.*--force"]


def decide(name, decision, reason):
    output = {
        "hookSpecificOutput": {
            "hookEventName": name,
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }
    print(json.dumps(output))
    sys.exit(0)


data = json.load(sys.stdin)
event = data.get("hook_event_name", "PreToolUse")
tool = data.get("tool_name", "")
tool_input = data.get("tool_input") or {}

if tool in ("Write", "Edit", "MultiEdit"):
    path = tool_input.get("file_path", "")
    if any(re.search(p, path) for p in PROTECTED):
        decide(event, "deny", f"{path} is a protected file")
elif tool == "Bash":
    command = tool_input.get("command", "")
    if any(re.search(p, command) for p in DESTRUCTIVE):
        decide(event, "ask", f"destructive command: {command}")
sys.exit(0)
