#!/usr/bin/env bash
# Prints about 5 MB to stdout (and would go on reading nothing).
cat > /dev/null
head -c 5000000 /dev/zero | tr '\0' 'x'
