#!/usr/bin/env bash
# bench/batch.sh: how fast plantstore creates plants in batches
# (POST /plants/batch), side by side in one run with:
#   - single creates: POST /plants at c=64 (post.lua, as run.sh's "POST c=64");
#   - SQLite itself: internal/bench/sqliterows, rows of a plain table keyed
#     like plants in transactions of BATCH rows, WAL with synchronous=FULL,
#     pinned as the server is (the physical reference);
#   - plants import of IMPORT_ROWS plants (a JSON lines file) against a
#     fresh server, timed whole.
# Each on a fresh database, plantstore pinned to SERVER_CPU with
# --durability full (every answered batch fsynced) and --rate-limit 0,
# batches of BATCH plants at c=CONNS (batch.lua).
#
#   bench/batch.sh                                    # SQLite and PostgreSQL: ~2 min
#   BACKENDS=sqlite IMPORT_ROWS=100000 bench/batch.sh  # a smoke run
#
# Environment: BACKENDS (default "sqlite postgres"), BATCH (default 1000),
# CONNS (default 4), IMPORT_ROWS (default 1000000; 0: no import),
# DURATION (wrk -d, default 10s), and those of lib.sh (SERVER_CPU, WRK_CPU,
# WRK_THREADS, PG_CPUS, KEEP_TMP).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${BACKENDS:=sqlite postgres}"
: "${BATCH:=1000}"
: "${CONNS:=4}"
: "${IMPORT_ROWS:=1000000}"
WITH_POSTGRES=0
if [[ " $BACKENDS " == *" postgres "* ]]; then WITH_POSTGRES=1; fi

COMMAND="$(for v in BACKENDS BATCH CONNS IMPORT_ROWS DURATION SERVER_CPU WRK_CPU PG_CPUS; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/batch.sh"

ensure_tools
bench_init
build
(cd "$REPO_DIR" && CGO_ENABLED=1 go build -o "$TMP/sqliterows" ./internal/bench/sqliterows)
TOKEN=$(random_token)
RESULTS=$TMP/batch.tsv
: >"$RESULTS"

# row KIND BACKEND CONNS LINE: one result (run_wrk's fields).
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; }

for backend in $BACKENDS; do
  log "== $backend"
  m=0
  case $backend in
  sqlite) mkdir -p "$TMP/sqlite" ;;
  postgres) pg_start; m=1 ;;
  *) die "unknown backend $backend (known: sqlite postgres)" ;;
  esac
  n=0
  fresh() {
    n=$((n + 1))
    case $backend in
    sqlite) echo "$TMP/sqlite/batch-$n.db" ;;
    postgres)
      "$PG_BIN/psql" -X -q "$PG_URL" -c "CREATE DATABASE batch_$n" >/dev/null
      echo "${PG_URL/\/postgres\?/\/batch_$n?}"
      ;;
    esac
  }
  start_plantstore "$(fresh)" full
  log "  $backend: POST c=64"
  row single "$backend" 64 "$(MEASURE_PG=$m run_wrk "$backend-single" 64 post.lua BENCH_ID_BASE=1000000000000)"
  stop_server
  start_plantstore "$(fresh)" full
  log "  $backend: POST /plants/batch ($BATCH plants) c=$CONNS"
  row batch "$backend" "$CONNS" "$(MEASURE_PG=$m run_wrk "$backend-batch" "$CONNS" batch.lua BENCH_ID_BASE=1000000000000 BENCH_BATCH="$BATCH")"
  stop_server
  if [ "$backend" = sqlite ]; then
    log "  sqlite: SQLite itself, transactions of $BATCH rows"
    raw=$(taskset -c "$SERVER_CPU" "$TMP/sqliterows" -rows 500000 -batch "$BATCH" -dir "$TMP/sqlite")
    printf 'raw\tsqlite\t1\t%s\n' "$raw" >>"$RESULTS"
    if [ "$IMPORT_ROWS" -gt 0 ]; then
      awk -v n="$IMPORT_ROWS" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"id\":%d,\"name\":\"plant %d\",\"tag\":\"bench\"}\n", i, i }' >"$TMP/import.jsonl"
      start_plantstore "$(fresh)" full
      log "  sqlite: plants import of $IMPORT_ROWS plants"
      t0=$(date +%s.%N)
      out=$(PLANTSTORE_SERVER=$SERVER_URL PLANTSTORE_TOKEN=$TOKEN taskset -c "$WRK_CPU" "$TMP/plantstore" plants import "$TMP/import.jsonl" 2>/dev/null) ||
        die "plants import failed: $out"
      t1=$(date +%s.%N)
      printf 'import\tsqlite\t4\t%s\t%s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" "$(tail -1 <<<"$out")" >>"$RESULTS"
      stop_server
    fi
  fi
  if [ "$backend" = postgres ]; then pg_stop; fi
done

table() {
  echo "# plantstore: batch creates"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per row); plantstore --durability full --rate-limit 0, a fresh database a row"
  machine_info
  echo
  echo "| backend | what | c | requests/s | plants/s | p50 ms | p99 ms | non-2xx | socket errors | server CPU µs/plant | PostgreSQL CPU µs/plant |"
  echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  # Fields: 1 kind, 2 backend, 3 conns, then run_wrk's 4..12 (rps p50 p99
  # non2xx sock cpu rss dbcpu requests).
  awk -F'\t' -v batch="$BATCH" '
    $1 == "single" || $1 == "batch" {
      per = $1 == "batch" ? batch : 1
      what = $1 == "batch" ? "POST /plants/batch (" batch ")" : "POST /plants"
      db = $11 == "-" ? "-" : sprintf("%.1f", $11 * 1000 / per)
      printf "| %s | %s | %d | %.1f | %.0f | %s | %s | %d | %d | %.1f | %s |\n", $2, what, $3, $4, $4 * per, $5, $6, $7, $8, $9 * 1000 / per, db
      rate[$2 "/" $1] = $4 * per
    }
    $1 == "raw" { split($4, kv, " "); for (i in kv) { split(kv[i], p, "="); if (p[1] == "rows_per_s") raw = p[2] } }
    $1 == "import" { imp = $4; impline = $5 }
    END {
      print ""
      for (k in rate) if (k ~ /\/batch$/) {
        b = substr(k, 1, length(k) - 6)
        printf "- %s: batches give %.0f plants/s, %.1fx the single creates'\'' %.0f/s", b, rate[k], rate[k] / rate[b "/single"], rate[b "/single"]
        if (b == "sqlite" && raw > 0) printf "; SQLite itself %.0f rows/s in transactions of %d (plantstore reaches %.0f%% of it)", raw, batch, 100 * rate[k] / raw
        print ""
      }
      if (imp != "") printf "- plants import of the file: %s s (%s)\n", imp, impline
    }' "$RESULTS"
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/batch-latest.md"
log "written to bench/results/batch-latest.md"
