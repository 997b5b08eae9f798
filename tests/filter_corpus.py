"""A corpus for the output filter: keys of the shapes the providers with presets hand out (random,
made for these tests), and the ids and names ccs prints that must pass it untouched. Fixed
literals, so every run tests the same inputs."""

# Keys per preset, in the forms each provider issues (several for providers with more than one).
PRESET_KEYS = {
    "openai": [
        "sk-proj--IhsnbuC4O0Y7c5FGtjezHFBOpRqhnGx6YgKkWXuWGE2YjXkIE32b_djrcA1n-jQhJ3pw2V1lhT3BlbkFJoRalD9l0kjsSid"
        "e9nSx59zc-kiuWOtse3z4yPmsvm13JsGY7Hyhg-4boxXOxPPTy16w3tn1Z_G",
        "sk-svcacct-RR705e7STV-uX3UNm_-Xpan22j3xuXybTSvXOmir2Utp8fQ6Ku4hhKJ4QUXvisidlinlCHW05PT3BlbkFJ4BbCum3LDqj"
        "OQxmal_nurfPme4MxHmc8d0Lkqhuoow3FD4Y51qS_J6LQhm0SaVa75Cg-vR4mTG",
        "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",
    ],
    "anthropic": ["sk-ant-api03-7EQ0KaV2bRSMbhN4SX75v5MgXwQP0ZHzzsuIon2L_oV4j5r_1xLY-Xl30Dd4KtLV0YLdGunoWgpbDgRcW3F"
                  "QrpjN5dzPFAA"],
    "deepseek": ["sk-0e00b02719fd6f80df7b9c053108f6d9"],
    "qwen": ["sk-1a914b5626e1108ef03e8681557bea7e"],  # DashScope
    "kimi": ["sk-ySgZStl0yRWGCIMvIXvns2EAsSEoZLGtuLvZgjtxkguGUTMo"],  # Moonshot
    "kimi-coding": ["sk-kimi-9vjcaADOyIL5MTo79fMdKL9IsspfqDxxfdJqi5YE2V6wjo9Kz0S4qTurJqMzgSxY"],
    "glm": ["b3d1fc3041dd6e40e5cc8976e3951d28.oN7wQPmHUNYtjzg5"],  # Zhipu: <32 hex>.<16>
    "zai": ["4159892b42de4d958e4c1ce1e0e59988.3v6qAeh2BlhVtWfM"],
    "openrouter": ["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"],
    "google": ["AIza_2CA-2UPe0-gINfz5CZD-tCocYtXruALDhF", "AIzaSyB3x9kQ2mV7nL4pR8tW1zY6cD0fH5jK2aE"],
    "taotoken": ["sk-qDS4sduaIzawiuPMhSjA4w1fn0egdndw50BRdxFsxznUbG82"],
    "minimax": [
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJHcm91cE5hbWUiOiJ4IiwiVXNlck5hbWUiOiJ5IiwiR3JvdXBJRCI6Ijg3NDUxNjkyMD"
        "I3MjM5OTI2MjUiLCJNYWlsIjoiIiwiQ3JlYXRlVGltZSI6IjIwMjUtMDEtMDEgMTA6MDA6MDAiLCJpc3MiOiJtaW5pbWF4In0.zz6gNrqoLx"
        "CIXBWXVEGAP3xSDbUGViU-qJ6fzBlmSy25OcwWz-3yNVm4Us41RALSFlObtzGshdsWvNU3ZUOszGsaVhbA8XP3QIVE9kwxUbK9KcbEzgUtZW"
        "BVkojgi7S_-E3Vx3BXUnDV0j3ieyikFnQ9YICLyEOHSOzF2oSs3IgqCohlp-oHIc6kntOy_-ggWbbi6OS6E6h5C-97KjIsgiKnMX7TP4vuj",
        "sk-api-Ab_hWx8RwjqhIc1iV5b0-RnCwhNrvf6aF9GEVl0CnKwtNUJpOc6R-GQwfCPMN1JdpysHF7VuOcb3nwXBIPOZ3L0a-r",
    ],
}

