#!/usr/bin/env bash
# bench/growth.sh: does plantstore slow down as its table grows? For each
# size in SIZES it preloads the owner's plants up to that size without HTTP
# (internal/bench/preload: the row store's bulk insert, big transactions on both
# backends), then measures creates/s (POST c=64) and GET /plants?limit=100
# (c=64, pages starting at random ids across the table): req/s, p99, RSS.
#
#   bench/growth.sh                                   # 0, 1M, 10M plants: ~10 min, ~3 GB of disk
#   SIZES="0 100000" DURATION=3s bench/growth.sh      # a smoke run
#   BACKENDS=sqlite bench/growth.sh
#
# Environment: SIZES (ascending; default "0 1000000 10000000"), BACKENDS
# (default "sqlite postgres"), DURATION (wrk -d, default 10s),
# PRELOAD_TIMEOUT (seconds per preload step, default 1800), and those of
# lib.sh (SERVER_CPU, WRK_CPU, WRK_THREADS, PG_CPUS, DURABILITY, KEEP_TMP).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${SIZES:=0 1000000 10000000}"
: "${BACKENDS:=sqlite postgres}"
: "${PRELOAD_TIMEOUT:=1800}"
WITH_POSTGRES=0
if [[ " $BACKENDS " == *" postgres "* ]]; then WITH_POSTGRES=1; fi

COMMAND="$(for v in SIZES BACKENDS DURATION SERVER_CPU WRK_CPU WRK_THREADS PG_CPUS DURABILITY; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/growth.sh"

ensure_tools
bench_init
build
TOKEN=$(random_token) # registered for owner "admin" by --bootstrap-token
RESULTS=$TMP/growth.tsv
: >"$RESULTS"

db_mib() {
  case $1 in
  sqlite) du -cm "$2"* | awk 'END { print $1 }' ;;
  postgres)
    du -sm "$PG_DATA" | awk '{ print $1 }' ;;
  esac
}

for backend in $BACKENDS; do
  log "== $backend"
  case $backend in
  sqlite) db=$TMP/sqlite/growth.db ;;
  postgres)
    pg_start
    db=$PG_URL
    ;;
  *) die "unknown backend $backend (known: sqlite postgres)" ;;
  esac
  prev=0 step=0
  for size in $SIZES; do
    [ "$size" -ge "$prev" ] || die "SIZES must be ascending"
    step=$((step + 1))
    t0=$(date +%s.%N)
    log "  preloading ids $((prev + 1))..$size"
    timeout "$PRELOAD_TIMEOUT" "$TMP/preload" --db "$db" --owner admin --from $((prev + 1)) --to "$size" \
      --timeout "${PRELOAD_TIMEOUT}s" >&2
    preload_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    prev=$size
    start_plantstore "$db"
    m=0
    if [ "$backend" = postgres ]; then m=1; fi
    log "  $backend @ $size: POST c=64"
    post=$(MEASURE_PG=$m run_wrk "$backend-$size-post" 64 post.lua BENCH_ID_BASE=$((step * 1000000000000)))
    log "  $backend @ $size: GET list c=64"
    after_max=$((size > 100 ? size - 100 : 0))
    list=$(MEASURE_PG=$m run_wrk "$backend-$size-list" 64 get.lua 'BENCH_PATH=/plants?limit=100' BENCH_AFTER_MAX=$after_max)
    stop_server
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$backend" "$size" "$preload_s" "$(db_mib "$backend" "$db")" "$post" "$list" >>"$RESULTS"
  done
  if [ "$backend" = postgres ]; then pg_stop; fi
done

table() {
  echo "# plantstore growth benchmark"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per measurement)"
  machine_info
  echo
  echo "| backend | plants | POST c=64 req/s | vs empty | POST p99 ms | list p99 ms | vs empty | list req/s | non-2xx | socket errors | peak RSS MiB (POST / list) | preload s | db MiB |"
  echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  # Fields: 1 backend, 2 size, 3 preload s, 4 db MiB, then run_wrk's 9 for
  # POST (5..13: rps p50 p99 non2xx sock cpu rss dbcpu req) and 9 for list (14..22).
  awk -F'\t' '
    !($1 in first) { first[$1] = NR; post0[$1] = $5; p99_0[$1] = $16 }
    {
      pr = post0[$1] > 0 ? sprintf("%.2f", $5 / post0[$1]) : "-"
      lr = p99_0[$1] > 0 ? sprintf("%.2f", $16 / p99_0[$1]) : "-"
      printf "| %s | %d | %d | %s | %s | %s | %s | %d | %d | %d | %s / %s | %s | %s |\n",
        $1, $2, $5, pr, $7, $16, lr, $14, $8 + $17, $9 + $18, $11, $20, $3, $4
    }' "$RESULTS"
  echo
  echo "\"vs empty\": the figure divided by the same backend's figure at the first size of the run."
  echo "List pages start at a random id (after=0..plants-100), so they reach the whole table."
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/growth-latest.md"
log "written to bench/results/growth-latest.md"
