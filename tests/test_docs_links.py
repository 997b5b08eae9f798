"""The README and the pages under docs/ hold together: every relative link and #anchor resolves (anchors
as GitHub makes them from headings), every page is reachable from docs/README.md, every repository path
a page names exists, the README stays short, and the clients table is the registry's."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_client.spec import TOOL as FAKE

from ccswitch_tui import tools
from ccswitch_tui.tools.clients_table import clients_table

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "ccswitch_tui"
README_LIMIT = 350

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# folders at the repository's root whose paths a page may name anywhere, code blocks included
ROOT_PATH = re.compile(r"(?<![\w./$~-])((?:ccswitch_tui|benchmarks|scripts|tests|screenshots|bin|\.ci)/[\w./-]*[\w/])")
# folders of the package that pages name without the package's name (`bridge/wire.py`)
PACKAGE_DIRS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass
class Page:
    path: Path
    prose: list[tuple[int, str]]  # (line number, text) outside fenced code blocks
    code: list[tuple[int, str]]  # inside them

    @classmethod
    def read(cls, path: Path) -> Page:
        prose, code, fence = [], [], False
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                fence = not fence
                continue
            (code if fence else prose).append((n, line))
        return cls(path, prose, code)

    def links(self) -> list[tuple[int, str]]:
        """Link and image targets of the prose, not counting what code spans hold."""
        return [(n, m[1]) for n, line in self.prose for m in LINK.finditer(CODE_SPAN.sub("", line))]

    def anchors(self) -> set[str]:
        seen: dict[str, int] = {}
        out = set()
        for _, line in self.prose:
            m = HEADING.match(line)
            if not m:
                continue
            slug = github_slug(m[2])
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            out.add(slug if count == 0 else f"{slug}-{count}")
        return out


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text as rendered (code spans and links by their text),
    lower case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = CODE_SPAN.sub(lambda m: m[2], text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def test_github_slugs():
    """Anchors the pages use, as GitHub shows them for these headings."""
    assert github_slug("Tools started by name: `ccs use` and `.ccs-profile`") == \
        "tools-started-by-name-ccs-use-and-ccs-profile"
    assert github_slug("The rerun lock: `--same-as` and `--locked`") == "the-rerun-lock---same-as-and---locked"
    assert github_slug("Runs that travel: `ccs runs export` and `ccs runs import`") == \
        "runs-that-travel-ccs-runs-export-and-ccs-runs-import"
    assert github_slug("Names a program reads itself: `[run] export` tables") == \
        "names-a-program-reads-itself-run-export-tables"


def link_problems(page: Page) -> list[str]:
    problems = []
    for n, target in page.links():
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: — not checked here (no network)
            continue
        path_part, _, anchor = target.partition("#")
        file = (page.path.parent / path_part).resolve() if path_part else page.path
        where = f"{_name(page.path)}:{n}: {target}"
        if not file.exists():
            problems.append(f"{where}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in Page.read(file).anchors():
            problems.append(f"{where}: no heading makes the anchor #{anchor} in {_name(file)}")
        elif anchor and file.suffix != ".md":
            problems.append(f"{where}: an anchor into a file that is not Markdown")
    return problems


@pytest.mark.parametrize("path", pages(), ids=_name)
def test_every_link_and_anchor_resolves(path):
    assert link_problems(Page.read(path)) == []


def test_a_broken_link_or_anchor_is_caught(tmp_path):
    """The check itself: a link to a missing page, an anchor no heading makes, and a good one."""
    (tmp_path / "other.md").write_text("# Other\n\n## The rerun lock: `--same-as`\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#the-rerun-lock---same-as) [self](#page) "
                    "[gone](missing.md) [bad](other.md#the-rerun-lock)\n"
                    "`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n")
    problems = link_problems(Page.read(page))
    assert len(problems) == 2, problems
    assert "missing.md: no such file" in problems[0] and "#the-rerun-lock" in problems[1]


def path_exists(token: str) -> bool:
    """A path a page names: from the repository's root, or inside the package (`bridge/wire.py`,
    `runs/manifests`, `tools/registry.RESERVED_KEYS`: a module and a name in it)."""
    token = token.rstrip("/")
    last = token.rsplit("/", 1)[-1]
    candidates = [ROOT / token, PACKAGE / token, PACKAGE / f"{token}.py"]
    if "." in last and not last.endswith(".py"):
        module = token[: len(token) - len(last)] + last.split(".", 1)[0]
        candidates += [PACKAGE / f"{module}.py", PACKAGE / module]
    return any(c.exists() for c in candidates)


PLACEHOLDER = re.compile(r"[/_][A-Z]{3,}(?=\.py|/|$)")  # `tools/NAME.py`, `tests/test_NAME.py`


def named_paths(page: Page) -> list[tuple[int, str]]:
    """Repository paths a page names; a path with a placeholder in capitals stands for many, none checked."""
    out = []
    for n, line in page.prose + page.code:
        # a pattern (`screenshots/board*.png`, `tools/<name>.py`) names no one path
        out += [(n, m[1]) for m in ROOT_PATH.finditer(line) if line[m.end():m.end() + 1] not in ("*", "<", "{")]
    for n, line in page.prose:
        for m in CODE_SPAN.finditer(line):
            token = m[2].strip()
            if re.fullmatch(r"[\w.-]+/[\w./-]*", token) and token.split("/", 1)[0] in PACKAGE_DIRS:
                out.append((n, token))
    return [(n, token) for n, token in out if not PLACEHOLDER.search(re.sub(r"\.(?!py$)[^/]*$", "", token))]


@pytest.mark.parametrize("path", pages(), ids=_name)
def test_every_path_a_page_names_exists(path):
    page = Page.read(path)
    missing = [f"{_name(path)}:{n}: {token}" for n, token in named_paths(page) if not path_exists(token)]
    assert missing == [], "stale paths (moved or removed): " + "; ".join(missing)


def test_the_path_check_catches_a_stale_path(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run `scripts/gone.sh`, see `bridge/wire.py` and `bridge/nowhere.py`, `tools/NAME.py`, "
                    "`tools/registry.RESERVED_KEYS`, `tools/registry.GONE_KEYS`, `tools/gone.RESERVED_KEYS`.\n"
                    "```sh\n.venv/bin/python benchmarks/bench_gone.py\n```\n")
    missing = [t for _, t in named_paths(Page.read(page)) if not path_exists(t)]
    assert sorted(missing) == ["benchmarks/bench_gone.py", "bridge/nowhere.py", "scripts/gone.sh",
                               "tools/gone.RESERVED_KEYS"]


def test_no_page_is_orphaned():
    index = Page.read(DOCS / "README.md")
    linked = {(DOCS / target.partition("#")[0]).resolve() for _, target in index.links() if target.partition("#")[0]}
    orphans = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.resolve() not in linked]
    assert orphans == [], f"docs pages the index (docs/README.md) does not link: {orphans}"
    readme_links = {(ROOT / t.partition("#")[0]).resolve() for _, t in Page.read(ROOT / "README.md").links()}
    assert (DOCS / "README.md").resolve() in readme_links, "the README does not link the docs index"


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_LIMIT, f"README.md has {lines} lines (at most {README_LIMIT}): move long sections to docs/"


def test_the_readme_clients_table_is_the_registry():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- clients-table:begin -->\n", 1)[1].split("\n<!-- clients-table:end -->", 1)[0]
    specs = [s for s in tools.load().specs() if s.name != FAKE.name]  # the tests' own client, when one registered it
    assert block == clients_table(specs), \
        "the README's clients table is stale: run `.venv/bin/python scripts/doc_tables.py`"
    for spec in specs:
        if spec.launchable:
            assert f"`ccs launch P {spec.name}`" in block


def test_the_table_script_finds_both_tables_current(tmp_path):
    """scripts/doc_tables.py --check reads the tables where the docs keep them (exit 0: nothing stale), and
    rewrites a stale one in place between its markers."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "doc_tables.py"), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from doc_tables import replaced
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    stale = "intro\n<!-- clients-table:begin -->\n| old |\n<!-- clients-table:end -->\nafter\n"
    assert replaced(stale, "clients-table", "| new |") == \
        "intro\n<!-- clients-table:begin -->\n| new |\n<!-- clients-table:end -->\nafter\n"


