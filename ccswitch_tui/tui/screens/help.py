"""Help: the keys and what each tab shows."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Markdown

from ccswitch_tui import tools
from ccswitch_tui.tui.actions import ACTIONS

_CLIENTS = ", ".join(s.label for s in tools.load().clients())
ABOUT = f"""\
**ccs** launches {_CLIENTS} and SDK programs against exactly one provider, with the key
from the OS keyring and an environment built from nothing.

| Tab | Shows |
| --- | --- |
| Overview | provider, base URLs per tool, models, key id with mask and fingerprint, injected variables, problems |
| Environment | the exact environment the tool would get (`ccs env`), with where each variable comes from |
| Diff | that environment against the shell ccs started from: this is where contamination shows |
| Running | {_CLIENTS} and ccs-launched processes with their findings (`ccs ps`), refreshed every 2 s |
| Runs | this profile's run manifests, newest first, drift from the previous run (a round: `u` shows every round) |

Launching hands the terminal to the tool; when it exits you are back here with its exit status.
"""


def keys_table() -> str:
    rows = ["| Key | Action |", "| --- | --- |"]
    for a in ACTIONS:
        names = [k.replace("question_mark", "?").replace("slash", "/") for k in a.key.split(",")]
        keys = ", ".join([a.key_display or names[0], *names[1:]])  # the display names the first key only
        rows.append(f"| `{keys}` | {a.help} |")
    rows += ["| `1`…`5` | Show Overview, Environment, Diff, Running, Runs |",
             "| `u` | Runs tab: the Rounds view (the gap per round, the verdicts, what changed), or back |",
             "| `enter` | From the list into the tab shown (scroll, pick a run or a process) |",
             "| `tab` | Move between the list, the tabs and the panes |",
             "| `esc` | Back from a pane to the profile list (in the list: clear the filter) |",
             "| `ctrl+p` | Command palette (every action, and jump to a profile) |",
             "| `q` | Quit |"]
    return "\n".join(rows)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="help-close", tooltip="Close the help")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide help"):
            yield Label("ccs — help", classes="dialog-title")
            with VerticalScroll():
                yield Markdown(ABOUT + "\n" + keys_table(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
