#!/usr/bin/env bash
# bench/profile.sh: a CPU profile of plantstore under one run.sh scenario,
# the server pinned to one CPU as in run.sh, and its top entries.
#
#   bench/profile.sh                       # SQLite, full durability, POST c=64, 20 s
#   SCENARIO=get bench/profile.sh          # post64 (default), post1, get, list
#   BACKEND=postgres bench/profile.sh      # a throwaway PostgreSQL cluster (run.sh's)
#   OUT=/tmp/post64.pprof bench/profile.sh # keep the profile (default: $TMP, removed)
#
# It builds plantstore as run.sh does (with the checked-in PGO profile;
# PGO=off to build without), starts it with --debug-addr on a fresh
# database, seeds plants 1..100, runs wrk for DURATION (default 20s) and
# takes a CPU profile from 2 s in to 2 s before the end. It prints wrk's
# figures with the server's CPU per request (from /proc, over the whole wrk
# run), then `go tool pprof -top`, flat and cumulative (TOP entries, default
# 40). PERF=1 also records the server with linux-perf over the same window
# (cpu-clock, so that it works in a VM without hardware counters) and
# prints the top symbols, C (SQLite) and kernel included, which Go's
# profile shows only as runtime.cgocall and syscalls. Environment as run.sh:
# SERVER_CPU, WRK_CPU, WRK_THREADS, DURABILITY, PG_CPUS, KEEP_TMP.
set -euo pipefail
: "${DURATION:=20s}"
source "$(dirname "$0")/lib.sh"

: "${SCENARIO:=post64}"
: "${BACKEND:=sqlite}"
: "${TOP:=40}"
WITH_POSTGRES=0
[ "$BACKEND" = postgres ] && WITH_POSTGRES=1 && MEASURE_PG=1

ensure_tools
bench_init
build
TOKEN=$(random_token)
secs=$(duration_secs "$DURATION")
[ "$secs" -ge 6 ] || die "DURATION must be at least 6s"
out=${OUT:-$TMP/profile.pprof}

DEBUG_ADDR=127.0.0.1:$(free_port)
case $BACKEND in
sqlite) db=$TMP/profile.db ;;
postgres)
  pg_start
  db=$PG_URL
  ;;
*) die "unknown BACKEND $BACKEND (sqlite, postgres)" ;;
esac
SERVE_ARGS="--debug-addr $DEBUG_ADDR ${SERVE_ARGS:-}" start_plantstore "$db"
post_plants "$SERVER_URL" 1 100

case $SCENARIO in
post64) args=(64 post.lua BENCH_ID_BASE=2000000000000) ;;
post1) args=(1 post.lua BENCH_ID_BASE=1000000000000) ;;
get) args=(64 get.lua BENCH_PATH=/plants/42) ;;
list) args=(64 get.lua 'BENCH_PATH=/plants?limit=100') ;;
*) die "unknown SCENARIO $SCENARIO (post64, post1, get, list)" ;;
esac

log "== $BACKEND ${DURABILITY:-full}: $SCENARIO for $DURATION, profile $((secs - 4)) s"
(sleep 2; curl -sf -o "$out" "http://$DEBUG_ADDR/debug/pprof/profile?seconds=$((secs - 4))") &
curl_pid=$!
perf_pid=
if [ -n "${PERF:-}" ]; then
  command -v perf >/dev/null || apt_install linux-perf
  (sleep 2; exec perf record -q -e cpu-clock -F 997 -g -o "$TMP/perf.data" -p "$SERVER_PID" -- sleep $((secs - 4))) 2>"$TMP/perf.log" &
  perf_pid=$!
fi
server_counters >/dev/null
c0=$(server_counters)
line=$(run_wrk "profile-$SCENARIO" "${args[@]}")
c1=$(server_counters)
wait "$curl_pid" || die "no profile"
if [ -n "$perf_pid" ]; then wait "$perf_pid" || { cat "$TMP/perf.log" >&2; die "perf record failed"; }; fi
stop_server
[ "$BACKEND" = postgres ] && pg_stop

awk -F'\t' '{ printf "req/s %s, p50 %s ms, p99 %s ms, non-2xx %s, socket errors %s, server CPU %.1f us/req", $1, $2, $3, $4, $5, $6 * 1000
  if ($8 != "-") printf ", PostgreSQL CPU %.1f us/req", $8 * 1000
  printf "\n" }' <<<"$line"
# Allocations per request and mean batch, as run.sh counts them (without
# its correction for what a read of /metrics allocates; the profile's own
# allocations included).
awk -v line="$line" -v c0="$c0" -v c1="$c1" 'BEGIN {
  split(line, w, "\t"); split(c0, a, " "); split(c1, b, " ")
  if (a[1] != "-" && b[1] != "-" && w[9] > 0) printf "allocs/req %.1f", (b[1] - a[1]) / w[9]
  if (a[3] != "-" && b[3] != "-" && b[3] - a[3] > 0) printf ", batch %.1f", (b[2] - a[2]) / (b[3] - a[3])
  printf "\n" }'
echo "commit $(cd "$REPO_DIR" && git rev-parse --short HEAD)$(cd "$REPO_DIR" && git diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo ' (with local changes)'); profile $out"
echo
echo "flat:"
go tool pprof -top -nodecount="$TOP" "$TMP/plantstore" "$out" 2>/dev/null || true
echo
echo "cumulative:"
go tool pprof -top -cum -nodecount="$TOP" "$TMP/plantstore" "$out" 2>/dev/null | tail -n +6 || true
if [ -n "$perf_pid" ]; then
  echo
  echo "perf, by symbol (self):"
  if [ -n "${OUT:-}" ]; then cp "$TMP/perf.data" "$out.perf.data"; fi
  perf report -i "$TMP/perf.data" --no-children -g none --sort dso,symbol --stdio 2>/dev/null |
    grep '%' | grep -v '^#' | head -n "$TOP" || true
  echo
  echo "perf, by symbol (with callees), plantstore's own:"
  perf report -i "$TMP/perf.data" --children -g none --sort symbol --stdio 2>/dev/null |
    grep '%' | grep -v '^#' | grep -E 'sqlite|plantstore|database/sql|http|groupcommit|fdatasync|pwrite' | head -n "$TOP" || true
fi
