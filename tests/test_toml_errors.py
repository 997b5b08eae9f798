"""TOML syntax errors say what is wrong, at the place to fix (line and column counted from 1), and
how to fix it — not the parser's words; a mistyped table is called a table."""

from __future__ import annotations

import pytest

from ccswitch_tui.errors import ProfileError
from ccswitch_tui.profiles.store import profile_from_text

GOOD = '''schema = 1
description = "d"

[provider]
name = "Kimi"
base_url = "https://api.moonshot.cn/v1"
key = "kimi"

[claude]
model = "kimi-k2"

[claude.env]
API_TIMEOUT_MS = "600000"

[codex]
model = "kimi-k2"
'''


def broken(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


CASES = [
    # the closing quote is missing: the parser said "Control characters … use \u000a instead"
    (broken('name = "Kimi"', 'name = "Kimi'), 5, 8,
     'this string has no closing quote: end it with " on the same line'),
    (broken('model = "kimi-k2"', "model = 'kimi-k2"), 10, 9, "this string has no closing quote: end it with '"),
    # a duplicate key was reported at column 0 of the line after it, without the first place
    (broken('model = "kimi-k2"', 'model = "kimi-k2"\nmodel = "x"'), 11, 1,
     "model is set twice in [claude] (first on line 10): keep one"),
    (broken("schema = 1", "schema = 1\nschema = 1"), 2, 1, "schema is set twice (first on line 1): keep one"),
    (broken("[codex]", "[provider]"), 15, 1, "the table [provider] appears twice (first on line 4)"),
    (GOOD + '\n[claude.env]\nB = "2"\n', 18, 1, "the table [claude.env] appears twice (first on line 12)"),
    (broken("[claude]", "[claude"), 9, 8, "this table header is not closed: write [claude]"),
    (broken('model = "kimi-k2"', "model = kimi-k2"), 10, 9,
     'the value of model is not quoted: write model = "kimi-k2"'),
    (broken('model = "kimi-k2"', 'model "kimi-k2"'), 10, 6, "model is not followed by '='"),
    (broken('model = "kimi-k2"', 'model = "kimi\\qk2"'), 10, 14, "a backslash starts an escape TOML does not know"),
    (GOOD + 'x = """abc\n', 17, 5, 'the text opened with """ here is not closed: end it with """'),
    (GOOD + "x = [1, 2\n", 17, 5, "this array is not closed: end it with ]"),
    (broken("schema = 1", "schema = 1 2"), 1, 12, "unexpected '2' after the value of schema: one value per line"),
]


@pytest.mark.parametrize("text,line,col,message", CASES, ids=[c[3][:40] for c in CASES])
def test_syntax_errors_name_the_place_and_the_fix(text, line, col, message):
    with pytest.raises(ProfileError) as err:
        profile_from_text("kimi", text)
    assert str(err.value).startswith(f"kimi.toml:{line}:{col}: {message}"), str(err.value)
    assert (err.value.line, err.value.column) == (line, col)
    assert "Control characters" not in str(err.value) and "already exists" not in str(err.value)


@pytest.mark.parametrize("old,new,message", [
    ("[codex]", "[codx]", "kimi.toml: unknown table [codx]; did you mean [codex]?"),
    ("[claude.env]", "[claude.enx]", "kimi.toml: unknown table [claude.enx]; did you mean [claude.env]?"),
    ('model = "kimi-k2"', 'modle = "kimi-k2"', "kimi.toml: unknown field [claude].modle; did you mean 'model'?"),
])
def test_a_mistyped_table_is_called_a_table(old, new, message):
    with pytest.raises(ProfileError) as err:
        profile_from_text("kimi", broken(old, new))
    assert str(err.value) == message


def test_ccs_list_and_show_print_the_same_line(ccs, ccs_home):
    ccs_home.profiles.mkdir(parents=True)
    (ccs_home.profiles / "kimi.toml").write_text(broken('name = "Kimi"', 'name = "Kimi'))
    want = 'kimi.toml:5:8: this string has no closing quote'
    shown = ccs("show", "kimi")
    assert shown.returncode == 2 and want in shown.stderr and "Traceback" not in shown.stderr
    listed = ccs("list")
    assert want in listed.stdout, listed.stdout
