-- wrk script: POST /plants with a new plant id on every request.
--
--   BENCH_TOKEN=secret BENCH_ID_BASE=1000000000000 wrk -t2 -c64 -d10s -s bench/post.lua http://127.0.0.1:8080
--
-- Ids are BENCH_ID_BASE + thread * 10^9 + counter: distinct across wrk's
-- threads, and across runs against one database when each run gets its own
-- base (run.sh and growth.sh do). Ids stay below 2^53, exact in Lua numbers.
-- done() prints one "BENCH ..." line that run.sh and growth.sh parse.

local token = os.getenv("BENCH_TOKEN") or error("BENCH_TOKEN is not set")
local base = tonumber(os.getenv("BENCH_ID_BASE") or "1000000000000")

local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local headers = {
  ["Authorization"] = "Bearer " .. token,
  ["Content-Type"] = "application/json",
}
local next_id

function init(args)
  next_id = base + (tid or 0) * 1e9
end

function request()
  next_id = next_id + 1
  local body = string.format('{"id":%.0f,"name":"plant %.0f","tag":"bench"}', next_id, next_id)
  return wrk.format("POST", "/plants", headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
