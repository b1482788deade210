#!/usr/bin/env bash
# bench/index-cost.sh: what the plant search index costs creates.
# POST /plants at c=64 (post.lua, as run.sh's "POST c=64") against the
# plantstore of BASE_REV ("today's": the last commit before the search
# index) and against the work tree's, alternating A, B, A, B... (ROUNDS
# rounds), each run on a fresh database of the same kind, pinned as run.sh
# pins. It reports each run, the mean req/s of both, and their ratio
# (index ÷ base), which must be at least 0.85 (MIN_RATIO).
#
#   bench/index-cost.sh                               # SQLite and PostgreSQL, 2 rounds of 10 s: ~2 min
#   DURATION=3s BACKENDS=sqlite bench/index-cost.sh   # a smoke run
#   BASE_REV=HEAD~1 ROUNDS=3 bench/index-cost.sh
#
# Environment: BASE_REV (a commit; default the last one before the search index),
# ROUNDS (default 2), BACKENDS (default "sqlite postgres"), MIN_RATIO
# (default 0.85), DURATION (wrk -d, default 10s), and those of lib.sh
# (SERVER_CPU, WRK_CPU, WRK_THREADS, PG_CPUS, DURABILITY, KEEP_TMP).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${BASE_REV:=2cfdbcc992ae28b138d5909d6014019bd22b2514}"
: "${ROUNDS:=2}"
: "${BACKENDS:=sqlite postgres}"
: "${MIN_RATIO:=0.85}"
WITH_POSTGRES=0
if [[ " $BACKENDS " == *" postgres "* ]]; then WITH_POSTGRES=1; fi

COMMAND="$(for v in BASE_REV ROUNDS BACKENDS DURATION SERVER_CPU WRK_CPU WRK_THREADS PG_CPUS DURABILITY; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/index-cost.sh"

ensure_tools
bench_init
BASE_COMMIT=$(cd "$REPO_DIR" && git rev-parse --verify "$BASE_REV^{commit}") || die "no commit $BASE_REV"
build
log "building plantstore at $BASE_COMMIT"
mkdir -p "$TMP/base-src"
(cd "$REPO_DIR" && git archive "$BASE_COMMIT") | tar -x -C "$TMP/base-src"
(cd "$TMP/base-src" && CGO_ENABLED=1 go build -pgo="${PGO:-auto}" -o "$TMP/plantstore-base" ./cmd/plantstore)
TOKEN=$(random_token)
RESULTS=$TMP/index-cost.tsv
: >"$RESULTS"

run=0
for backend in $BACKENDS; do
  log "== $backend"
  case $backend in
  sqlite) mkdir -p "$TMP/sqlite" ;;
  postgres) pg_start ;;
  *) die "unknown backend $backend (known: sqlite postgres)" ;;
  esac
  m=0
  if [ "$backend" = postgres ]; then m=1; fi
  for round in $(seq "$ROUNDS"); do
    for side in base index; do
      run=$((run + 1))
      case $backend in
      sqlite) db=$TMP/sqlite/cost-$run.db ;;
      postgres)
        "$PG_BIN/psql" -X -q "$PG_URL" -c "CREATE DATABASE cost_$run" >/dev/null
        db=${PG_URL/\/postgres\?/\/cost_$run?}
        ;;
      esac
      bin=$TMP/plantstore
      if [ "$side" = base ]; then bin=$TMP/plantstore-base; fi
      PLANTSTORE_BIN=$bin start_plantstore "$db"
      log "  $backend round $round: $side: POST c=64"
      out=$(MEASURE_PG=$m run_wrk "$backend-$run-$side" 64 post.lua BENCH_ID_BASE=1000000000000)
      stop_server
      case $backend in
      sqlite) rm -f "$db" "$db"-* ;;
      postgres) "$PG_BIN/psql" -X -q "$PG_URL" -c "DROP DATABASE cost_$run" >/dev/null ;;
      esac
      printf '%s\t%s\t%s\t%s\n' "$backend" "$round" "$side" "$out" >>"$RESULTS"
    done
  done
  if [ "$backend" = postgres ]; then pg_stop; fi
done

table() {
  echo "# plantstore: what the search index costs creates"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per run)"
  echo "- base: plantstore at $(cd "$REPO_DIR" && git log -1 --format='%h (%s)' "$BASE_COMMIT"); index: the work tree"
  machine_info
  echo
  echo "| backend | round | plantstore | POST c=64 req/s | p50 ms | p99 ms | non-2xx | socket errors | server CPU s/1k req | PostgreSQL CPU s/1k req |"
  echo "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|"
  # Fields: 1 backend, 2 round, 3 side, then run_wrk's 4..12 (rps p50 p99
  # non2xx sock cpu rss dbcpu requests).
  awk -F'\t' '{ printf "| %s | %d | %s | %d | %s | %s | %d | %d | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $11 }' "$RESULTS"
  echo
  echo "| backend | base req/s (mean) | index req/s (mean) | ratio | at least $MIN_RATIO |"
  echo "|---|--:|--:|--:|---|"
  awk -F'\t' -v min="$MIN_RATIO" '
    !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
    { sum[$1 "/" $3] += $4; cnt[$1 "/" $3]++; bad[$1] += $7 + $8 }
    END {
      for (i = 1; i <= n; i++) {
        b = order[i]
        base = sum[b "/base"] / cnt[b "/base"]; idx = sum[b "/index"] / cnt[b "/index"]
        r = base > 0 ? idx / base : 0
        verdict = bad[b] > 0 ? "invalid (errors)" : r >= min ? "yes" : "**no**"
        printf "| %s | %.0f | %.0f | %.2f | %s |\n", b, base, idx, r, verdict
      }
    }' "$RESULTS"
  echo
  echo "Runs alternate base, index, base, index... each on a fresh database; the ratio is the index's"
  echo "mean req/s ÷ the base's. Every run creates plants with post.lua (\"plant N\", tag \"bench\")."
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/index-cost-latest.md"
log "written to bench/results/index-cost-latest.md"
