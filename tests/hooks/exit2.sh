#!/usr/bin/env bash
# Blocks whatever it is asked about: the reason goes to stderr, exit code 2.
cat > /dev/null
echo "${1:-blocked by exit2.sh}" >&2
exit 2
