#!/usr/bin/env bash
# Lint OpenAPI documents with @redocly/cli and with Spectral's spectral:oas ruleset
# (.spectral.yaml), both pinned in tools/package-lock.json.
# Usage: .ci/lint-openapi.sh [FILE ...]   (default: api/openapi.yaml api/openapi.json)
# Fails on any error or warning of either.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x tools/node_modules/.bin/redocly ] || [ ! -x tools/node_modules/.bin/spectral ]; then
  npm ci --prefix tools --no-audit --no-fund --loglevel=error
fi
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(api/openapi.yaml api/openapi.json)
out=$(tools/node_modules/.bin/redocly lint --config redocly.yaml "${files[@]}" 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -v "║" | grep -E "validating|validated|valid|warning|error" || true
if echo "$out" | grep -qiE "[0-9]+ warnings?"; then
  echo "OpenAPI lint: warnings are not allowed"; exit 1
fi
# Spectral (spectral:oas): --fail-severity=warn fails on a warning or an error; examples are
# checked against their schemas (oas3-valid-media-example, oas3-valid-schema-example).
echo "spectral lint (spectral:oas) ${files[*]}"
tools/node_modules/.bin/spectral lint --ruleset .spectral.yaml --fail-severity=warn --display-only-failures "${files[@]}" \
  || { echo "OpenAPI lint: Spectral found problems (see above)"; exit 1; }
