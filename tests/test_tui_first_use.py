"""The TUI as a new user meets it, driven by a pilot against a temporary CCS_HOME and the real Secret
Service: what the screen says (at 80x24 where size matters) and what is left in files."""

from __future__ import annotations

from test_tui_support import (
    build_app,
    parent_env,
    plain,
    select,
    settle,
)

from ccswitch_tui.env import diff_env
from ccswitch_tui.paths import Paths

SIZE = (110, 34)
SMALL = (80, 24)


async def test_diff_tab_leads_with_routing_like_env_diff(home: Paths):
    env = parent_env(ANTHROPIC_BASE_URL="https://stale-gateway.example/api", PYENV_ROOT="/root/.pyenv",
                     **{f"PIP_OPTION_{i}": str(i) for i in range(40)})
    app = build_app(home, env)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, "alpha")
        app.action_set_tool("claude")
        await settle(pilot)
        text = plain(app, "#diff-body")
        first = text.splitlines()[0]
        assert first == diff_env(env, app.detail_pane.view.plan.env).summary()  # the core's, as `ccs env --diff`
        assert "~ANTHROPIC_BASE_URL" in first and "PIP_OPTION" not in first
        assert "ANTHROPIC_BASE_URL (replaced)" in text and "ANTHROPIC_API_KEY (kept out)" in text
        assert "PIP_OPTION_3=3" not in text and "-PIP_OPTION_3" in text  # folded: names only
        banner = next(line for line in text.splitlines() if line.startswith("✗"))
        assert banner.startswith("✗ 3 routing/key variable(s)")  # two kept out, one replaced
