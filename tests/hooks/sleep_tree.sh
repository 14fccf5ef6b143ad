#!/usr/bin/env bash
# Never answers: starts a child that sleeps, writes "<own pid> <child pid>" to $1, then waits.
cat > /dev/null
sleep 300 &
echo "$$ $!" > "$1.tmp" && mv "$1.tmp" "$1"
wait
