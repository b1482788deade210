#!/usr/bin/env bash
# Lint OpenAPI documents with @redocly/cli (pinned in tools/package-lock.json).
# Usage: .ci/lint-openapi.sh [FILE ...]   (default: api/openapi.yaml api/openapi.json)
# Fails on any error or warning.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x tools/node_modules/.bin/redocly ]; then
  npm ci --prefix tools --no-audit --no-fund --loglevel=error
fi
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(api/openapi.yaml api/openapi.json)
out=$(tools/node_modules/.bin/redocly lint --config redocly.yaml "${files[@]}" 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -v "║" | grep -E "validating|validated|valid|warning|error" || true
if echo "$out" | grep -qiE "[0-9]+ warnings?"; then
  echo "OpenAPI lint: warnings are not allowed"; exit 1
fi
