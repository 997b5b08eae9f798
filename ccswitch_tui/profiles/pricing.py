"""A profile's optional ``[pricing]`` table: what a model costs, per million tokens, for `ccs usage`.

```toml
[pricing."gpt-4.1"]   # the model id as the provider reports it (or as requested)
input = 2.0           # per million input tokens
output = 8.0          # per million output tokens
```

Both prices are required for a model; a model without an entry has no cost (never a guess).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ccswitch_tui.errors import ProfileError
from ccswitch_tui.valueclass import valueclass

FIELDS = ("input", "output")


@valueclass(frozen=True)
class Price:
    input: float  # per million input tokens
    output: float  # per million output tokens

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


def read_table(data: Mapping[str, Any], where: str) -> dict[str, Price]:
    """``[pricing]`` of a profile's data (absent: no prices); bad input is one ProfileError naming the field."""

    table = data.get("pricing")
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise ProfileError(f"{where}: [pricing] must be a table of models, e.g. "
                           '[pricing."gpt-4.1"] with input = 2.0 and output = 8.0', field="[pricing]")
    out = {}
    for model, entry in table.items():
        place = f'[pricing."{model}"]'
        if not isinstance(entry, Mapping):
            raise ProfileError(f"{where}: {place} must be a table with input and output (prices per million "
                               "tokens)", field=place)
        unknown = [k for k in entry if k not in FIELDS]
        if unknown:
            raise ProfileError(f"{where}: {place}.{unknown[0]} is not a price ccs knows; allowed: "
                               f"{', '.join(FIELDS)}", field=f"{place}.{unknown[0]}")
        values = []
        for f in FIELDS:
            value = entry.get(f)
            if value is None:
                raise ProfileError(f"{where}: {place}.{f} is missing; give both input and output, per million "
                                   "tokens", field=f"{place}.{f}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 \
                    or value == float("inf"):
                raise ProfileError(f"{where}: {place}.{f} must be a number of at least 0 (a price per million "
                                   f"tokens), not {str(value)[:40]!r}", field=f"{place}.{f}")
            values.append(float(value))
        out[str(model)] = Price(*values)
    return out
