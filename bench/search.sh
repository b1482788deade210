#!/usr/bin/env bash
# bench/search.sh: how fast plantstore finds plants in a large
# table. For each backend and each size in SIZES it preloads the owner's
# plants up to that size (internal/bench/preload: 2-3 words a name from a
# Zipf-distributed vocabulary of 3,000 words, 20 tags, none for every tenth
# plant, created 1 ms apart), starts plantstore and measures with wrk at
# c=16 (CONNS), one row each:
#
#   list          GET /plants?limit=100, today's list: the reference
#   q rare        q=welwitschia: the last word of the vocabulary (~600 plants in 10M)
#   q common      q=monstera: the first (in about a third of the names)
#   q two words   q=monstera deliciosa (ranks 1 and 4: ~2% of the plants)
#   q prefixes    q=mon del: word prefixes, as the console's search box sends them
#   q common by name  q=monstera&sort=name: a common word in another order than id's
#   tag, newest   tag=tropical&sort=-created_at: a filtered and sorted first page
#   by name       sort=name: a sorted first page
#   next page     the pages after those of "q common" and "tag, newest", through
#                 the after cursor of their Link header (fetched with curl)
#   estimated     Prefer: count=estimated, everything and q=monstera
#   exact rare    Prefer: count=exact with q=welwitschia
#   exact all     Prefer: count=exact, everything: at c=1 (EXACT_ALL_CONNS), what
#                 a full count costs
#
# Every page has limit=100 but the count rows, which ask for limit=1: they
# stand for HEAD /plants, which does the same work as GET (the count and the
# page, for its Link) less the body, and which wrk cannot measure (bench/get.lua
# says why). The queries are fixed in internal/bench/preload (vocab.go);
# "preload --words" prints how many of the loaded plants each matches (the
# "matches" column), and the count rows check X-Total-Count against it.
#
#   bench/search.sh                                   # 10M plants, SQLite and PostgreSQL
#   SIZES=100000 DURATION=3s BACKENDS=sqlite bench/search.sh   # a smoke run
#
# Environment: SIZES (ascending; default 10000000), BACKENDS (default
# "sqlite postgres"), DURATION (wrk -d, default 10s), CONNS (default 16),
# EXACT_ALL_CONNS (default 1), PRELOAD_TIMEOUT (seconds per preload step,
# default 3600), and those of lib.sh (SERVER_CPU, WRK_CPU, PG_CPUS,
# DURABILITY, KEEP_TMP).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

: "${SIZES:=10000000}"
: "${BACKENDS:=sqlite postgres}"
: "${CONNS:=16}"
: "${EXACT_ALL_CONNS:=1}"
: "${PRELOAD_TIMEOUT:=3600}"
WITH_POSTGRES=0
if [[ " $BACKENDS " == *" postgres "* ]]; then WITH_POSTGRES=1; fi

COMMAND="$(for v in SIZES BACKENDS DURATION CONNS EXACT_ALL_CONNS SERVER_CPU WRK_CPU PG_CPUS DURABILITY; do
  val=$(printenv "$v" || true)
  [ -n "$val" ] && printf "%s='%s' " "$v" "$val" || true
done)bench/search.sh"

ensure_tools
command -v sqlite3 >/dev/null || apt_install sqlite3 # the SQLite size breakdown (dbstat)
bench_init
build
TOKEN=$(random_token) # registered for owner "admin" by --bootstrap-token
RESULTS=$TMP/search.tsv
SIZES_TSV=$TMP/sizes.tsv
OBJECTS=$TMP/objects.md
: >"$RESULTS"
: >"$SIZES_TSV"
: >"$OBJECTS"

# urlq TEXT: TEXT as a query parameter value (spaces as %20; the queries
# are plain words).
urlq() { printf '%s' "${1// /%20}"; }

# probe PATH [HEADER]: GET PATH once with curl; sets PROBE_CODE, PROBE_LINK
# (the next page's path from the Link header, or "") and PROBE_COUNT
# (X-Total-Count, or "-").
probe() {
  local path=$1 header=${2:-} hdrs args=()
  [ -n "$header" ] && args=(-H "$header")
  hdrs=$(curl -s -o /dev/null -D - -m 600 -H "Authorization: Bearer $TOKEN" "${args[@]}" "$SERVER_URL$path" | tr -d '\r') || true
  PROBE_CODE=$(awk 'NR == 1 { print $2 }' <<<"$hdrs")
  PROBE_LINK=$(sed -nE 's/^[Ll]ink: *<([^>]*)>.*rel="?next"?.*/\1/p' <<<"$hdrs" | head -1)
  PROBE_COUNT=$(awk -F': *' 'tolower($1) == "x-total-count" { print $2 }' <<<"$hdrs")
  PROBE_COUNT=${PROBE_COUNT:--}
}

