-- wrk script: POST /plants/batch with BENCH_BATCH (default 1000) new plants
-- per request.
--
--   BENCH_TOKEN=secret BENCH_BATCH=1000 wrk -t1 -c4 -d10s -s bench/batch.lua http://127.0.0.1:8080
--
-- Ids are BENCH_ID_BASE + thread * 10^9 + a counter: distinct across wrk's
-- threads and requests. done() prints the "BENCH ..." line run_wrk parses
-- (requests are batches).

local token = os.getenv("BENCH_TOKEN") or error("BENCH_TOKEN is not set")
local base = tonumber(os.getenv("BENCH_ID_BASE") or "1000000000000")
local size = tonumber(os.getenv("BENCH_BATCH") or "1000")

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
  local items = {}
  for i = 1, size do
    next_id = next_id + 1
    items[i] = string.format('{"id":%.0f,"name":"plant %.0f","tag":"bench"}', next_id, next_id)
  end
  return wrk.format("POST", "/plants/batch", headers, '{"plants":[' .. table.concat(items, ",") .. ']}')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
