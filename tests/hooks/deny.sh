#!/usr/bin/env bash
# A PreToolUse hook in plain bash: always denies, with a JSON answer on stdout.
cat > /dev/null
cat <<'JSON'
{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
 "permissionDecisionReason": "denied by deny.sh"}}
JSON