# measure LABEL TARGET MATCHES CONNS PATH [HEADER]: one table row: probe
# the path, then run wrk on it; appends to RESULTS.
measure() {
  local label=$1 target=$2 matches=$3 conns=$4 path=$5 header=${6:-} out
  probe "$path" "$header"
  if [ "$PROBE_CODE" != 200 ]; then log "  warning: $label: $path answered HTTP ${PROBE_CODE:-none}"; fi
  log "  $backend @ $size: $label (c=$conns): $path${header:+ ($header)}"
  local wrk_timeout=$WRK_TIMEOUT
  if [ "$conns" = 1 ]; then wrk_timeout=120s; fi
  row=$((row + 1))
  out=$(MEASURE_PG=$m WRK_TIMEOUT=$wrk_timeout run_wrk "$backend-$size-$row" "$conns" get.lua \
    "BENCH_PATH=$path" "BENCH_HEADER=$header")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$backend" "$size" "$label" "$target" "$matches" \
    "$PROBE_COUNT" "$conns" "$path" "${header#Prefer: }" "$out" >>"$RESULTS"
}

# next_page LINK MATCHES: the row of the page after the one measured last,
# through the cursor of its Link header.
next_page() {
  if [ -z "$1" ]; then
    log "  warning: no Link to a next page after the last row"
    return
  fi
  measure "  its next page (after)" "= first" "$2" "$CONNS" "$1"
}

# db_size BACKEND DB: MiB of the database with its indexes (SQLite: the file
# and its WAL; PostgreSQL: pg_database_size, WAL excluded).
db_size() {
  case $1 in
  sqlite) du -cm "$2"* | awk 'END { print $1 }' ;;
  postgres) "$PG_BIN/psql" -X -q -At "$PG_URL" -c 'SELECT pg_database_size(current_database()) / 1048576' ;;
  esac
}

# objects BACKEND DB: the ten largest tables and indexes, "name MiB, ..."
# (a PostgreSQL table's size includes its TOAST, not its indexes).
objects() {
  case $1 in
  sqlite)
    sqlite3 -readonly "$2" 'SELECT name || " " || printf("%.1f", SUM(pgsize) / 1048576.0) FROM dbstat
      GROUP BY name ORDER BY SUM(pgsize) DESC LIMIT 10' 2>/dev/null | paste -sd, - | sed 's/,/, /g' ||
      echo "(sqlite3 has no dbstat)"
    ;;
  postgres)
    "$PG_BIN/psql" -X -q -At "$PG_URL" -c "SELECT name || ' ' || round(size / 1048576.0, 1) FROM (
        SELECT c.relname AS name,
          CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END AS size
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
          AND c.relkind IN ('r', 'i', 'm')) s
      ORDER BY size DESC LIMIT 10" | paste -sd, - | sed 's/,/, /g'
    ;;
  esac
}