# a command where a shell would run one: a code span's start, a line's start, or after && ; | then do
COMMAND = re.compile(r"(?:^|&&|;|\||\bthen|\bdo)\s*ccs ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)")


def command_problems(page: Page) -> list[str]:
    """`ccs WORD` (and `ccs GROUP SUB`) in code spans and code blocks that the CLI does not have."""
    import click

    from ccswitch_tui.cli import cli

    ctx = click.Context(cli)
    texts = [(n, m[2]) for n, line in page.prose for m in CODE_SPAN.finditer(line)] + page.code
    problems = []
    for n, text in texts:
        for m in COMMAND.finditer(text.split(" # ")[0]):  # not in a shell comment
            name, _, sub = m[1].partition(" ")
            command = cli.get_command(ctx, name)
            if command is None:
                problems.append(f"{_name(page.path)}:{n}: ccs {name}: no such command")
            elif isinstance(command, click.Group) and sub and command.get_command(ctx, sub) is None:
                problems.append(f"{_name(page.path)}:{n}: ccs {name} {sub}: no such command")
    return problems


@pytest.mark.parametrize("path", pages(), ids=_name)
def test_every_command_a_page_shows_exists(path):
    assert command_problems(Page.read(path)) == []


def test_a_removed_command_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run `ccs switch work`, then `ccs key forget ID` and `ccs key set ID`; ccs dies here.\n"
                    "```sh\nccs runs purge --all  # ccs gone here\nccs runs diff A B && ccs lst\n```\n")
    problems = command_problems(Page.read(page))
    assert [p.split(": ", 1)[1] for p in problems] == \
        ["ccs switch: no such command", "ccs key forget: no such command", "ccs runs purge: no such command",
         "ccs lst: no such command"]
