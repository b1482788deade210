#!/usr/bin/env bash
# bench/lone.sh: what a lone client's create costs on SQLite, against the
# storage-less baseline and one fsync of this disk, all in one run:
#
#   bench/lone.sh                 # this tree
#   BASE=c3d28f0 bench/lone.sh    # and a commit's build, alternated with it
#
# For each build it starts a fresh server per scenario and runs wrk for
# DURATION (default 8s): POST /plants at c=1 with --durability full and
# relaxed, and at c=64 with full durability; the baseline's POST c=1 too.
# ROUNDS rounds (default 3) alternate the builds, so that a drift of the
# machine touches both. Each figure is the median of its rounds. The table
# gives the c=1 targets of docs/performance.md next to what was measured:
#   full:    p50 <= baseline p50 + fsync p50 + 0.05 ms
#   relaxed: p50 <= baseline p50 + 0.10 ms
# and the server's CPU per create, whose full - relaxed difference at c=1
# is what waiting for the fsync costs the server (zero when it waits
# without spinning; at least what issuing one costs, the fsync tool's
# cpu_us). The fsync figures are internal/bench/fsync's (one 4 KiB append +
# fdatasync in the work directory), measured before the rounds.
# Each round also runs internal/bench/sqliterows -batch 1 on the server's
# CPU (full and NORMAL sync): SQLite itself committing one row of a plain
# table per transaction, the physical reference of a lone create.
# Environment as run.sh: SERVER_CPU, WRK_CPU, WRK_THREADS, KEEP_TMP.
# Results: bench/results/lone-latest.md.
set -euo pipefail
: "${DURATION:=8s}"
source "$(dirname "$0")/lib.sh"
: "${ROUNDS:=3}"
: "${BASE:=}"

COMMAND="$(for v in DURATION ROUNDS BASE SERVER_CPU WRK_CPU; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/lone.sh"

ensure_tools
bench_init
build
(cd "$REPO_DIR" && CGO_ENABLED=1 go build -o "$TMP/sqliterows" ./internal/bench/sqliterows)
TOKEN=$(random_token)
builds=(this)
if [ -n "$BASE" ]; then
  log "building $BASE"
  git -C "$REPO_DIR" worktree add -q --detach "$TMP/base-src" "$BASE"
  (cd "$TMP/base-src" && CGO_ENABLED=1 go build -pgo="${PGO:-auto}" -o "$TMP/plantstore-base" ./cmd/plantstore)
  git -C "$REPO_DIR" worktree remove --force "$TMP/base-src"
  builds=(base this)
fi
FSYNC_LINE=$("$TMP/fsync" -dir "$TMP")
field() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' <<<"$FSYNC_LINE"; }
FSYNC_P50=$(field p50_ms)
FSYNC_CPU=$(field cpu_us)
[ -n "$FSYNC_P50" ] || die "no fsync p50 in: $FSYNC_LINE"
RESULTS=$TMP/results.tsv
: >"$RESULTS"

binary() { if [ "$1" = base ]; then echo "$TMP/plantstore-base"; else echo "$TMP/plantstore"; fi; }

ids=0
# one BUILD NAME DURABILITY CONNS: a fresh server, one wrk run, one results row
#   build name round rps p50 p99 cpu_us_per_req
one() {
  local build=$1 name=$2 durability=$3 conns=$4 line
  ids=$((ids + 1))
  PLANTSTORE_BIN=$(binary "$build") start_plantstore "$TMP/$build-$name-$round.db" "$durability"
  post_plants "$SERVER_URL" 1 20
  line=$(run_wrk "$build-$name-$round" "$conns" post.lua BENCH_ID_BASE=$((ids * 1000000000000)))
  stop_server
  rm -f "$TMP/$build-$name-$round.db"*
  awk -v b="$build" -v n="$name" -v r="$round" -v line="$line" 'BEGIN {
    split(line, w, "\t"); printf "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n", b, n, r, w[1], w[2], w[3], w[6] * 1000 }' >>"$RESULTS"
}

