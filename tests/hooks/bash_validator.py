#!/usr/bin/env python3
"""The Bash command validator from Claude Code's hooks documentation, unchanged in spirit.

PreToolUse hook for the Bash tool: exit 2 with the issues on stderr blocks the command.
"""

import json
import re
import sys

VALIDATION_RULES = [
    (r"\bgrep\b(?!.*\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance"),
    (r"\bfind\s+\S+\s+-name\b", "Use 'rg --files -g pattern' instead of 'find -name'"),
]


def validate_command(command: str) -> list[str]:
    return [message for pattern, message in VALIDATION_RULES if re.search(pattern, command)]


try:
    input_data = json.load(sys.stdin)
except json.JSONDecodeError as e:
    print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
    sys.exit(1)

tool_name = input_data.get("tool_name", "")
tool_input = input_data.get("tool_input", {})
command = tool_input.get("command", "")

if tool_name != "Bash" or not command:
    sys.exit(0)

issues = validate_command(command)
if issues:
    for message in issues:
        print(f"• {message}", file=sys.stderr)
    sys.exit(2)
