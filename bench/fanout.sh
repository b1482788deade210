#!/usr/bin/env bash
# bench/fanout.sh: the event streams under load. OWNERS owners, STREAMS
# streams each (GET /events/stream), while RATE creates a second are made
# for DURATION, round robin over the owners (internal/bench/fanout, on
# WRK_CPU): every stream must receive every event of its owner once, in seq
# order. It reports the latency from a create's request to a stream's
# receipt, the server's CPU per create against a run with no stream open
# (the same creates), and the store's event reads per commit
# (plantstore_event_stream_reads_total over plantstore_store_batch_writes).
# plantstore runs pinned to SERVER_CPU on a fresh SQLite file a run,
# --durability full, --rate-limit 0.
#
#   bench/fanout.sh                                   # 10 owners x 100 streams, 300 creates/s, 30 s
#   OWNERS=2 STREAMS=10 DURATION=5s bench/fanout.sh   # a smoke run
#
# Environment: OWNERS (default 10), STREAMS (default 100), RATE (default
# 300), DURATION (default 30s), and those of lib.sh (SERVER_CPU, WRK_CPU, KEEP_TMP).
set -euo pipefail
: "${DURATION:=30s}"
source "$(dirname "$0")/lib.sh"

: "${OWNERS:=10}"
: "${STREAMS:=100}"
: "${RATE:=300}"
WITH_POSTGRES=0
COMMAND="$(for v in OWNERS STREAMS RATE DURATION SERVER_CPU WRK_CPU; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/fanout.sh"

ensure_tools
bench_init
build
(cd "$REPO_DIR" && go build -o "$TMP/fanout" ./internal/bench/fanout)
TOKEN=$(random_token)
RESULTS=$TMP/fanout.tsv
: >"$RESULTS"

# metric NAME: the sum of a metric's samples (all labels) matching NAME.
metric() {
  curl -sf -m 10 "$METRICS_URL" | awk -v m="$1" 'index($1, m) == 1 { s += $2 } END { printf "%.0f", s }'
}

for streams in 0 "$STREAMS"; do
  db=$TMP/fanout-$streams.db
  SERVE_ARGS="--event-stream-max $((OWNERS * STREAMS + 100))" start_plantstore "$db" full
  tokens=()
  for i in $(seq "$OWNERS"); do
    tokens+=("$("$TMP/plantstore" token create --db "$db" --owner "owner$i" 2>/dev/null)")
  done
  log "== $streams streams an owner, $OWNERS owners, $RATE creates/s for $DURATION"
  cpu0=$(cpu_ticks "$SERVER_PID")
  feed0=$(metric 'plantstore_event_stream_reads_total{reader="feed"}')
  own0=$(metric 'plantstore_event_stream_reads_total{reader="stream"}')
  commits0=$(metric plantstore_store_batch_writes_count)
  out=$(taskset -c "$WRK_CPU" "$TMP/fanout" -url "$SERVER_URL" -tokens "$(IFS=,; echo "${tokens[*]}")" \
    -streams "$streams" -rate "$RATE" -duration "$DURATION")
  cpu1=$(cpu_ticks "$SERVER_PID")
  feed1=$(metric 'plantstore_event_stream_reads_total{reader="feed"}')
  own1=$(metric 'plantstore_event_stream_reads_total{reader="stream"}')
  commits1=$(metric plantstore_store_batch_writes_count)
  stop_server
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$streams" "$((cpu1 - cpu0))" "$((feed1 - feed0))" "$((own1 - own0))" "$((commits1 - commits0))" "$out" >>"$RESULTS"
done

table() {
  echo "# plantstore: event streams under load"
  echo
  echo "- command: \`$COMMAND\`; $OWNERS owners, $RATE creates/s for $DURATION; plantstore --durability full on CPU $SERVER_CPU, the load (internal/bench/fanout) on CPU $WRK_CPU"
  machine_info
  echo
  echo "| streams | creates | events expected | received | lost | twice | out of order | p50 ms | p99 ms | max ms | server CPU µs/create | feed reads/commit | stream reads |"
  echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
  awk -F'\t' -v tck="$CLK_TCK" -v owners="$OWNERS" '
    {
      n = split($6, kv, " "); delete v
      for (i = 2; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] }
      cpu = v["creates"] > 0 ? $2 / tck / v["creates"] * 1e6 : 0
      rpc = $5 > 0 ? $3 / $5 : 0
      printf "| %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %.0f | %.2f | %d |\n", $1 * owners, v["creates"], v["expected"], v["received"], v["lost"], v["twice"], v["gaps"], v["p50_ms"], v["p99_ms"], v["max_ms"], cpu, rpc, $4
      c[NR] = cpu
    }
    END { if (c[1] > 0) printf "\nServer CPU per create with the streams open: %.2fx that with none.\n", c[2] / c[1] }' "$RESULTS"
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/fanout-latest.md"
log "written to bench/results/fanout-latest.md"
