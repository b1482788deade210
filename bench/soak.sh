#!/usr/bin/env bash
# bench/soak.sh: a bounded soak: mixed load (creates, gets, lists; wrk with
# bench/mixed.lua at c=64) against `plantstore serve` on a fresh SQLite file,
# sampling the server every 10 s: RSS (VmRSS), goroutines (go_goroutines from
# /metrics), open file descriptors (/proc/PID/fd), requests answered and
# non-2xx answers (plantstore_http_requests_total). Prints a table and a
# verdict, and exits 1 when the verdict is not "flat, no errors".
#
#   bench/soak.sh                       # 5 minutes
#   DURATION=90s bench/soak.sh          # a smoke run
#
# Environment: DURATION (wrk -d, default 5m), CONNS (64), INTERVAL (sampling
# period in s, 10), WARMUP (s excluded before the first window; default 60,
# or a third of DURATION when that is shorter), WINDOW (s of the first and
# last windows compared; default 60, or a third of DURATION), TOLERANCE (%
# the last window's max may exceed the first's, 20), SERVER_CPU (0),
# WRK_CPU (1), WRK_THREADS (1), WRK_TIMEOUT (5s), DURABILITY (full),
# KEEP_TMP=1 keeps the work directory. Everything listens on 127.0.0.1.
#
# The verdict: for RSS, goroutines and open fds, the maximum over the last
# WINDOW seconds must be at most TOLERANCE % above the maximum over the
# first WINDOW seconds after WARMUP (a leak grows past it; a steady state
# does not); and wrk must report no non-2xx answer and no socket error, and
# the server's own counter no 5xx and no other non-2xx answer.
set -euo pipefail
: "${DURATION:=5m}"
WITH_POSTGRES=0
source "$(dirname "$0")/lib.sh"

: "${CONNS:=64}"
: "${INTERVAL:=10}"
: "${TOLERANCE:=20}"
total=$(duration_secs "$DURATION")
third=$((total / 3))
: "${WARMUP:=$((third < 60 ? third : 60))}"
: "${WINDOW:=$((third < 60 ? third : 60))}"
((WINDOW >= INTERVAL)) || die "DURATION $DURATION is too short for INTERVAL=${INTERVAL}s windows (need >= $((3 * INTERVAL))s)"

COMMAND="$(for v in DURATION CONNS INTERVAL WARMUP WINDOW TOLERANCE SERVER_CPU WRK_CPU WRK_THREADS WRK_TIMEOUT DURABILITY; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/soak.sh"

ensure_tools
bench_init
log "building plantstore"
(cd "$REPO_DIR" && CGO_ENABLED=1 go build -o "$TMP/plantstore" ./cmd/plantstore)
TOKEN=$(random_token)
mkdir -p "$TMP/sqlite"
start_plantstore "$TMP/sqlite/plantstore.db"
log "plantstore PID $SERVER_PID at $SERVER_URL; seeding plants 1..100"
post_plants "$SERVER_URL" 1 100

