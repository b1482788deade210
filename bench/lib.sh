# Shared by bench/run.sh and bench/growth.sh; source it, do not run it.
# Everything listens on 127.0.0.1 only; everything started is stopped by the
# EXIT trap that bench_init installs.

: "${DURATION:=10s}"     # one wrk run
: "${SERVER_CPU:=0}"     # CPU the server under test is pinned to
: "${WRK_CPU:=1}"        # CPU wrk is pinned to
: "${WRK_THREADS:=1}"    # wrk threads at c=64 (c=1 always uses one)
: "${WRK_TIMEOUT:=5s}"   # a request slower than this counts as a timeout error
: "${PG_CPUS:=}"         # CPUs for PostgreSQL (empty: not pinned, it shares both)

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)

log() { printf '%s\n' "$*" >&2; }
die() { log "$(basename "$0"): $*"; exit 1; }

# as_root runs a command as root (directly, or through sudo).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then
    as_root apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >&2
}

# ensure_tools installs what a fresh Debian machine lacks.
ensure_tools() {
  local need=()
  command -v wrk >/dev/null || need+=(wrk)
  command -v curl >/dev/null || need+=(curl)
  command -v taskset >/dev/null || need+=(util-linux)
  command -v gcc >/dev/null || need+=(gcc libc6-dev)
  if [ "${WITH_POSTGRES:-1}" = 1 ] && ! find_pg_bin >/dev/null; then need+=(postgresql); fi
  if ((${#need[@]})); then
    log "installing ${need[*]}"
    apt_install "${need[@]}"
  fi
  command -v go >/dev/null || die "go is not installed (https://go.dev/dl/)"
  if [ "$(nproc)" -lt 2 ]; then
    log "warning: one CPU only: server and wrk share it"
    SERVER_CPU=0 WRK_CPU=0
  fi
}

# find_pg_bin prints the directory of the newest initdb/pg_ctl.
find_pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$d" ] && command -v initdb >/dev/null; then d=$(dirname "$(readlink -f "$(command -v initdb)")"); fi
  [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] || return 1
  echo "$d"
}

# bench_init makes the work directory and the cleanup trap.
bench_init() {
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/plantstore-bench.XXXXXX")
  chmod 711 "$TMP" # PostgreSQL's user must reach its directory inside
  PIDS=()
  PG_DATA=
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

bench_cleanup() {
  local rc=$?
  set +e
  local pid
  for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
  [ -n "$PG_DATA" ] && pg_stop
  if [ -n "${KEEP_TMP:-}" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
  exit "$rc"
}

# stop_pid ends a process this script started: TERM, then KILL after 10 s.
stop_pid() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

build() {
  log "building plantstore, baseline, preload and fsync"
  (cd "$REPO_DIR" && CGO_ENABLED=1 go build -pgo="${PGO:-auto}" -o "$TMP/plantstore" ./cmd/plantstore &&
    go build -o "$TMP/baseline" ./internal/bench/baseline &&
    CGO_ENABLED=1 go build -o "$TMP/preload" ./internal/bench/preload &&
    go build -o "$TMP/fsync" ./internal/bench/fsync)
}

# free_port prints a TCP port nothing listens on at 127.0.0.1.
free_port() {
  # Below the kernel's ephemeral range: a port in it may be the local end
  # of a client connection (a bench's thousand streams leave as many in
  # TIME_WAIT), which a listener cannot bind.
  local p i lo=32768
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  for i in $(seq 50); do
    p=$((10000 + RANDOM % (lo - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  die "no free port found"
}

# wait_http waits (up to 30 s) until URL answers 200, or the process PID dies.
wait_http() {
  local url=$1 pid=$2 i
  for i in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" || true)" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}

# random_token prints a 64-hex-digit secret (valid as a plantstore
# --bootstrap-token and as the baseline's --token).
random_token() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

# ---- PostgreSQL: a throwaway cluster, fsync on ---------------------------

pg_run() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_start starts a cluster in $TMP/pg on a free port and sets PG_URL (its
# "postgres" database: the cluster is thrown away).
pg_start() {
  local bin port
  bin=$(find_pg_bin) || die "PostgreSQL's initdb/pg_ctl not found (apt-get install postgresql)"
  PG_BIN=$bin
  local dir=$TMP/pg
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
  PG_DATA=$dir/data
  port=$(free_port)
  log "starting PostgreSQL ($bin) on 127.0.0.1:$port"
  pg_run timeout 120 "$bin/initdb" -D "$PG_DATA" -A trust -U postgres -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  cat >>"$PG_DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
shared_buffers = 256MB
max_wal_size = 4GB
EOF
  local pgctl=("$bin/pg_ctl")
  if [ -n "$PG_CPUS" ]; then pgctl=(taskset -c "$PG_CPUS" "$bin/pg_ctl"); fi
  pg_run timeout 120 "${pgctl[@]}" -D "$PG_DATA" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { tail -20 "$dir/server.log" >&2; die "pg_ctl start failed"; }
  PG_PORT=$port
  PG_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

pg_stop() {
  [ -n "$PG_DATA" ] && [ -d "$PG_DATA" ] || return 0
  pg_run timeout 120 "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null 2>&1 ||
    pg_run timeout 60 "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1
  PG_DATA=
}

# pg_postmaster prints the cluster's postmaster PID.
pg_postmaster() { head -1 "$PG_DATA/postmaster.pid"; }

# ---- servers under test ---------------------------------------------------

# start_plantstore DB [DURABILITY]: serve plantstore on DB pinned to
# SERVER_CPU, with --durability DURABILITY (default: $DURABILITY, else full)
# (the binary: $PLANTSTORE_BIN, default $TMP/plantstore);
# sets SERVER_PID, SERVER_URL, METRICS_URL (its /metrics, a listener of its
# own), SERVER_KIND.
start_plantstore() {
  local db=$1 durability=${2:-${DURABILITY:-full}} port mport
  port=$(free_port)
  mport=$(free_port)
  local create=()
  [[ $db == postgres://* ]] || create=(--create-db) # a fresh SQLite file (issue 12: never implicit)
  taskset -c "$SERVER_CPU" "${PLANTSTORE_BIN:-$TMP/plantstore}" serve --addr "127.0.0.1:$port" --metrics-addr "127.0.0.1:$mport" \
    --db "$db" "${create[@]}" \
    --rate-limit 0 --bootstrap-token "$TOKEN" --durability "$durability" ${SERVE_ARGS:-} \
    >>"$TMP/plantstore-$port.log" 2>&1 &
  SERVER_PID=$!
  SERVER_KIND=plantstore
  PIDS+=("$SERVER_PID")
  SERVER_URL="http://127.0.0.1:$port"
  METRICS_URL="http://127.0.0.1:$mport/metrics"
  wait_http "$SERVER_URL/healthz" "$SERVER_PID" ||
    { tail -20 "$TMP/plantstore-$port.log" >&2; die "plantstore did not start"; }
}

start_baseline() {
  local port
  port=$(free_port)
  taskset -c "$SERVER_CPU" "$TMP/baseline" --addr "127.0.0.1:$port" --token "$TOKEN" \
    >>"$TMP/baseline.log" 2>&1 &
  SERVER_PID=$!
  SERVER_KIND=baseline
  PIDS+=("$SERVER_PID")
  SERVER_URL="http://127.0.0.1:$port"
  wait_http "$SERVER_URL/healthz" "$SERVER_PID" ||
    { tail -20 "$TMP/baseline.log" >&2; die "baseline did not start"; }
}

stop_server() {
  stop_pid "$SERVER_PID"
  local keep=() p
  for p in "${PIDS[@]}"; do if [ "$p" != "$SERVER_PID" ]; then keep+=("$p"); fi; done
  PIDS=("${keep[@]}")
}

# post_plants URL FROM TO: create plants FROM..TO with curl (a few at a time).
post_plants() {
  local url=$1 from=$2 to=$3 id code
  for ((id = from; id <= to; id++)); do
    code=$(curl -s -o /dev/null -m 10 -w '%{http_code}' -X POST "$url/plants" \
      -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      -d "{\"id\":$id,\"name\":\"plant $id\",\"tag\":\"bench\"}")
    [ "$code" = 200 ] || die "seeding plant $id at $url: HTTP $code"
  done
}

# ---- measurement -----------------------------------------------------------

CLK_TCK=$(getconf CLK_TCK)

# cpu_ticks PID [children]: utime+stime of PID (with "children", plus the
# reaped children's cutime+cstime), in clock ticks.
cpu_ticks() {
  local stat rest f
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  rest=${stat##*) } # fields from 3 (state) on; comm may hold spaces
  read -ra f <<<"$rest"
  if [ "${2:-}" = children ]; then
    echo $((f[11] + f[12] + f[13] + f[14]))
  else
    echo $((f[11] + f[12]))
  fi
}

# pg_cpu_ticks: the cluster's CPU: every live child of the postmaster
# (backends, walwriter, checkpointer...), then the postmaster itself with its
# reaped children. Children are read first so that one exiting in between
# (an autovacuum worker) is found in the postmaster's cutime, not lost.
pg_cpu_ticks() {
  local pm total=0 c kids
  pm=$(pg_postmaster)
  kids=$(cat "/proc/$pm/task/$pm/children" 2>/dev/null) ||
    kids=$(awk -v pm="$pm" '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); if (f[2] == pm) { split(FILENAME, p, "/"); print p[3] } }' /proc/[0-9]*/stat 2>/dev/null)
  for c in $kids; do
    total=$((total + $(cpu_ticks "$c")))
  done
  echo $((total + $(cpu_ticks "$pm" children)))
}

# reset_peak_rss PID: start a new VmHWM window (Linux >= 4.0; ignored elsewhere).
reset_peak_rss() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null || true; }

# peak_rss_mib PID
peak_rss_mib() {
  awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "?"
}

# run_wrk NAME CONNS SCRIPT [VAR=VALUE...]: run wrk pinned to WRK_CPU against
# SERVER_URL and print one tab-separated line:
#   rps p50_ms p99_ms non2xx sockerr cpu_s_per_1k rss_mib db_cpu_s_per_1k requests
# The variables are passed to the Lua script's environment.
run_wrk() {
  local name=$1 conns=$2 script=$3
  shift 3
  local threads=$WRK_THREADS
  if [ "$conns" -lt "$threads" ]; then threads=$conns; fi
  reset_peak_rss "$SERVER_PID"
  local cpu0 db0=0 cpu1 db1=0
  cpu0=$(cpu_ticks "$SERVER_PID")
  if [ "${MEASURE_PG:-}" = 1 ]; then db0=$(pg_cpu_ticks); fi
  local out=$TMP/wrk-$name.out
  if ! env BENCH_TOKEN="$TOKEN" "$@" timeout $(($(duration_secs "$DURATION") + 60)) \
    taskset -c "$WRK_CPU" wrk -t"$threads" -c"$conns" -d"$DURATION" --timeout "$WRK_TIMEOUT" --latency \
    -s "$BENCH_DIR/$script" "$SERVER_URL" >"$out" 2>&1; then
    cat "$out" >&2
    die "wrk failed ($name)"
  fi
  cpu1=$(cpu_ticks "$SERVER_PID")
  if [ "${MEASURE_PG:-}" = 1 ]; then db1=$(pg_cpu_ticks); fi
  local rss
  rss=$(peak_rss_mib "$SERVER_PID")
  local line
  line=$(grep '^BENCH ' "$out") || { cat "$out" >&2; die "no BENCH line from wrk ($name)"; }
  awk -v line="$line" -v cpu=$((cpu1 - cpu0)) -v db=$((db1 - db0)) -v tck="$CLK_TCK" \
    -v rss="$rss" -v pg="${MEASURE_PG:-0}" 'BEGIN {
      n = split(line, kv, " ")
      for (i = 2; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] }
      req = v["requests"] + 0
      sock = v["connect"] + v["read"] + v["write"] + v["timeout"]
      cpu1k = req > 0 ? cpu / tck / req * 1000 : 0
      db1k = pg == 1 && req > 0 ? sprintf("%.3f", db / tck / req * 1000) : "-"
      printf "%.0f\t%.2f\t%.2f\t%d\t%d\t%.3f\t%s\t%s\t%d\n", v["rps"], v["p50_us"] / 1000, v["p99_us"] / 1000,
        v["non2xx"], sock, cpu1k, rss, db1k, req
    }'
}

# server_counters prints the server's cumulative counters, space-separated:
#   mallocs batch_writes_sum batch_writes_count
# mallocs: heap allocations since the process started (plantstore's
# go_memstats_mallocs_total from /metrics (METRICS_URL); the baseline's /debug/mallocs, the
# same sum of runtime/metrics /gc/heap/allocs:objects and
# /gc/heap/tiny/allocs:objects). batch_writes_*: plantstore's group-commit
# histogram plantstore_store_batch_writes. "-" for what the server lacks.
server_counters() {
  local body
  case ${SERVER_KIND:-} in
  plantstore)
    body=$(curl -sf -m 10 "$METRICS_URL") || { echo "- - -"; return; }
    awk '
      $1 == "go_memstats_mallocs_total" { m = $2 }
      $1 == "plantstore_store_batch_writes_sum" { s = $2 }
      $1 == "plantstore_store_batch_writes_count" { c = $2 }
      function num(v) { return v == "" ? "-" : sprintf("%.0f", v) }
      END { print num(m), num(s), num(c) }' <<<"$body"
    ;;
  baseline)
    body=$(curl -sf -m 10 "$SERVER_URL/debug/mallocs") || body=
    if [[ $body =~ ^[0-9]+$ ]]; then echo "$body - -"; else echo "- - -"; fi
    ;;
  *) echo "- - -" ;;
  esac
}

# duration_secs D: seconds in a wrk duration (10s, 2m, 1h; a bare number is seconds).
duration_secs() {
  local d=$1
  case $d in
  *h) echo $((${d%h} * 3600)) ;;
  *m) echo $((${d%m} * 60)) ;;
  *s) echo "${d%s}" ;;
  *) echo "$d" ;;
  esac
}

# machine_info prints the machine and toolchain, Markdown-friendly.
machine_info() {
  local model
  model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  echo "- machine: $(nproc) CPUs, ${model:-unknown CPU}, kernel $(uname -r), $(go version | awk '{ print $3, $4 }')"
  echo "- wrk: $(wrk -v 2>&1 | head -1 | awk '{ print $1, $2 }'); server on CPU $SERVER_CPU, wrk on CPU $WRK_CPU (${WRK_THREADS} thread(s) at c=64); PostgreSQL on CPUs ${PG_CPUS:-any}"
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(cd "$REPO_DIR" && git rev-parse --short HEAD 2>/dev/null || echo unknown)$(cd "$REPO_DIR" && git diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || echo ' (with local changes)')"
}
