"""The recording bridge against a local upstream, side by side in one run with going direct and with
a minimal aiohttp pass-through proxy (the floor for a proxy written in Python), reported, not
asserted:

- added latency of a non-streamed request (median, p99), one keep-alive connection;
- added time to first byte of a streamed answer;
- throughput of 200 concurrent streams, paced like a model (an event every 50 or 20 ms) and
  unpaced (as fast as the upstream can write), in upstream events per second against direct, and
  the proxy's CPU time per event: direct, the minimal proxy, the bridge recording (pass-through),
  the bridge translating (Codex's Responses API to the upstream's Chat Completions);
- with ``--record-bodies``: the longest gap between two events of 50 paced streams while a 1 MiB
  request and its 1 MiB answer pass, against the same streams without it, direct and through the
  bridge (the difference is the bridge's share), and the longest stall of the bridge's event loop;
- the bridge's memory (RSS of its process: before start, idle, peak under the 200 streams);
- start-up: `ccs run P -- true` with and without --record, and the time from starting ccs to the
  child's first answered request, with and without --record, for a Python child that sends it at
  once and for `codex exec`; with BENCH_BASE (a checkout of the main branch, say) the same for that
  tree, interleaved.

The upstream, the minimal proxy and the load generator are separate processes (aiohttp, one of
the test extras; ccs itself does not use it), the bridge runs in this process exactly as in ccs
(its own thread and loop). Everything stays on 127.0.0.1.

    .venv/bin/python benchmarks/bench_bridge.py            # BENCH_BASE=/path/to/main: launches and streams compared
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
import asyncio, json, sys, time
from aiohttp import web

BODY = json.dumps({"id": "c1", "object": "chat.completion", "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()
HEAD = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","system_fingerprint":"fp","choices":'
EVENT = HEAD + b'[{"index":0,"delta":{"content":"tok "}}]}\n\n'
LAST = HEAD + b'[],"usage":{"prompt_tokens":5,"completion_tokens":100}}\n\ndata: [DONE]\n\n'

async def handle(request):
    raw = await request.read()
    body = json.loads(raw)
    if body.get("echo"):  # a big answer: the request back, as the content of one message
        text = json.dumps(body)
        return web.json_response({"id": "c2", "object": "chat.completion", "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
    q = request.query  # a translated request carries n and pace in the query (its body is rebuilt)
    if not (body.get("stream") or "n" in q):
        return web.Response(body=BODY, content_type="application/json")
    n, pace = int(q.get("n", body.get("n", 100))), float(q.get("pace", body.get("pace", 0)))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for _ in range(n):
        await resp.write(EVENT)
        if pace:
            await asyncio.sleep(pace)
    await resp.write(LAST)
    await resp.write_eof()
    return resp

LOG = sys.argv[1] if len(sys.argv) > 1 else None  # when each Responses request was answered

def responses_event(kind, **fields):
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()

ANSWER = b"".join([
    responses_event("response.created", response={"id": "r1", "status": "in_progress", "output": []}),
    responses_event("response.output_item.done", output_index=0, item={
        "type": "message", "id": "m1", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}),
    responses_event("response.completed", response={"id": "r1", "status": "completed", "output": [], "usage": {
        "input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}),
])

async def responses(request):
    await request.read()
    resp = web.Response(body=ANSWER, content_type="text/event-stream")
    await resp.prepare(request)
    await resp.write_eof()
    if LOG:
        with open(LOG, "a") as f:
            f.write(f"{time.time()}\n")
    return resp

async def main():
    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_post("/v1/responses", responses)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
'''

# The floor: the least a Python pass-through proxy on aiohttp does (no token, no record, no rewrite).
MINIMAL = r'''
import asyncio, sys
import aiohttp
from aiohttp import web

UPSTREAM = sys.argv[1]
HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "upgrade"}

async def handle(request):
    body = await request.read()
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
    async with request.app["session"].request(request.method, UPSTREAM + request.path_qs, headers=headers,
                                              data=body or None) as up:
        resp = web.StreamResponse(status=up.status, headers={
            k: v for k, v in up.headers.items() if k.lower() not in HOP | {"content-encoding"}})
        await resp.prepare(request)
        async for chunk in up.content.iter_any():
            await resp.write(chunk)
        await resp.write_eof()
        return resp

async def main():
    app = web.Application(client_max_size=2**30)
    app["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, backlog=2048).start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
'''

LOAD = r'''
import asyncio, json, sys, time
import aiohttp

direct, via, token, mode = sys.argv[1:5]
count, conc, n, pace = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8])
responses = via.endswith("#responses")  # the translating route: Codex's Responses API
via = via.removesuffix("#responses")
HEADERS = {direct: {"Content-Type": "application/json"},
           via: {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}}

LOREM = (
    'def handle(request):\n    body = json.loads(request.body)\n    if body.get("stream"):\n'
    '        return stream(body, headers={"Content-Type": "text/event-stream"})\n'
    '    return {"id": body["id"], "items": [1, 2, 3], "note": "a line of prose, with commas: and colons"}\n'
) * 40

def request(base, stream_n=None, stream_pace=0.0, big=False):
    """(url, body) for one request; ``stream_n`` events if it streams."""
    if big:  # 1 MiB of a conversation about code, as an agent sends it
        code = open(__file__).read() if "__file__" in globals() else LOREM
        turns, size = [], 0
        while size < 1024 * 1024:
            turns.append({"role": "user" if len(turns) % 2 else "assistant", "content": code})
            size += len(code) + 40
        return base + "/chat/completions", json.dumps({"model": "m", "echo": True, "messages": turns})
    if base == via and responses:
        q = f"?n={stream_n or 20}&pace={stream_pace}"
        return base + "/responses" + q, json.dumps({"model": "m", "input": "hi", "stream": True})
    if stream_n is None:
        return base + "/chat/completions", json.dumps({"model": "m", "messages": []})
    return base + "/chat/completions", json.dumps({"model": "m", "stream": True, "n": stream_n, "pace": stream_pace})

async def one_latency(session, base):
    url, body = request(base)
    t = time.perf_counter()
    async with session.post(url, data=body, headers=HEADERS[base]) as r:
        await r.read()
        assert r.status == 200, (url, r.status)
    return (time.perf_counter() - t) * 1000

async def one_ttfb(session, base):
    url, body = request(base, 20)
    t = time.perf_counter()
    async with session.post(url, data=body, headers=HEADERS[base]) as r:
        await r.content.readany()
        first = (time.perf_counter() - t) * 1000
        await r.read()
    return first

async def paired(one):
    # direct and the proxy alternate request by request, each on its own keep-alive connection, so
    # that the noise of a shared machine falls on both alike
    out = {direct: [], via: []}
    async with aiohttp.ClientSession() as a, aiohttp.ClientSession() as b:
        sessions = {direct: a, via: b}
        for base in (direct, via):
            for _ in range(20):  # warm-up
                await one(sessions[base], base)
        for i in range(count):
            for base in ((direct, via) if i % 2 else (via, direct)):
                out[base].append(await one(sessions[base], base))
    return [out[direct], out[via]]

async def read_stream(session, base, gaps=None):
    """The upstream events this stream delivered: n + 1 (the last carries the usage) when it ended
    well. Through the translation each text event is one response.output_text.delta and the last one
    the response.completed."""
    url, body = request(base, n, pace)
    translated = responses and base == via
    seen = 0
    last = None
    async with session.post(url, data=body, headers=HEADERS[base]) as r:
        assert r.status == 200, (url, r.status)
        async for line in r.content:
            if translated:
                if not line.startswith((b"event: response.output_text.delta", b"event: response.completed")):
                    continue
            elif not line.startswith(b"data:") or line.startswith(b"data: [DONE]"):
                continue
            seen += 1
            if gaps is not None:
                now = time.perf_counter()
                if last is not None:
                    gaps.append((now - last) * 1000)
                last = now
    return seen

async def streams(base):
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        t = time.perf_counter()
        got = await asyncio.gather(*(read_stream(s, base) for _ in range(conc)))
        return sum(got) / (time.perf_counter() - t)

async def gaps(big, base):
    """The longest gaps between events of ``conc`` paced streams, with one 1 MiB request and its
    1 MiB answer sent 0.5 s in when ``big``."""
    all_gaps = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def heavy():
            await asyncio.sleep(0.5)
            url, body = request(base, big=True)
            async with s.post(url, data=body, headers=HEADERS[base]) as r:
                await r.read()
        jobs = [read_stream(s, base, all_gaps) for _ in range(conc)] + ([heavy()] if big else [])
        await asyncio.gather(*jobs)
    all_gaps.sort()
    return [all_gaps[-1], all_gaps[int(len(all_gaps) * 0.999)], statistics_median(all_gaps)]

def statistics_median(xs):
    return xs[len(xs) // 2]

async def main():
    if mode == "latency":
        result = await paired(one_latency)
    elif mode == "ttfb":
        result = await paired(one_ttfb)
    elif mode.startswith("gaps"):  # gaps, gaps-big, and the same -direct
        result = await gaps("-big" in mode, direct if mode.endswith("-direct") else via)
    else:
        result = await streams(direct if mode == "direct-streams" else via)
    print(json.dumps(result))

asyncio.run(main())
'''


def load(direct: str, via: str, token: str, mode: str, count: int = 0, conc: int = 1, n: int = 0,
         pace: float = 0) -> list | float:
    args = [direct, via, token, mode, str(count), str(conc), str(n), str(pace)]
    out = subprocess.run([sys.executable, "-c", LOAD, *args], capture_output=True, text=True, check=True, timeout=900)
    return json.loads(out.stdout)


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def cpu_s(pid: int) -> float:
    """A process's CPU time so far, to the nanosecond where Linux says it (the scheduler's account
    of each thread; the clock ticks ``cpu_times`` counts in are 10 ms, a few percent of a round)."""
    if pid == os.getpid():
        return time.process_time()  # every thread's, also of threads that have ended
    try:
        return sum(int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
                   for task in os.listdir(f"/proc/{pid}/task")) / 1e9
    except (OSError, ValueError, IndexError):
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def start_child(script: str, *args: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


FIRST_REQUEST = ("import os, time, urllib.request\n"
                 "req = urllib.request.Request(os.environ['OPENAI_BASE_URL'].rstrip('/') + '/chat/completions',"
                 " data=b'{\"model\": \"m\"}', headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY'],"
                 " 'Content-Type': 'application/json'})\n"
                 "urllib.request.urlopen(req, timeout=30).read()\n"
                 "print(time.time())\n")


CLIENTS = ROOT / ".cache" / "clients" / "bin"


def launch_path(runs: int, upstream: str, answered: Path) -> None:
    """`ccs run P -- true`, `ccs run P -- python <first request>` and `ccs launch P codex -- exec`, with
    and without --record: this tree beside BENCH_BASE, interleaved. ``answered`` is the upstream's
    log of when it answered each Responses request (Codex's first request)."""
    base_tree = os.environ.get("BENCH_BASE")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CCS_HOME": home, "BENCH_KEY": "sk-bench-0123456789abcdef",
               "PATH": f"{CLIENTS}:{os.environ['PATH']}"}
        ccs = [sys.executable, "-m", "ccswitch_tui"]
        subprocess.run([*ccs, "new", "bench", "--base-url", upstream, "--key", "env:BENCH_KEY"],
                       env=env, check=True, stdout=subprocess.DEVNULL, cwd=home)
        with open(Path(home) / "profiles" / "bench.toml", "a") as f:
            f.write('\n[codex]\nmodel = "bench-model"\n')
        trees = [("this tree", str(ROOT))] + ([("BENCH_BASE", base_tree)] if base_tree else [])
        codex = ["codex", "--", "exec", "--skip-git-repo-check", "-c", "analytics.enabled=false", "hi"]
        kinds = {"run P -- true": (False, "run", ["true"]), "run --record P -- true": (True, "run", ["true"]),
                 "run P, first request answered": (False, "run", [sys.executable, "-c", FIRST_REQUEST]),
                 "run --record P, first request answered": (True, "run", [sys.executable, "-c", FIRST_REQUEST])}
        if (CLIENTS / "codex").exists():
            kinds |= {"launch P codex, first request answered": (False, "launch", codex),
                      "launch --record P codex, first answered": (True, "launch", codex)}
        results: dict[tuple[str, str], list[float]] = {}
        for _ in range(runs):
            for label, tree in trees:
                for kind, (record, command, child) in kinds.items():
                    if command == "run":
                        argv = [*ccs, "run", *(["--record"] if record else []), "bench", "--", *child]
                    else:
                        argv = [*ccs, "launch", *(["--record"] if record else []), "bench", *child]
                    answered.write_text("")
                    start = time.time()
                    # cwd: `python -m` puts the working directory first on sys.path, before PYTHONPATH
                    out = subprocess.run(argv, env={**env, "PYTHONPATH": tree}, capture_output=True, text=True,
                                         check=True, stdin=subprocess.DEVNULL, cwd=home)
                    if command == "launch":
                        end = float(answered.read_text().split()[0])
                    else:
                        end = float(out.stdout.strip().splitlines()[-1]) if "first" in kind else time.time()
                    results.setdefault((label, kind), []).append((end - start) * 1000)
        for (label, kind), xs in results.items():
            print(f"  ccs {kind:<40} ({label}): median {statistics.median(xs):6.1f} ms  p90 {pct(xs, 0.9):6.1f} ms")
        pairs = [(plain, rec) for plain, rec in (
            ("run P -- true", "run --record P -- true"),
            ("run P, first request answered", "run --record P, first request answered"),
            ("launch P codex, first request answered", "launch --record P codex, first answered")) if plain in kinds]
        for label, _ in trees:
            for plain, rec in pairs:
                ratio = statistics.median(results[(label, rec)]) / statistics.median(results[(label, plain)])
                print(f"  {label}: {rec} / {plain}: {ratio:.2f}x")


