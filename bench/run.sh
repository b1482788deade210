#!/usr/bin/env bash
# bench/run.sh: plantstore on SQLite (both durability modes), plantstore on
# PostgreSQL and the storage-less baseline server, each under the same wrk
# load, in one run, as one Markdown table with every figure's ratio to the
# baseline, the server's heap allocations per request and the mean group-commit
# batch.
#
#   bench/run.sh                      # ~10 s per scenario, ~4 min in all
#   DURATION=3s bench/run.sh          # a smoke run
#   TARGETS="baseline sqlite" bench/run.sh
#
# Environment: DURATION (wrk -d, default 10s), TARGETS (default
# "baseline sqlite sqlite-relaxed postgres"), SERVER_CPU (0), WRK_CPU (1),
# WRK_THREADS (1), WRK_TIMEOUT (5s), PG_CPUS (PostgreSQL's CPUs; default
# unpinned), DURABILITY (--durability of the sqlite target, default full;
# sqlite-relaxed is always relaxed, PostgreSQL ignores it), KEEP_TMP=1 keeps
# the work directory (databases, logs, wrk output). See bench/README.md.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${TARGETS:=baseline sqlite sqlite-relaxed postgres}"
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
# What one durable commit costs this disk: the c=1 POST target is the
# baseline's p50 plus this p50.
FSYNC=$("$TMP/fsync" -dir "$TMP" | awk '{ for (i = 1; i <= 3; i++) { split($i, kv, "="); printf "%s%s %s ms", (i > 1 ? ", " : ""), substr(kv[1], 1, 3), kv[2] } }')
RESULTS=$TMP/results.tsv
: >"$RESULTS"

# measure NAME CONNS SCRIPT [VAR=VALUE...]: run_wrk's nine fields, then
#   allocs_per_req batch
# from the server's counters (server_counters) read outside the wrk window:
# three reads before (the first one warms the scrape path up; the difference
# of the next two is what one read itself allocates, subtracted), one after.
#   allocs_per_req = (m_after - m_before - (m_before - m_prev)) / requests
#   batch = delta batch_writes_sum / delta batch_writes_count ("-" with no commit)
measure() {
  local c0 c1 c2 line
  server_counters >/dev/null
  c0=$(server_counters)
  c1=$(server_counters)
  line=$(run_wrk "$@") || exit 1
  c2=$(server_counters)
  awk -v line="$line" -v c0="$c0" -v c1="$c1" -v c2="$c2" 'BEGIN {
    split(line, w, "\t"); split(c0, a, " "); split(c1, b, " "); split(c2, c, " ")
    req = w[9] + 0
    allocs = "-"
    if (a[1] != "-" && b[1] != "-" && c[1] != "-" && req > 0) {
      n = (c[1] - b[1]) - (b[1] - a[1])
      if (n < 0) n = 0
      allocs = sprintf("%.1f", n / req)
    }
    batch = "-"
    if (b[3] != "-" && c[3] != "-" && c[3] - b[3] > 0)
      batch = sprintf("%.1f", (c[2] - b[2]) / (c[3] - b[3]))
    printf "%s\t%s\t%s\n", line, allocs, batch
  }'
}

# scenarios runs the four scenarios against SERVER_URL for target $1.
scenarios() {
  local target=$1 r
  log "  $target: seeding plants 1..100"
  post_plants "$SERVER_URL" 1 100
  log "  $target: POST c=1"
  r=$(measure "$target-post1" 1 post.lua BENCH_ID_BASE=1000000000000)
  printf '%s\t%s\t%s\n' "$target" "POST /plants c=1" "$r" >>"$RESULTS"
  log "  $target: POST c=64"
  r=$(measure "$target-post64" 64 post.lua BENCH_ID_BASE=2000000000000)
  printf '%s\t%s\t%s\n' "$target" "POST /plants c=64" "$r" >>"$RESULTS"
  log "  $target: GET one c=64"
  r=$(measure "$target-get" 64 get.lua BENCH_PATH=/plants/42)
  printf '%s\t%s\t%s\n' "$target" "GET /plants/{id} c=64" "$r" >>"$RESULTS"
  log "  $target: GET list c=64"
  r=$(measure "$target-list" 64 get.lua 'BENCH_PATH=/plants?limit=100')
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
  sqlite-relaxed)
    start_plantstore "$TMP/sqlite-relaxed/plantstore.db" relaxed
    scenarios sqlite-relaxed
    stop_server
    ;;
  postgres)
    pg_start
    start_plantstore "$PG_URL"
    MEASURE_PG=1 scenarios postgres
    stop_server
    pg_stop
    ;;
  *) die "unknown target $target (known: baseline sqlite sqlite-relaxed postgres)" ;;
  esac
done

# The table: ratio = req/s / the baseline's req/s for the same scenario.
# Fields of a results row: 1 target, 2 scenario, 3..11 run_wrk's (rps p50 p99
# non2xx sock cpu rss dbcpu requests), 12 allocs/req, 13 batch.
table() {
  echo "# plantstore benchmark"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per scenario)"
  machine_info
  echo "- disk: one 4 KiB append + fdatasync in the work directory (internal/bench/fsync): $FSYNC"
  echo
  echo "| target | scenario | req/s | ratio | p50 ms | p99 ms | non-2xx | socket errors | server CPU s/1k req | PostgreSQL CPU s/1k req | peak RSS MiB | allocs/req | batch |"
  echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  awk -F'\t' '
    { rows[NR] = $0; if ($1 == "baseline") base[$2] = $3 }
    END {
      for (i = 1; i <= NR; i++) {
        split(rows[i], f, "\t")
        ratio = (f[2] in base) && base[f[2]] > 0 ? sprintf("%.2f", f[3] / base[f[2]]) : "-"
        printf "| %s | %s | %d | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n",
          f[1], f[2], f[3], ratio, f[4], f[5], f[6], f[7], f[8], f[10], f[9], f[12], f[13]
      }
    }' "$RESULTS"
  echo
  echo "Ratios compare figures of this run only; absolute numbers move with the machine's load."
  echo "allocs/req: the server's heap allocations during the scenario per request; batch: mean writes per group commit (\`-\`: no commit)."
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/latest.md"
log "written to bench/results/latest.md"
