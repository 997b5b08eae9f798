"""The per-launch recording bridge: a loopback HTTP server inside ccs's supervising process that
holds the real key, forwards every request of the child to the profile's real endpoint and
writes one record per request to ``runs/<launch-id>.requests.jsonl``.

Importing this package is cheap: only ``bridge.server`` imports asyncio (its HTTP is
``bridge.wire``, the standard library alone), and only a launch with recording on imports
``bridge.server``. The pure parts (records, observation of responses, the
plan rewrite) are importable without it.

    from ccswitch_tui.bridge.server import Bridge, BridgeConfig, Route
    bridge = Bridge(BridgeConfig(routes=(Route("openai", "https://host/v1"),), key=KEY, ...))
    bridge.start()            # binds 127.0.0.1:<random port>, serves from its own thread
    bridge.url, bridge.token  # what the child gets instead of the real URL and key
    bridge.records()          # the records written so far (dicts)
    bridge.stop()             # ends in-flight requests (recorded as aborted), closes the file
"""
