-- wrk script: a mixed load for bench/soak.sh: creates, gets and lists.
--
--   BENCH_TOKEN=secret BENCH_ID_BASE=1000000000000 wrk -t1 -c64 -d5m -s bench/mixed.lua http://127.0.0.1:8080
--
-- Per 10 requests: 2 POST /plants with a new id (BENCH_ID_BASE + thread *
-- 10^9 + counter, unique across threads), 5 GET /plants/{id} of a plant this
-- thread sent at least BENCH_GET_LAG seconds ago (default 7, more than wrk's
-- --timeout 5s: that POST has been answered, or counted as a timeout error),
-- or of the seeded 1..BENCH_SEEDED until there is one, 3 GET
-- /plants?limit=BENCH_LIST_LIMIT with after= random in the seeded range.
-- Every request should answer 200: a GET only asks for ids that exist.
-- done() prints one "BENCH ..." line (same fields as post.lua/get.lua) plus
-- the per-kind counts.

local token = os.getenv("BENCH_TOKEN") or error("BENCH_TOKEN is not set")
local base = tonumber(os.getenv("BENCH_ID_BASE") or "1000000000000")
local seeded = tonumber(os.getenv("BENCH_SEEDED") or "100")
local list_limit = tonumber(os.getenv("BENCH_LIST_LIMIT") or "20")
local lag = tonumber(os.getenv("BENCH_GET_LAG") or "7")

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local post_headers = {
  ["Authorization"] = "Bearer " .. token,
  ["Content-Type"] = "application/json",
}
local get_headers = { ["Authorization"] = "Bearer " .. token }
local first_id, next_id, n
-- marks: a FIFO of {second, id}: every id <= id was sent by that second.
local marks, mark_head, mark_tail, last_sec, safe_id = {}, 1, 0, -1, nil
posts, gets, lists = 0, 0, 0

function init(args)
  first_id = base + (tid or 0) * 1e9
  next_id = first_id
  n = 0
  math.randomseed(os.time() + (tid or 0) * 7919)
end

function request()
  n = n + 1
  local k = n % 10
  if k < 2 then
    local now = os.time()
    if now ~= last_sec then
      last_sec = now
      mark_tail = mark_tail + 1
      marks[mark_tail] = { now, next_id }
    end
    next_id = next_id + 1
    posts = posts + 1
    local body = string.format('{"id":%.0f,"name":"plant %.0f","tag":"soak"}', next_id, next_id)
    return wrk.format("POST", "/plants", post_headers, body)
  elseif k < 7 then
    gets = gets + 1
    local id
    local old = os.time() - lag
    while mark_head <= mark_tail and marks[mark_head][1] <= old do
      safe_id = marks[mark_head][2]
      marks[mark_head] = nil
      mark_head = mark_head + 1
    end
    -- Not first_id + 1: wrk calls request() once per thread before the run
    -- and does not send that request (so that plant is never created).
    if safe_id and safe_id >= first_id + 2 then
      id = math.random(first_id + 2, safe_id)
    else
      id = math.random(1, seeded)
    end
    return wrk.format("GET", string.format("/plants/%.0f", id), get_headers)
  else
    lists = lists + 1
    return wrk.format("GET", string.format("/plants?limit=%d&after=%d", list_limit,
      math.random(0, seeded)), get_headers)
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local p, g, l = 0, 0, 0
  for _, t in ipairs(threads) do
    p = p + (t:get("posts") or 0)
    g = g + (t:get("gets") or 0)
    l = l + (t:get("lists") or 0)
  end
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d posts=%d gets=%d lists=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout, p, g, l))
end
