#!/usr/bin/env bash
# bench/pgo.sh: regenerate cmd/plantstore/default.pgo, the CPU profile that
# go build uses for profile-guided optimisation of the plantstore binary.
#
#   bench/pgo.sh                  # ~1 min; then commit cmd/plantstore/default.pgo
#
# It runs plantstore (built without PGO) on SQLite, under the four run.sh
# scenarios on SQLite with full durability plus POST c=64 with relaxed
# durability, takes a CPU profile of each from --debug-addr, and merges them.
# Environment: DURATION (per scenario, default 10s), as run.sh: SERVER_CPU,
# WRK_CPU, WRK_THREADS, KEEP_TMP. Regenerate it after a change to the hot
# paths (bench/README.md).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ensure_tools
bench_init
PGO=off build
TOKEN=$(random_token)
secs=$(duration_secs "$DURATION")
profiles=()

# profile NAME CONNS SCRIPT [VAR=VALUE...]: a CPU profile of the server
# while wrk runs the scenario (the profile starts 1 s in and ends 1 s early).
profile() {
  local name=$1
  shift
  local out=$TMP/$name.pprof
  (sleep 1; curl -sf -o "$out" "http://$DEBUG_ADDR/debug/pprof/profile?seconds=$((secs - 2))") &
  local curl_pid=$!
  run_wrk "$name" "$@" >/dev/null
  wait "$curl_pid" || die "no profile for $name"
  profiles+=("$out")
}

for durability in full relaxed; do
  DEBUG_ADDR=127.0.0.1:$(free_port)
  SERVE_ARGS="--debug-addr $DEBUG_ADDR" start_plantstore "$TMP/$durability.db" "$durability"
  post_plants "$SERVER_URL" 1 100
  log "== $durability: POST c=64"
  profile "$durability-post64" 64 post.lua BENCH_ID_BASE=2000000000000
  if [ "$durability" = full ]; then
    log "== full: GET one, GET list"
    profile full-get 64 get.lua BENCH_PATH=/plants/42
    profile full-list 64 get.lua 'BENCH_PATH=/plants?limit=100'
  fi
  stop_server
done

(cd "$REPO_DIR" && go tool pprof -proto "${profiles[@]}" >cmd/plantstore/default.pgo)
log "written cmd/plantstore/default.pgo from ${#profiles[@]} profiles; commit it"
