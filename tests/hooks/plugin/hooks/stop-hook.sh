#!/bin/bash
# A published-plugin-style Stop hook: read the transcript in Claude Code's JSONL layout, take the
# last assistant answer's text, and block the stop until it holds the completion promise.
# Uses jq where it is installed, python3 otherwise. With HOOK_RECORD=FILE it also appends what it
# saw (the plugin's environment and the last text) to FILE as one JSON line.
set -euo pipefail

HOOK_INPUT=$(cat)
if command -v jq >/dev/null 2>&1; then
  TRANSCRIPT_PATH=$(echo "$HOOK_INPUT" | jq -r '.transcript_path')
else
  TRANSCRIPT_PATH=$(echo "$HOOK_INPUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["transcript_path"])')
fi
if [[ ! -f "$TRANSCRIPT_PATH" ]]; then
  echo "transcript not found: $TRANSCRIPT_PATH" >&2
  exit 1
fi

LAST_LINE=$(grep '"role":"assistant"' "$TRANSCRIPT_PATH" | tail -1)
if command -v jq >/dev/null 2>&1; then
  LAST_OUTPUT=$(echo "$LAST_LINE" | jq -r '.message.content[] | select(.type=="text") | .text')
else
  LAST_OUTPUT=$(echo "$LAST_LINE" | python3 -c 'import json,sys; print("\n".join(b["text"] for b in json.load(sys.stdin)["message"]["content"] if b["type"]=="text"))')
fi

if [[ -n "${HOOK_RECORD:-}" ]]; then
  LAST_OUTPUT="$LAST_OUTPUT" python3 -c 'import json,os; print(json.dumps({"plugin_root": os.environ.get("CLAUDE_PLUGIN_ROOT"), "project_dir": os.environ.get("CLAUDE_PROJECT_DIR"), "last": os.environ["LAST_OUTPUT"]}))' >> "$HOOK_RECORD"
fi

if echo "$LAST_OUTPUT" | grep -q '<promise>DONE</promise>'; then
  exit 0
fi
echo '{"decision": "block", "reason": "Not done yet: keep going, and say <promise>DONE</promise> when finished."}'
