#!/usr/bin/env python3
"""A PermissionDenied hook: appends what was refused to $HOOK_RECORD; with ``retry``, lets the
model try again (``hookSpecificOutput.retry``), as published hooks do after a false positive."""

import json
import os
import sys


def main() -> int:
    event = json.load(sys.stdin)
    with open(os.environ["HOOK_RECORD"], "a") as record:
        record.write(json.dumps(event) + "\n")
    if sys.argv[1:] == ["retry"]:
        output = {"hookEventName": "PermissionDenied", "retry": True}
        print(json.dumps({"hookSpecificOutput": output}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