class LoopStalls:
    """The longest time the bridge's event loop could not run a 1 ms ticker: how long every stream
    it serves waited for it at worst."""

    def __init__(self, loop) -> None:
        self.lags: list[float] = []
        self._loop = loop
        loop.call_soon_threadsafe(self._tick, time.perf_counter())

    def _tick(self, due: float) -> None:
        self.lags.append((time.perf_counter() - due) * 1000)
        self._loop.call_later(0.001, self._tick, time.perf_counter() + 0.001)

    def take(self) -> float:
        worst = max(self.lags, default=0.0)
        self.lags.clear()
        return worst


def bodies_gaps(direct: str, tmp: str) -> None:
    """--record-bodies: what one 1 MiB request and its 1 MiB answer do to 50 concurrent paced streams,
    through the bridge and direct (the upstream's own share: it parses and writes the MiB too), and
    to the bridge's event loop itself."""
    from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route

    bridge = Bridge(BridgeConfig(routes=(Route("openai", direct),), key="sk-bench-0123456789abcdef",
                                 records_path=Path(tmp) / "bodies.requests.jsonl", record_bodies=True)).start()
    try:
        via = bridge.route_url("openai")
        stalls = LoopStalls(bridge._loop)  # noqa: SLF001 — the loop the bridge serves on
        rounds = int(os.environ.get("BENCH_BODY_ROUNDS", "9"))
        got: dict[str, list[float]] = {}
        for _ in range(rounds):  # alternating, and the median of each
            for mode in ("gaps", "gaps-big", "gaps-direct", "gaps-big-direct"):
                stalls.take()
                got.setdefault(mode, []).append(load(direct, via, bridge.token, mode, conc=50, n=75, pace=0.02)[0])
                if not mode.endswith("direct"):
                    got.setdefault(mode + " stall", []).append(stalls.take())
        m = {k: statistics.median(v) for k, v in got.items()}
        via_added = m["gaps-big"] - m["gaps"]
        direct_added = m["gaps-big-direct"] - m["gaps-direct"]
        print(f"--record-bodies, 50 streams with an event every 20 ms, the longest gap between two events "
              f"(median of {rounds} alternating rounds):")
        print(f"  direct:      {m['gaps-direct']:6.1f} ms alone, {m['gaps-big-direct']:6.1f} ms while a 1 MiB request "
              f"and its 1 MiB answer pass (+{direct_added:.1f} ms: the upstream's and the client's own)")
        print(f"  via ccs:     {m['gaps']:6.1f} ms alone, {m['gaps-big']:6.1f} ms while they pass "
              f"(+{via_added:.1f} ms); the bridge's share +{via_added - direct_added:.1f} ms")
        print(f"  the bridge's event loop, longest stall: {m['gaps stall']:6.1f} ms alone, "
              f"{m['gaps-big stall']:6.1f} ms while they pass (+{m['gaps-big stall'] - m['gaps stall']:.1f} ms)")
    finally:
        bridge.stop()


