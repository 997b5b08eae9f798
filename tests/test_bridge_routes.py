"""A route is a path prefix, and a request stays inside it: a target whose dot segments climb above
the route's root (in any spelling an upstream could read as one) gets a 400 and never reaches the
upstream, where it would carry the real key to whatever else the upstream's host serves."""

from __future__ import annotations

import json

import pytest
from test_bridge import wait_records
from test_bridge_framing import reply_to
from test_bridge_wire import KEY, Scripted, bridge_to, head  # noqa: F401 — bridge_to is a fixture

from ccswitch_tui.bridge.routes import leaves_route, split_target

OUTSIDE = ["/openai/../../etc/passwd", "/openai/..", "/openai/v1/../../admin", "/openai/%2e%2e/x", "/openai/%2E%2e/x",
           "/openai/..%2f..%2fetc", "/openai/..%2F..%2Fetc", "/openai/.%2e/x", "/openai/%252e%252e/x",
           "/openai/%25252e%25252e/x", "/openai/..\\..\\x", "/openai/..%5c..%5cx", "/openai/..;x=1/y",
           "/openai/./../x", "/openai/a/./../../x?q=1", "/openai/..?key=1"]
INSIDE = ["/openai/models", "/openai/a/../models", "/openai/./models", "/openai/v1/..%2fmodels", "/openai/..x/y",
          "/openai/x..", "/openai/models?path=../../etc", "/openai?x=1"]


@pytest.mark.parametrize("target", OUTSIDE)
def test_a_target_that_climbs_out_of_its_route_never_reaches_the_upstream(bridge_to, target):  # noqa: F811
    upstream = Scripted(lambda n, req: head(Content_Length="2") + b"ok")
    b = bridge_to(upstream)
    reply = reply_to(b.port, f"GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Connection: close\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert b"climbs out of the route /openai" in reply and upstream.requests == []
    (record,) = wait_records(b, 1)
    assert (record["status"], record["outcome"], record["upstream_url"]) == (400, "refused", None)
    assert KEY not in json.dumps(record)


@pytest.mark.parametrize("target", INSIDE)
def test_a_target_that_stays_inside_its_route_is_forwarded(bridge_to, target):  # noqa: F811
    upstream = Scripted(lambda n, req: head(Content_Length="2") + b"ok")
    b = bridge_to(upstream)
    reply = reply_to(b.port, f"GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {b.token}\r\n"
                             "Connection: close\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n"), reply
    (request,) = upstream.requests
    assert request.startswith(f"GET /v1{split_target(target)[1]} HTTP/1.1\r\n".encode())


def test_which_paths_leave_a_route():
    assert [t for t in OUTSIDE if not leaves_route(split_target(t)[1])] == []
    assert [t for t in INSIDE if leaves_route(split_target(t)[1])] == []
    assert split_target("/openai?x=1") == ("openai", "?x=1") and split_target("/a/b/c") == ("a", "/b/c")
