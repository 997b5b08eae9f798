"""HTTP/1.1 for the bridge, both ways, on asyncio streams and the standard library alone.

The bridge needs little of HTTP: one loopback server that reads a request, lets the bridge answer
it (whole, or streamed as it arrives), and a client that sends one request to an upstream (direct,
or through the profile's HTTP proxy) and hands its body back piece by piece as it arrives. An HTTP
library would cost every recorded launch its import (aiohttp's took 150-250 ms, during which the
child's first request waited), and h11, measured against this code, 15 times its CPU time per
streamed event (see the README's Speed section). Three modules, re-exported here:

- ``framing``: errors, header fields, Content-Length / Transfer-Encoding, chunked bodies, gzip and
  deflate;
- ``serving``: the child's side (``serve``, ``Request``, ``Answer``);
- ``upstream``: the upstream's side (``Pool``, ``Upstream``).

    server = await serve(sock, handle, max_body)   # handle(request) answers through request.answer
    pool = Pool(connect_timeout=30)
    upstream = await pool.request("POST", "https://host/v1/x", headers, body, proxy=None)
    async for piece in upstream.chunks(): ...     # the body, decoded (chunked, gzip, deflate)
    upstream.release()                             # back to the pool when it ended cleanly

What the bridge must be able to tell apart is told apart by the exception:
``Unreachable`` (no connection: DNS, refused, timeout, TLS verification, a proxy that refused),
``UpstreamFailed`` (connected, but no readable answer's head), ``UpstreamBroke`` (the answer's
body broke off or could not be decoded), ``WireError`` (the child's request breaks HTTP/1.1).
"""

from __future__ import annotations

from ccswitch_tui.bridge.framing import (
           MAX_HEAD,
           READ,
           BodyTooLarge,
           ChunkedDecoder,
           Headers,
           Unreachable,
           UpstreamBroke,
           UpstreamError,
           UpstreamFailed,
           WireError,
)
from ccswitch_tui.bridge.serving import OTHER_USER, OVER_LIMIT, Answer, Request, Server, serve
from ccswitch_tui.bridge.upstream import Pool, Upstream

__all__ = ["MAX_HEAD", "OTHER_USER", "OVER_LIMIT", "READ", "Answer", "BodyTooLarge", "ChunkedDecoder", "Headers",
           "Pool", "Request", "Server", "Unreachable", "Upstream", "UpstreamBroke", "UpstreamError", "UpstreamFailed",
           "WireError", "serve"]