# --- this tree's bridge against BENCH_BASE's, in the same rounds -------------------------------------

# A bridge of the tree given first, in a process of its own (so that its CPU time is its own): both
# routes the benchmark measures; prints its port and token, serves until its standard input closes.
TREE_BRIDGE = r'''
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
from ccswitch_tui.bridge.translate.handler import TranslatingHandler
direct = sys.argv[2]
routes = (Route("openai", direct), Route("codex", direct, handler=TranslatingHandler("bench")))
with tempfile.TemporaryDirectory() as tmp:
    bridge = Bridge(BridgeConfig(routes=routes, key="sk-bench-0123456789abcdef",
                                 records_path=Path(tmp) / "bench.requests.jsonl")).start()
    print(json.dumps({"url": bridge.url, "token": bridge.token}), flush=True)
    sys.stdin.read()
    bridge.stop()
'''


def trees_side_by_side(direct: str, base: str) -> None:
    """The same streams through this tree's bridge and BENCH_BASE's, each in a process of its own,
    round by round alternating: CPU per event of each, and this tree's against the base's (what a
    change costs, free of the load of the moment, which moves every figure of a shared machine)."""
    bridges = {}
    for label, tree in (("this tree", str(ROOT)), ("BENCH_BASE", base)):
        proc = subprocess.Popen([sys.executable, "-c", TREE_BRIDGE, tree, direct], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        bridges[label] = (proc, json.loads(proc.stdout.readline()))
    try:
        print(f"this tree's bridge against BENCH_BASE's ({base}), each in a process of its own, rounds alternating:")
        paced, unpaced = int(os.environ.get("BENCH_ROUNDS", "5")), int(os.environ.get("BENCH_UNPACED_ROUNDS", "15"))
        for label, n, pace, rounds in (("paced, an event every 20 ms", 100, 0.02, paced),
                                       ("unpaced", 300, 0.0, unpaced)):
            for route, suffix in (("recording", "/openai"), ("translating", "/codex#responses")):
                cpu: dict[str, list[float]] = {}
                for _ in range(rounds):
                    for name, (proc, info) in bridges.items():
                        c0 = cpu_s(proc.pid)
                        load(direct, info["url"] + suffix, info["token"], "bridge-streams", conc=200, n=n, pace=pace)
                        cpu.setdefault(name, []).append((cpu_s(proc.pid) - c0) / (200 * (n + 1)) * 1e6)
                ours, theirs = statistics.median(cpu["this tree"]), statistics.median(cpu["BENCH_BASE"])
                by_round = " ".join(f"{a / b:.2f}" for a, b in zip(cpu["this tree"], cpu["BENCH_BASE"], strict=True))
                print(f"  {route:<11} {label:<28} this tree {ours:5.2f} µs/event, BENCH_BASE {theirs:5.2f}: "
                      f"{ours / theirs:.2f}x (round by round: {by_round})")
    finally:
        for proc, _ in bridges.values():
            proc.stdin.close()
            proc.wait(30)


# --- the bridge's own HTTP/1.1 against h11 ----------------------------------------------------------

H11_SERVER_CASES = {  # a child's request: what each reader makes of it ("refused" is right for all)
    "chunk size 0x5": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
    "chunk size 5_0": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5_0\r\nhello\r\n0\r\n\r\n",
    "chunk size ' 5'": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n",
    "chunk size +5": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
    "chunk size '5 '": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
    "Transfer-Encoding: \\x0bchunked": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \x0bchunked\r\n\r\n"
                                        b"5\r\nhello\r\n0\r\n\r\n",
    "bare-LF request": b"GET / HTTP/1.1\nHost: x\n\n",
    "bare LF after one header": b"GET / HTTP/1.1\r\nHost: x\n\r\n",
    "Content-Length and chunked": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked"
                                  b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
}


def _h11_verdict(data: bytes) -> str:
    import h11

    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                return "waits for more"
            if isinstance(event, h11.EndOfMessage):
                return "accepted"
    except h11.RemoteProtocolError:
        return "refused"


def _wire_verdict(data: bytes) -> str:
    import asyncio

    from ccswitch_tui.bridge import wire
    from ccswitch_tui.bridge.serving import _read_request

    async def read() -> str:
        reader = asyncio.StreamReader(limit=wire.MAX_HEAD)
        reader.feed_data(data)
        reader.feed_eof()
        try:
            request = await _read_request(reader, None, None, 1 << 20)  # type: ignore[arg-type]
            await request.read()
        except wire.WireError:
            return "refused"
        return "accepted"

    return asyncio.run(read())


def framing_comparison() -> None:
    """Import time, CPU per streamed event on the upstream's side (chunked decoding) and the
    adversarial framing cases, for bridge.wire and for h11."""
    import h11

    from ccswitch_tui.bridge import wire

    def import_ms(module: str) -> float:
        times = []
        for _ in range(5):
            out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                                 capture_output=True, text=True, cwd=str(ROOT)).stderr
            times.append(int(out.strip().splitlines()[-1].split("|")[1]) / 1000)
        return statistics.median(times)

    print("the bridge's HTTP/1.1 (bridge.wire) against h11 " + h11.__version__ + ":")
    print(f"  import: bridge.wire {import_ms('ccswitch_tui.bridge.wire'):.1f} ms (asyncio and ssl included, which "
          f"the bridge needs anyway), h11 {import_ms('h11'):.1f} ms on top of them")
    events = [b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":'
              b'{"content":"tok %d"}}]}\n\n' % i for i in range(300)]
    body = b"".join(b"%x\r\n%b\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

    def by_wire(pieces: list[bytes]) -> None:
        decoder = wire.ChunkedDecoder()
        for p in pieces:
            decoder.feed(p)

    def by_h11(pieces: list[bytes]) -> None:
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="POST", target="/", headers=[("Host", "x"), ("Content-Length", "0")]))
        conn.send(h11.EndOfMessage())
        conn.receive_data(head)
        conn.next_event()
        for p in pieces:
            conn.receive_data(p)
            while not (isinstance(event := conn.next_event(), h11.EndOfMessage) or event is h11.NEED_DATA):
                pass

    unpaced = [body[i:i + 65536] for i in range(0, len(body), 65536)]
    paced = [b"%x\r\n%b\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]
    for label, pieces in (("unpaced (64 KiB reads)", unpaced), ("paced (a chunk a read)", paced)):
        cost = {}
        for name, fn in (("bridge.wire", by_wire), ("h11", by_h11)):
            runs = []
            for _ in range(31):
                t0 = time.thread_time_ns()
                fn(pieces)
                runs.append((time.thread_time_ns() - t0) / len(events) / 1000)
            cost[name] = statistics.median(runs)
        print(f"  chunked decoding, {label}: bridge.wire {cost['bridge.wire']:.2f} µs/event, "
              f"h11 {cost['h11']:.2f} µs/event ({cost['h11'] / cost['bridge.wire']:.1f}x)")
    print("  a child's request framed loosely (each should be refused):")
    for case, data in H11_SERVER_CASES.items():
        print(f"    {case:<32} bridge.wire: {_wire_verdict(data):<9} h11: {_h11_verdict(data)}")
    from ccswitch_tui.bridge.translate.sse import SSEDecoder

    line = []
    for mb in (5, 10, 20):
        decoder = SSEDecoder(max_event=1 << 40)
        piece = b"x" * 65536
        t0 = time.thread_time_ns()
        for _ in range(mb * 16):
            decoder.frames(piece)
        line.append(f"{mb} MB {(time.thread_time_ns() - t0) / 1e9:.3f} s")
    print(f"  an SSE event without its blank line, fed 64 KiB at a time to the translation's decoder: "
          f"{', '.join(line)}")


def main() -> None:
    before = rss_mb()  # before aiohttp is imported
    from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
    from ccswitch_tui.bridge.translate.handler import TranslatingHandler

    runs = int(os.environ.get("BENCH_RUNS", "400"))
    answered = Path(tempfile.mkdtemp()) / "answered"
    upstream, port = start_child(UPSTREAM, str(answered))
    direct = f"http://127.0.0.1:{port}/v1"
    minimal, mport = start_child(MINIMAL, f"http://127.0.0.1:{port}")  # it forwards the whole path
    try:
        with tempfile.TemporaryDirectory() as tmp:
            bridge = Bridge(BridgeConfig(routes=(Route("openai", direct),
                                                 Route("codex", direct, handler=TranslatingHandler("bench"))),
                                         key="sk-bench-0123456789abcdef",
                                         records_path=Path(tmp) / "bench.requests.jsonl")).start()
            idle = rss_mb()
            print(f"upstream {direct}, minimal proxy :{mport}, bridge {bridge.url}; {os.cpu_count()} cores, "
                  f"load {os.getloadavg()[0]:.2f}")
            me = os.getpid()
            # label, base URL as the load generator takes it, token, process whose CPU it costs
            paths = [("minimal proxy", f"http://127.0.0.1:{mport}/v1", "", minimal.pid),
                     ("ccs recording", bridge.route_url("openai"), bridge.token, me),
                     ("ccs translating", bridge.route_url("codex") + "#responses", bridge.token, me)]

            print(f"non-streamed request, {runs} each, alternating with direct, one keep-alive connection each:")
            for label, via, token, _ in paths[:2]:  # a translated request always streams
                a, b = load(direct, via, token, "latency", runs)
                print(f"  {label:<16} direct median {statistics.median(a):6.3f} ms   via {statistics.median(b):6.3f} ms"
                      f"   added median {statistics.median(b) - statistics.median(a):6.3f} ms"
                      f"  p99 {pct(b, 0.99) - pct(a, 0.99):6.3f} ms")
            print(f"streamed answer, time to first byte, {runs // 2} each, alternating with direct:")
            for label, via, token, _ in paths:
                a, b = load(direct, via, token, "ttfb", runs // 2)
                print(f"  {label:<16} direct median {statistics.median(a):6.3f} ms   via {statistics.median(b):6.3f} ms"
                      f"   added {statistics.median(b) - statistics.median(a):6.3f} ms")

            peak = [idle]
            sampling = threading.Event()

            def sample() -> None:
                while not sampling.is_set():
                    peak.append(rss_mb())
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            paced_rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
            loads = (("paced, an event every 50 ms", 60, 0.05), ("paced, an event every 20 ms", 100, 0.02),
                     ("unpaced", 300, 0.0))
            for label, n, pace in loads:
                rates: dict[str, list[float]] = {"direct": []}
                cpu: dict[str, list[float]] = {}
                # an unpaced round lasts about a second: more of them, for a median that holds still
                rounds = int(os.environ.get("BENCH_UNPACED_ROUNDS", "15")) if not pace else paced_rounds
                for _ in range(rounds):  # alternate, and take the median round of each
                    rates["direct"].append(load(direct, direct, "", "direct-streams", conc=200, n=n, pace=pace))
                    for name, via, token, pid in paths:
                        c0 = cpu_s(pid)
                        rates.setdefault(name, []).append(load(direct, via, token, "bridge-streams", conc=200, n=n,
                                                               pace=pace))
                        cpu.setdefault(name, []).append((cpu_s(pid) - c0) / (200 * (n + 1)) * 1e6)
                d = statistics.median(rates["direct"])
                print(f"200 concurrent streams, {n} events each, {label} (median of {rounds} rounds):")
                print(f"  direct           {d:9.0f} events/s")
                floor = statistics.median(cpu["minimal proxy"])
                for name, *_ in paths:
                    v, c = statistics.median(rates[name]), statistics.median(cpu[name])
                    print(f"  {name:<16} {v:9.0f} events/s  {100 * v / d:5.1f} % of direct   "
                          f"CPU {c:5.2f} µs/event ({c / floor:.2f}x the minimal proxy)  rounds "
                          f"{' '.join(f'{x:.2f}' for x in cpu[name])}")
                tr, rc = cpu["ccs translating"], cpu["ccs recording"]
                by_round = " ".join(f"{t / r:.2f}" for t, r in zip(tr, rc, strict=True))
                print(f"  translating / recording CPU per event: {statistics.median(tr) / statistics.median(rc):.2f}x"
                      f" (round by round: {by_round})")
            sampling.set()
            sampler.join()
            records = len(bridge.records())
            bridge.stop()
            print(f"bridge memory: {before:.1f} MB before start, {idle:.1f} MB idle, {max(peak):.1f} MB peak "
                  f"under 200 streams ({records} requests recorded)")
            bodies_gaps(direct, tmp)
        framing_comparison()
        if os.environ.get("BENCH_BASE"):
            trees_side_by_side(direct, os.environ["BENCH_BASE"])
        print("start-up (recording loads the bridge once the child runs; the plain launch path does not):")
        launch_path(int(os.environ.get("BENCH_LAUNCH_RUNS", "20")), direct, answered)
    finally:
        for proc in (minimal, upstream):
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