for ((round = 1; round <= ROUNDS; round++)); do
  log "== round $round of $ROUNDS"
  start_baseline
  line=$(run_wrk "baseline-$round" 1 post.lua BENCH_ID_BASE=1000000000000)
  stop_server
  awk -v r="$round" -v line="$line" 'BEGIN {
    split(line, w, "\t"); printf "baseline\tpost1\t%s\t%s\t%s\t%s\t%.1f\n", r, w[1], w[2], w[3], w[6] * 1000 }' >>"$RESULTS"
  for sync in FULL NORMAL; do
    mkdir -p "$TMP/rows"
    taskset -c "$SERVER_CPU" "$TMP/sqliterows" -rows 3000 -batch 1 -sync "$sync" -dir "$TMP/rows" |
      awk -v r="$round" -v s="$sync" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "sqlite-itself\tcommit1-%s\t%s\t%s\t%s\t-\t%s\n", s == "FULL" ? "full" : "relaxed", r, v["rows_per_s"], v["txn_p50_ms"], v["txn_cpu_us"] }' >>"$RESULTS"
  done
  order=("${builds[@]}")
  if ((round % 2 == 0)); then order=($(printf '%s\n' "${builds[@]}" | tac)); fi
  for b in "${order[@]}"; do
    log "  $b"
    one "$b" post1-full full 1
    one "$b" post1-relaxed relaxed 1
    one "$b" post64-full full 64
  done
done

table() {
  echo "# a lone client's create (bench/lone.sh)"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per run, $ROUNDS rounds, medians)"
  machine_info
  echo "- disk: one 4 KiB append + fdatasync in the work directory (internal/bench/fsync): p50 $FSYNC_P50 ms, $FSYNC_CPU us of CPU each"
  echo
  awk -F'\t' -v fsync="$FSYNC_P50" -v base="$BASE" '
    function median(key,   n, i, j, t, a) {
      n = split(vals[key], a, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { for (f = 4; f <= 7; f++) vals[$1 SUBSEP $2 SUBSEP f] = vals[$1 SUBSEP $2 SUBSEP f] " " $f; seen[$1] = 1 }
    END {
      ceil = median("baseline" SUBSEP "post1" SUBSEP 5)
      printf "baseline POST c=1: p50 %.3f ms, %d req/s, server CPU %.1f us/req\n\n", ceil, median("baseline" SUBSEP "post1" SUBSEP 4), median("baseline" SUBSEP "post1" SUBSEP 7)
      print "| build | scenario | req/s | p50 ms | target p50 ms | p99 ms | server CPU us/create |"
      print "|---|---|--:|--:|--:|--:|--:|"
      for (k = 1; k <= 2; k++) {
        s = k == 1 ? "commit1-full" : "commit1-relaxed"
        printf "| SQLite itself (sqliterows -batch 1) | %s | %d | %.3f | | - | %.1f |\n", s, median("sqlite-itself" SUBSEP s SUBSEP 4), median("sqlite-itself" SUBSEP s SUBSEP 5), median("sqlite-itself" SUBSEP s SUBSEP 7)
      }
      nb = split(base != "" ? "base this" : "this", bs, " ")
      for (i = 1; i <= nb; i++) {
        b = bs[i]; label = b == "base" ? base : "this tree"
        split("post1-full post1-relaxed post64-full", ss, " ")
        for (k = 1; k <= 3; k++) {
          s = ss[k]
          target = s == "post1-full" ? sprintf("%.3f", ceil + fsync + 0.05) : s == "post1-relaxed" ? sprintf("%.3f", ceil + 0.10) : "-"
          printf "| %s | %s | %d | %.3f | %s | %.2f | %.1f |\n", label, s, median(b SUBSEP s SUBSEP 4), median(b SUBSEP s SUBSEP 5), target, median(b SUBSEP s SUBSEP 6), median(b SUBSEP s SUBSEP 7)
        }
        printf "| %s | waiting for the fsync: full - relaxed CPU at c=1 | | | | | %.1f |\n", label, median(b SUBSEP "post1-full" SUBSEP 7) - median(b SUBSEP "post1-relaxed" SUBSEP 7)
      }
    }' "$RESULTS"
  echo
  echo "Rounds (build, scenario, round, req/s, p50 ms, p99 ms, server CPU us/req):"
  echo
  echo '```'
  cat "$RESULTS"
  echo '```'
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/lone-latest.md"
log "written to bench/results/lone-latest.md"