row=0
for backend in $BACKENDS; do
  log "== $backend"
  case $backend in
  sqlite)
    mkdir -p "$TMP/sqlite"
    db=$TMP/sqlite/search.db
    ;;
  postgres)
    pg_start
    db=$PG_URL
    ;;
  *) die "unknown backend $backend (known: sqlite postgres)" ;;
  esac
  m=0
  if [ "$backend" = postgres ]; then m=1; fi
  prev=0
  for size in $SIZES; do
    [ "$size" -ge "$prev" ] || die "SIZES must be ascending"
    t0=$(date +%s.%N)
    log "  preloading ids $((prev + 1))..$size"
    timeout "$PRELOAD_TIMEOUT" "$TMP/preload" --db "$db" --owner admin --from $((prev + 1)) --to "$size" \
      --timeout "${PRELOAD_TIMEOUT}s" >&2
    preload_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    prev=$size
    # The queries and how many of plants 1..size each matches.
    declare -A query=() matches=()
    while IFS= read -r line; do # kind<TAB>query<TAB>N; "all" has an empty query
      kind=${line%%$'\t'*} rest=${line#*$'\t'}
      query[$kind]=${rest%$'\t'*}
      matches[$kind]=${rest##*$'\t'}
    done < <("$TMP/preload" --words --from 1 --to "$size")
    common=$(urlq "${query[common]}") rare=$(urlq "${query[rare]}") two=$(urlq "${query[two]}")
    prefix=$(urlq "${query[prefix]}") tag=$(urlq "${query[tag]}")

    start_plantstore "$db"
    measure "list (reference)" - "${matches[all]}" "$CONNS" "/plants?limit=100"
    measure "q rare (${query[rare]})" 20 "${matches[rare]}" "$CONNS" "/plants?q=$rare&limit=100"
    measure "q common (${query[common]})" 20 "${matches[common]}" "$CONNS" "/plants?q=$common&limit=100"
    next_page "$PROBE_LINK" "${matches[common]}"
    measure "q two words (${query[two]})" 20 "${matches[two]}" "$CONNS" "/plants?q=$two&limit=100"
    measure "q prefixes (${query[prefix]})" 20 "${matches[prefix]}" "$CONNS" "/plants?q=$prefix&limit=100"
    measure "q common, sort=name" - "${matches[common]}" "$CONNS" "/plants?q=$common&sort=name&limit=100"
    measure "tag=${query[tag]}, sort=-created_at" 10 "${matches[tag]}" "$CONNS" "/plants?tag=$tag&sort=-created_at&limit=100"
    next_page "$PROBE_LINK" "${matches[tag]}"
    measure "sort=name" 10 "${matches[all]}" "$CONNS" "/plants?sort=name&limit=100"
    measure "count=estimated, everything" 5 "${matches[all]}" "$CONNS" "/plants?limit=1" "Prefer: count=estimated"
    measure "count=estimated, q common" 5 "${matches[common]}" "$CONNS" "/plants?q=$common&limit=1" "Prefer: count=estimated"
    measure "count=exact, q rare" 20 "${matches[rare]}" "$CONNS" "/plants?q=$rare&limit=1" "Prefer: count=exact"
    measure "count=exact, everything" - "${matches[all]}" "$EXACT_ALL_CONNS" "/plants?limit=1" "Prefer: count=exact"
    stop_server
    printf '%s\t%s\t%s\t%s\n' "$backend" "$size" "$preload_s" "$(db_size "$backend" "$db")" >>"$SIZES_TSV"
    echo "- $backend, $size plants: $(objects "$backend" "$db")" >>"$OBJECTS"
  done
  if [ "$backend" = postgres ]; then pg_stop; fi
done

table() {
  echo "# plantstore search benchmark"
  echo
  echo "- command: \`$COMMAND\` (wrk -d $DURATION per row, c=$CONNS unless the row says)"
  machine_info
  echo "- queries (internal/bench/preload, vocab.go): rare \`${query[rare]}\`, common \`${query[common]}\`, two words \`${query[two]}\`, prefixes \`${query[prefix]}\`, tag \`${query[tag]}\`"
  echo
  echo "| backend | plants | query | c | matches | X-Total-Count | req/s | vs list | p50 ms | p99 ms | target p99 ms | met | non-2xx | socket errors | server CPU s/1k req | PostgreSQL CPU s/1k req |"
  echo "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|"
  # Fields: 1 backend, 2 size, 3 label, 4 target, 5 matches, 6 X-Total-Count,
  # 7 conns, 8 path, 9 preference, then run_wrk's 10..18 (rps p50 p99 non2xx
  # sock cpu rss dbcpu requests).
  awk -F'\t' '
    $3 == "list (reference)" { list[$1 "/" $2] = $10 }
    {
      ref = list[$1 "/" $2]
      vs = ref > 0 ? sprintf("%.2f", $10 / ref) : "-"
      target = $4
      met = ""
      if ($4 == "= first") {
        target = "= first (" first + 0 ")"
        met = $12 <= first * 1.2 + 0.5 ? "yes" : "**no**"
      } else {
        first = $12
        if ($4 != "-") { met = $12 <= $4 + 0 && $18 > 0 ? "yes" : "**no**" }
      }
      count = $6
      if ($9 ~ /exact/ && count != $5) { count = count " **≠**" }
      printf "| %s | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %d | %d | %s | %s |\n",
        $1, $2, $3, $7, $5, count, $10, vs, $11, $12, target, met, $13, $14, $15, $17
    }' "$RESULTS"
  echo
  echo "| backend | plants | preload s | database MiB (with its indexes) |"
  echo "|---|--:|--:|--:|"
  awk -F'\t' '{ printf "| %s | %d | %s | %s |\n", $1, $2, $3, $4 }' "$SIZES_TSV"
  echo
  echo "Largest tables and indexes, MiB (SQLite: dbstat; PostgreSQL: pg_table_size, with TOAST, and pg_relation_size):"
  echo
  cat "$OBJECTS"
  echo
  echo "\"matches\": the plants the query selects (preload --words); \"X-Total-Count\": what the server"
  echo "answered to the row's Prefer (≠ marks an exact count that differs). \"vs list\": req/s ÷ the list"
  echo "row's. The count rows use limit=1: HEAD /plants's work (the count and a page) less the body. A"
  echo "next page's target is its first page's p99 (met within 20% + 0.5 ms)."
}

mkdir -p "$BENCH_DIR/results"
table | tee "$BENCH_DIR/results/search-latest.md"
log "written to bench/results/search-latest.md"
