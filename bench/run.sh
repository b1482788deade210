#!/usr/bin/env bash
# bench/run.sh: plantstore on SQLite, plantstore on PostgreSQL and the
# storage-less baseline server, each under the same wrk load, in one run, as
# one Markdown table with every figure's ratio to the baseline.
#
#   bench/run.sh                      # ~10 s per scenario, ~3 min in all
#   DURATION=3s bench/run.sh          # a smoke run
#   TARGETS="baseline sqlite" bench/run.sh
#
# Environment: DURATION (wrk -d, default 10s), TARGETS (default
# "baseline sqlite postgres"), SERVER_CPU (0), WRK_CPU (1), WRK_THREADS (1),
# WRK_TIMEOUT (5s), PG_CPUS (PostgreSQL's CPUs; default unpinned),
# DURABILITY (plantstore --durability, default full), KEEP_TMP=1 keeps the
# work directory (databases, logs, wrk output). See bench/README.md.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${TARGETS:=baseline sqlite postgres}"
WITH_POSTGRES=0
if [[ " $TARGETS " == *" postgres "* ]]; then WITH_POSTGRES=1; fi

COMMAND="$(for v in DURATION TARGETS SERVER_CPU WRK_CPU WRK_THREADS WRK_TIMEOUT PG_CPUS DURABILITY; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/run.sh"

ensure_tools
bench_init
build
TOKEN=$(random_token)
RESULTS=$TMP/results.tsv
: >"$RESULTS"

# scenarios runs the four scenarios against SERVER_URL for target $1.
scenarios() {
  local target=$1 r
  log "  $target: seeding plants 1..100"
  post_plants "$SERVER_URL" 1 100
  log "  $target: POST c=1"
  r=$(run_wrk "$target-post1" 1 post.lua BENCH_ID_BASE=1000000000000)
  printf '%s\t%s\t%s\n' "$target" "POST /plants c=1" "$r" >>"$RESULTS"
  log "  $target: POST c=64"
  r=$(run_wrk "$target-post64" 64 post.lua BENCH_ID_BASE=2000000000000)
  printf '%s\t%s\t%s\n' "$target" "POST /plants c=64" "$r" >>"$RESULTS"
  log "  $target: GET one c=64"
  r=$(run_wrk "$target-get" 64 get.lua BENCH_PATH=/plants/42)
  printf '%s\t%s\t%s\n' "$target" "GET /plants/{id} c=64" "$r" >>"$RESULTS"
  log "  $target: GET list c=64"
  r=$(run_wrk "$target-list" 64 get.lua 'BENCH_PATH=/plants?limit=100')
  printf '%s\t%s\t%s\n' "$target" "GET /plants?limit=100 c=64" "$r" >>"$RESULTS"
}

for target in $TARGETS; do
  log "== $target"
  case $target in
  baseline)
    start_baseline
    scenarios baseline
    stop_server
    ;;
  sqlite)
    start_plantstore "$TMP/sqlite/plantstore.db"
    scenarios sqlite
    stop_server
    ;;
  postgres)
    pg_start
    start_plantstore "$PG_URL"
    MEASURE_PG=1 scenarios postgres
    stop_server
    pg_stop
    ;;
  *) die "unknown target $target (known: baseline sqlite postgres)" ;;
  esac
done

# The table: ratio = req/s / the baseline's req/s for the same scenario.
table() {
  echo "# plantstore benchmark"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per scenario)"
  machine_info
  echo
  echo "| target | scenario | req/s | ratio | p50 ms | p99 ms | non-2xx | socket errors | server CPU s/1k req | PostgreSQL CPU s/1k req | peak RSS MiB |"
  echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  awk -F'\t' '
    { rows[NR] = $0; if ($1 == "baseline") base[$2] = $3 }
    END {
      for (i = 1; i <= NR; i++) {
        split(rows[i], f, "\t")
        ratio = (f[2] in base) && base[f[2]] > 0 ? sprintf("%.2f", f[3] / base[f[2]]) : "-"
        printf "| %s | %s | %d | %s | %s | %s | %d | %d | %s | %s | %s |\n",
          f[1], f[2], f[3], ratio, f[4], f[5], f[6], f[7], f[8], f[10], f[9]
      }
    }' "$RESULTS"
  echo
  echo "Ratios compare figures of this run only; absolute numbers move with the machine's load."
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/latest.md"
log "written to bench/results/latest.md"
