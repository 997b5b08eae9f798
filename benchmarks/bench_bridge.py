"""The recording bridge against a local upstream, side by side with going direct, in one run
(reported, not asserted):

- added latency of a non-streamed request (median, p99), one keep-alive connection;
- added time to first byte of a streamed answer;
- throughput of 200 concurrent streams, paced like a model (an event every 50 or 20 ms) and
  unpaced (as fast as the upstream can write), in events per second, bridge against direct;
- the bridge's memory (RSS of its process: before start, idle, peak under the 200 streams);
- `ccs run P -- true` without recording, this tree against the tree given in BENCH_BASE (a checkout
  of the main branch, say), to show the plain launch path did not get slower.

The upstream and the load generator are separate processes (aiohttp), the bridge runs in this
process exactly as in ccs (its own thread and loop). Everything stays on 127.0.0.1.

    .venv/bin/python benchmarks/bench_bridge.py            # BENCH_BASE=/path/to/main to compare launches
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

UPSTREAM = r'''
import asyncio, json, sys
from aiohttp import web

BODY = json.dumps({"id": "c1", "object": "chat.completion", "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()
HEAD = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","system_fingerprint":"fp","choices":'
EVENT = HEAD + b'[{"index":0,"delta":{"content":"tok "}}]}\n\n'
LAST = HEAD + b'[],"usage":{"prompt_tokens":5,"completion_tokens":100}}\n\ndata: [DONE]\n\n'

async def handle(request):
    body = await request.json()
    if not body.get("stream"):
        return web.Response(body=BODY, content_type="application/json")
    n, pace = int(body.get("n", 100)), float(body.get("pace", 0))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for _ in range(n):
        await resp.write(EVENT)
        if pace:
            await asyncio.sleep(pace)
    await resp.write(LAST)
    await resp.write_eof()
    return resp

async def main():
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
'''

LOAD = r'''
import asyncio, json, sys, time
import aiohttp

direct, via, token, mode = sys.argv[1:5]
count, conc, n, pace = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8])
HEADERS = {direct: {"Content-Type": "application/json"},
           via: {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}}

async def one_latency(session, base, body):
    t = time.perf_counter()
    async with session.post(base + "/chat/completions", data=body, headers=HEADERS[base]) as r:
        await r.read()
    return (time.perf_counter() - t) * 1000

async def one_ttfb(session, base, body):
    t = time.perf_counter()
    async with session.post(base + "/chat/completions", data=body, headers=HEADERS[base]) as r:
        await r.content.readany()
        first = (time.perf_counter() - t) * 1000
        await r.read()
    return first

async def paired(one, body):
    # direct and bridge alternate request by request, each on its own keep-alive connection, so
    # that the noise of a shared machine falls on both alike
    out = {direct: [], via: []}
    async with aiohttp.ClientSession() as a, aiohttp.ClientSession() as b:
        sessions = {direct: a, via: b}
        for base in (direct, via):
            for _ in range(20):  # warm-up
                await one(sessions[base], base, body)
        for i in range(count):
            for base in ((direct, via) if i % 2 else (via, direct)):
                out[base].append(await one(sessions[base], base, body))
    return [out[direct], out[via]]

async def streams(base):
    body = json.dumps({"model": "m", "stream": True, "n": n, "pace": pace})
    events = 0
    async def one(session):
        nonlocal events
        async with session.post(base + "/chat/completions", data=body, headers=HEADERS[base]) as r:
            async for line in r.content:
                if line.startswith(b"data:"):
                    events += 1
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        t = time.perf_counter()
        await asyncio.gather(*(one(s) for _ in range(conc)))
        return events / (time.perf_counter() - t)

async def main():
    if mode == "latency":
        result = await paired(one_latency, json.dumps({"model": "m", "messages": []}))
    elif mode == "ttfb":
        result = await paired(one_ttfb, json.dumps({"model": "m", "stream": True, "n": 20}))
    else:
        result = await streams(direct if mode == "direct-streams" else via)
    print(json.dumps(result))

asyncio.run(main())
'''


def load(direct: str, via: str, token: str, mode: str, count: int = 0, conc: int = 1, n: int = 0,
         pace: float = 0) -> list:
    args = [direct, via, token, mode, str(count), str(conc), str(n), str(pace)]
    out = subprocess.run([sys.executable, "-c", LOAD, *args], capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout)


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def launch_path(runs: int) -> None:
    """`ccs run P -- true`, no recording: this tree beside BENCH_BASE, interleaved."""
    from timing import timed

    base_tree = os.environ.get("BENCH_BASE")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CCS_HOME": home, "BENCH_KEY": "sk-bench-0123456789abcdef"}
        ccs = [sys.executable, "-m", "ccswitch_tui"]
        subprocess.run([*ccs, "new", "bench", "--base-url", "http://127.0.0.1:9/v1", "--key", "env:BENCH_KEY"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        trees = [("this tree", str(ROOT))] + ([("BENCH_BASE", base_tree)] if base_tree else [])
        results: dict[str, list[float]] = {label: [] for label, _ in trees}
        for _ in range(runs):
            for label, tree in trees:
                results[label] += timed([*ccs, "run", "bench", "--", "true"], {**env, "PYTHONPATH": tree}, 1)
        for label, xs in results.items():
            print(f"  ccs run P -- true ({label}): median {statistics.median(xs):6.1f} ms  p90 {pct(xs, 0.9):6.1f} ms")


def main() -> None:
    before = rss_mb()  # before aiohttp is imported
    from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route

    runs = int(os.environ.get("BENCH_RUNS", "400"))
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
    try:
        port = int(upstream.stdout.readline())
        direct = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            bridge = Bridge(BridgeConfig(routes=(Route("openai", direct),), key="sk-bench-0123456789abcdef",
                                         records_path=Path(tmp) / "bench.requests.jsonl")).start()
            via = bridge.route_url("openai")
            idle = rss_mb()
            print(f"upstream {direct}, bridge {bridge.url}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")

            a, b = load(direct, via, bridge.token, "latency", runs)
            print(f"non-streamed request, {runs} each, alternating, one keep-alive connection each:")
            print(f"  direct  median {statistics.median(a):6.3f} ms  p99 {pct(a, 0.99):6.3f} ms")
            print(f"  bridge  median {statistics.median(b):6.3f} ms  p99 {pct(b, 0.99):6.3f} ms")
            print(f"  added   median {statistics.median(b) - statistics.median(a):6.3f} ms  "
                  f"p99 {pct(b, 0.99) - pct(a, 0.99):6.3f} ms")

            a, b = load(direct, via, bridge.token, "ttfb", runs // 2)
            print(f"streamed answer, time to first byte, {runs // 2} each, alternating:")
            print(f"  direct  median {statistics.median(a):6.3f} ms   bridge median {statistics.median(b):6.3f} ms"
                  f"   added {statistics.median(b) - statistics.median(a):6.3f} ms")

            peak = [idle]
            sampling = threading.Event()

            def sample() -> None:
                while not sampling.is_set():
                    peak.append(rss_mb())
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
            loads = (("paced, an event every 50 ms", 60, 0.05), ("paced, an event every 20 ms", 100, 0.02),
                     ("unpaced", 300, 0.0))
            for label, n, pace in loads:
                d, v = [], []
                for _ in range(rounds):  # alternate, and take the median round of each
                    d.append(load(direct, via, bridge.token, "direct-streams", conc=200, n=n, pace=pace))
                    v.append(load(direct, via, bridge.token, "bridge-streams", conc=200, n=n, pace=pace))
                dm, vm = statistics.median(d), statistics.median(v)
                print(f"200 concurrent streams, {n} events each, {label} (median of {rounds} rounds):")
                print(f"  direct {dm:9.0f} events/s   bridge {vm:9.0f} events/s   {100 * vm / dm:5.1f} % of direct")
            sampling.set()
            sampler.join()
            records = len(bridge.records())
            bridge.stop()
        print(f"bridge memory: {before:.1f} MB before start, {idle:.1f} MB idle, {max(peak):.1f} MB peak "
              f"under 200 streams ({records} requests recorded)")
    finally:
        upstream.terminate()
        upstream.wait()
    print("plain launch path (no recording):")
    launch_path(int(os.environ.get("BENCH_LAUNCH_RUNS", "20")))


if __name__ == "__main__":
    main()