# Key-shaped tokens from elsewhere (a gateway's own scheme, a second credential), no prefix to go by.
OTHER_KEYS = [
    "8b25c467f52f9ef09960e336afe07620",  # 32 hex (one-api style gateways)
    "bce-v3/ALTAK-rT4kJ9wXq2bN7mL1pZ8c/3f9e2a7c4b1d8e6f0a5c9b2d7e4f1a8c3b6d0e9f",  # Baidu Qianfan
    "ghp_ep0FnalgJKjvXwyYIzHd6ssldxeTwlvRQFPB",
    # shaped like ids of the forms the filter lets through, but marked as keys: the mark wins
    "sk-ses_cb4a2613957a6Nhy5SXmwXxapy", "sk-chatcmpl-xJz5VoLEqxwL4Ro8M4uqVVRUFYNwD",
]

# What ccs prints as an id or a name, as ccs prints it: every one must pass the filter untouched.
IDS_AND_NAMES = {
    # the two the filter broke: Kilo Code's resume hint, and a preset's name followed by a count
    "kilo resume": "ccs: to resume this session with profile 'kimi': ccs launch kimi kilo -- "
                   "--session ses_db616f0f3ffeTITUQ006lk5UKa",
    "usage not recorded": "not recorded, so not counted: 9 run(s) (oai: 5, taotoken: 4); set [policy] record = true",
    "opencode session": "ccs launch p opencode -- --session ses_cb4a2613957a6Nhy5SXmwXxapy",
    "opencode message": "msg_02f72e362f273MKyKjjzfb47fY prt_dc58c9472b70RE3axPIem9gSvV",
    "claude resume": "ccs launch p claude -- --resume 2b7c5e0a-3f1d-4e8a-9b6c-0d2e4f6a8b1c",
    "codex resume": "ccs launch p codex -- resume 0199a213-81c0-7800-8aa1-bbab2a035a53",
    "codex rollout": "sessions/2026/12/06/rollout-2026-12-06T10-00-00-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl",
    "gemini resume": "ccs launch p gemini -- --resume 5f0c1e2d-8a7b-4c3d-9e1f-2a3b4c5d6e7f",
    "launch id": "20261206T101500Z-1a2b3c4d",
    "anthropic message": '{"id": "msg_01i9nJhmqV8XiSL7J4ov3WKX", "type": "message"}',
    "anthropic request id": "request-id: req_011CNNkEKBXHCgp3UD7hA9kd",
    "anthropic tool use": "toolu_01qPv2TUhE3iUd9AtJIyA9HE",
    "chat completion": '{"id":"chatcmpl-xJz5VoLEqxwL4Ro8M4uqVVRUFYNwD","object":"chat.completion.chunk"}',
    "dashscope completion": "chatcmpl-7f3e9c1a-2b4d-4e6f-8a0c-1d3e5f7a9b2c",
    "responses id": "resp_9725d79df5e831b7b88faa2ae9e359b23de953e928bd9ba3",
    "responses item": "msg_622f1d236803bc50437932d812fcdf6c150c8b8ef4e77023",
    "openai request id": "x-request-id: req_c28d6d9be136fa666334ed34057ed267",
    "tool call": '{"call_id": "call_wieSpYeyqRdMmclA27hQARmR"}',
    "openrouter generation": "gen-1764998345-jub91XJgw2TmjsY373Ri",
    "cf-ray": "cf-ray: bcb40a7102e02929-SJC",
    "commit": "commit 435cc53dee6c06d332087a70ea29c30d75649421",
    "commit url": "https://github.com/o/r/commit/435cc53dee6c06d332087a70ea29c30d75649421",
    "uuid": "550e8400-e29b-41d4-a716-446655440000",
    "profile names": "openrouter-claude-backup kimi-k2-0905 glm-4.6-coding qwen3-coder-480b-a35b gw-b tt",
    "token counts": "tokens: 1234, output_tokens: 56, x-ratelimit-remaining-tokens: 99000",
    "fingerprint": "key fp:1a2b3c4d5e6f",
    "digest": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
}
