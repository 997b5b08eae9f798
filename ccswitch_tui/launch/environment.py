"""Environment diffs: what changes from one environment to another (the shell to a launch's child),
direnv-style. Pure functions; which variables matter is the policy's answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ccswitch_tui.policy import matters
from ccswitch_tui.policy.families import Families
from ccswitch_tui.valueclass import field, valueclass

NOISE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
# Past this many harmless names, a summary gives their count only.
FOLD_AFTER = 5


@valueclass(frozen=True)
class EnvDiff:
    """What changes from ``before`` to ``after``: direnv-style, noise left out. Routing, key and
    proxy changes lead; the harmless rest (PIP_*, PYENV_ROOT …) is folded after them."""

    added: dict[str, str]
    removed: dict[str, str]
    changed: dict[str, tuple[str, str]]
    families: Families  # the routing families that say which names matter
    # the launch's own routing names (a profile's [run].export tables): they matter as OPENAI_* do
    routing: frozenset[str] = field(default_factory=frozenset)

    def matters(self, name: str) -> bool:
        return name in self.routing or matters(name, self.families)

    def marked(self, routing: bool) -> list[str]:
        """``-NAME``, ``~NAME``, ``+NAME`` for the routing/key/proxy changes (or for the rest)."""
        parts = [f"-{k}" for k in sorted(self.removed) if self.matters(k) == routing]
        parts += [f"~{k}" for k in sorted(self.changed) if self.matters(k) == routing]
        parts += [f"+{k}" for k in sorted(self.added) if self.matters(k) == routing]
        return parts

    def summary(self) -> str:
        counts = f"+{len(self.added)} -{len(self.removed)} ~{len(self.changed)}"
        if self.empty:
            return f"{counts}: no changes"
        routing, other = self.marked(True), self.marked(False)
        text = f"{counts}: " + (f"routing, keys, proxies {' '.join(routing)}" if routing else
                                "no routing, key or proxy change")
        if other:
            text += f"; {len(other)} other" + (f" {' '.join(other)}" if len(other) <= FOLD_AFTER else "")
        return text

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def diff_env(before: Mapping[str, str], after: Mapping[str, str], families: Families,
             routing: Iterable[str] = ()) -> EnvDiff:
    keys_b = {k for k in before if k not in NOISE}
    keys_a = {k for k in after if k not in NOISE}
    return EnvDiff(
        added={k: after[k] for k in sorted(keys_a - keys_b)},
        removed={k: before[k] for k in sorted(keys_b - keys_a)},
        changed={k: (before[k], after[k]) for k in sorted(keys_a & keys_b) if before[k] != after[k]},
        families=families,
        routing=frozenset(routing),
    )


def shell_routing_note(parent: Mapping[str, str], child: Mapping[str, str], families: Families,
                       routing: Iterable[str] = ()) -> str | None:
    """One line naming the shell's routing variables (a client's family, proxies, cloud switches, and
    the profile's own export names in ``routing``) that a launch keeps out or replaces with the
    profile's, as the TUI's Diff does; names only, never values. None when the shell holds none."""
    own = frozenset(routing)
    d = diff_env(parent, child, families)
    gone = [k for k in d.removed if k in own or families.routing_family(k) is not None]
    replaced = [k for k in d.changed if k in own or families.routing_family(k) is not None]
    if not (gone or replaced):
        return None
    parts = ([f"kept out {', '.join(gone)}"] if gone else []) + (
        [f"replaced {', '.join(replaced)} with the profile's"] if replaced else [])
    return f"the shell's routing variables: {'; '.join(parts)}"
