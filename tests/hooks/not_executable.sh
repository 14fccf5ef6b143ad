#!/usr/bin/env bash
# Deliberately not executable (mode 644): running it must fail as a recorded hook error.
echo '{}'
