-- wrk script: GET one path, for GET /plants/{id} and GET /plants?limit=N.
--
--   BENCH_TOKEN=secret BENCH_PATH='/plants?limit=100' wrk -t1 -c64 -d10s -s bench/get.lua http://127.0.0.1:8080
--   BENCH_TOKEN=secret BENCH_PATH='/plants?q=mon&limit=1' BENCH_HEADER='Prefer: count=exact' wrk ...
--
-- BENCH_HEADER='Name: value' adds one request header (search.sh: Prefer).
-- BENCH_METHOD (default GET) changes the method; not HEAD against
-- plantstore: its HEAD answers carry no Content-Length (net/http sends none
-- when the handler writes no body) and wrk, which does not know a HEAD
-- answer has no body, then waits for one until the connection closes, so
-- every request times out. search.sh measures HEAD's work as a GET.
-- With BENCH_AFTER_MAX=N > 0 each request adds after=<random 0..N> to the
-- path, so list pages start anywhere in a large table (growth.sh); otherwise
-- the request is fixed and wrk sends it without calling Lua per request.
-- done() prints one "BENCH ..." line that run.sh and growth.sh parse.

local token = os.getenv("BENCH_TOKEN") or error("BENCH_TOKEN is not set")
local path = os.getenv("BENCH_PATH") or "/plants?limit=100"
local after_max = tonumber(os.getenv("BENCH_AFTER_MAX") or "0")
local header = os.getenv("BENCH_HEADER") or ""

wrk.method = os.getenv("BENCH_METHOD") or "GET"
wrk.path = path
wrk.headers["Authorization"] = "Bearer " .. token
if header ~= "" then
  local name, value = header:match("^%s*([^:]+):%s*(.-)%s*$")
  if not name then error("BENCH_HEADER must be 'Name: value', not " .. header) end
  wrk.headers[name] = value
end

local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

function init(args)
  math.randomseed(os.time() + (tid or 0) * 7919)
end

if after_max > 0 then
  local sep = path:find("?", 1, true) and "&" or "?"
  function request()
    return wrk.format(nil, string.format("%s%safter=%d", path, sep, math.random(0, after_max)))
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