# metrics prints "goroutines requests non2xx fivexx" from /metrics.
metrics() {
  curl -s -m 5 "$METRICS_URL" | awk '
    /^go_goroutines / { g = $2 }
    /^plantstore_http_requests_total\{/ {
      n = $NF + 0; req += n
      if (match($0, /code="[0-9]+"/)) {
        c = substr($0, RSTART + 6, 3)
        if (c !~ /^2/) bad += n
        if (c ~ /^5/) five += n
      }
    }
    END { printf "%d %d %d %d\n", g, req, bad, five }'
}

# The seeding's own requests are not the load's: count from here.
read -r _ req0 bad0 five0 <<<"$(metrics)"
SAMPLES=$TMP/samples.tsv
: >"$SAMPLES"

threads=$WRK_THREADS
if [ "$CONNS" -lt "$threads" ]; then threads=$CONNS; fi
log "soak: wrk -t$threads -c$CONNS -d$DURATION -s mixed.lua on CPU $WRK_CPU; server on CPU $SERVER_CPU; sampling every ${INTERVAL}s"
env BENCH_TOKEN="$TOKEN" BENCH_ID_BASE=1000000000000 BENCH_SEEDED=100 \
  timeout $((total + 60)) taskset -c "$WRK_CPU" wrk -t"$threads" -c"$CONNS" -d"$DURATION" \
  --timeout "$WRK_TIMEOUT" --latency -s "$BENCH_DIR/mixed.lua" "$SERVER_URL" >"$TMP/wrk.out" 2>&1 &
WRK_PID=$!
PIDS+=("$WRK_PID")

start=$(date +%s)
prev_req=$req0
printf '%6s %8s %10s %7s %8s %9s %8s\n' "t (s)" "RSS MiB" "goroutines" "fds" "req/s" "non-2xx" "5xx" >&2
# Samples at INTERVAL, 2*INTERVAL, ... while wrk runs (the last one before
# its end, so it counts what the server answered under load only).
for ((t = INTERVAL; t < total; t += INTERVAL)); do
  # Sleep to the next multiple of INTERVAL since the start (no drift).
  now=$(date +%s)
  if ((start + t > now)); then sleep $((start + t - now)); fi
  kill -0 "$SERVER_PID" 2>/dev/null || die "plantstore (PID $SERVER_PID) died during the soak"
  rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status")
  fds=$(ls "/proc/$SERVER_PID/fd" | wc -l)
  read -r gor req bad five <<<"$(metrics)"
  rps=$(((req - prev_req) / INTERVAL))
  prev_req=$req
  printf '%d\t%s\t%d\t%d\t%d\t%d\t%d\n' "$t" "$rss" "$gor" "$fds" "$rps" $((bad - bad0)) $((five - five0)) >>"$SAMPLES"
  printf '%6d %8s %10d %7d %8d %9d %8d\n' "$t" "$rss" "$gor" "$fds" "$rps" $((bad - bad0)) $((five - five0)) >&2
done

wait "$WRK_PID" || { cat "$TMP/wrk.out" >&2; die "wrk failed"; }
line=$(grep '^BENCH ' "$TMP/wrk.out") || { cat "$TMP/wrk.out" >&2; die "no BENCH line from wrk"; }
# When wrk stops it closes its connections with requests in flight; the
# server answers such a request 500 (internal/http/error.go: the client went away,
# nobody reads it) and counts it, without an "internal error" log line.
# Those are reported apart; a real internal or storage error is logged.
read -r _ req_end bad_end five_end <<<"$(metrics)"
read -r _ _ bad_load five_load < <(tail -1 "$SAMPLES" | awk -F'\t' '{ print 0, 0, $6, $7 }')
logged_errors=$(grep -cE '"msg":"(internal error|storage error)"' "$TMP"/plantstore-*.log || true)

report() {
  echo "# plantstore soak"
  echo
  echo "- command: \`$COMMAND\` (wrk -t$threads -c$CONNS -d$DURATION -s bench/mixed.lua: 20% POST /plants, 50% GET /plants/{id}, 30% GET /plants?limit=20&after=random)"
  machine_info | sed "s/ at c=64/ at c=$CONNS/"
  echo "- sampled every ${INTERVAL}s; warm-up ${WARMUP}s; windows ${WINDOW}s; tolerance ${TOLERANCE}%"
  echo
  echo "| t (s) | RSS MiB | goroutines | open fds | req/s (interval) | non-2xx (cumulative) | 5xx (cumulative) |"
  echo "|--:|--:|--:|--:|--:|--:|--:|"
  awk -F'\t' '{ printf "| %d | %s | %d | %d | %d | %d | %d |\n", $1, $2, $3, $4, $5, $6, $7 }' "$SAMPLES"
  echo
  awk -v line="$line" -v bad="$bad_load" -v five="$five_load" -v served=$((req_end - req0)) \
    -v bad_after=$((bad_end - bad0 - bad_load)) -v five_after=$((five_end - five0 - five_load)) -v logged="$logged_errors" \
    -v warm="$WARMUP" -v win="$WINDOW" -v total="$total" -v tol="$TOLERANCE" -F'\t' '
    { t = $1
      for (i = 2; i <= 4; i++) {
        if (t > warm && t <= warm + win && $i + 0 > first[i]) first[i] = $i + 0
        if (t > total - win && $i + 0 > last[i]) last[i] = $i + 0
      }
    }
    END {
      n = split(line, kv, " ")
      for (i = 2; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] }
      sock = v["connect"] + v["read"] + v["write"] + v["timeout"]
      printf "wrk: %d requests (%d POST, %d GET one, %d GET list), %.0f req/s, p50 %.2f ms, p99 %.2f ms, max %.0f ms; non-2xx %d, socket errors %d (connect %d, read %d, write %d, timeout %d)\n",
        v["requests"], v["posts"], v["gets"], v["lists"], v["rps"], v["p50_us"] / 1000, v["p99_us"] / 1000, v["max_us"] / 1000,
        v["non2xx"], sock, v["connect"], v["read"], v["write"], v["timeout"]
      printf "server: %d requests answered; under load (to the last sample) %d non-2xx, %d 5xx; after wrk closed its connections %d more non-2xx (%d 5xx: requests cut off by the client); %d internal/storage errors logged\n\n", served, bad, five, bad_after, five_after, logged
      ok = 1
      print "| measure | max, first window | max, last window | change | flat |"
      print "|---|--:|--:|--:|---|"
      for (i = 2; i <= 4; i++) {
        lbl = (i == 2) ? "RSS MiB" : (i == 3) ? "goroutines" : "open fds"
        chg = first[i] > 0 ? (last[i] - first[i]) / first[i] * 100 : 0
        flat = last[i] <= first[i] * (1 + tol / 100)
        if (!flat) ok = 0
        printf "| %s | %s | %s | %+.1f%% | %s |\n", lbl, first[i], last[i], chg, flat ? "yes" : "NO"
      }
      errs = v["non2xx"] + sock + bad + five + logged
      printf "\nwindows: first = (%d s, %d s], last = (%d s, %d s]\n", warm, warm + win, total - win, total
      if (ok && errs == 0) print "VERDICT: PASS: memory, goroutines and fds flat; no errors"
      else printf "VERDICT: FAIL:%s%s\n", ok ? "" : " growth past the tolerance;", errs == 0 ? "" : " error responses or socket errors"
    }' "$SAMPLES"
}

mkdir -p "$BENCH_DIR/results"
report | tee "$BENCH_DIR/results/soak-latest.md"
log "written to bench/results/soak-latest.md"
grep -q '^VERDICT: PASS' "$BENCH_DIR/results/soak-latest.md"
