"""Mutations of parsed YAML and JSON trees: where a field can be, what it can be made.

A tree is addressed by paths of keys and indexes; a mutation picks one place and drops it,
duplicates it, renames it, or puts a hostile value there. The values are the ones mistakes and
attacks produce: wrong types, numbers out of every range (NaN, infinities, 2**63, negatives),
strings that look like numbers or quantities and are not, very long and non-ASCII text, and
nesting.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]

LONG = "x" * 20_000
#: Scalars that parse as something, but as nonsense for any field that wants a number, a
#: quantity, a duration or a name.
HOSTILE_SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    -(2**31),
    2**31,
    2**63,
    10**40,
    0.5,
    -0.0,
    1e308,
    -1e308,
    math.nan,
    math.inf,
    -math.inf,
    "",
    " ",
    "0",
    "-1",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "1e309",
    "1e-400",
    "99999999999999999999999999",
    "1e30",
    "9999999Ei",
    "-5m",
    "0.0001m",
    "1.5.5",
    "1_000",
    "0x10",
    "12h",
    "25%",
    "-25%",
    "250%",
    "名前",
    "ｃｐｕ",
    "a b",
    "A_B",
    "a\tb",
    "line\nbreak",
    "\u202eevil",
    "\U0001f600",
    LONG,
]

hostile_scalars = st.one_of(
    st.sampled_from(HOSTILE_SCALARS),
    st.sampled_from(HOSTILE_SCALARS),
    st.integers(),
    st.floats(),
    st.text(max_size=40),
)
hostile_values = st.one_of(
    hostile_scalars,
    st.lists(hostile_scalars, max_size=3),
    st.dictionaries(st.text(max_size=10), hostile_scalars, max_size=3),
    st.integers(2, 150).map(lambda depth: nested(depth)),
)


def nested(depth: int) -> Any:
    value: Any = "deep"
    for level in range(depth):
        value = [value] if level % 2 else {"d": value}
    return value


def places(tree: Any, path: Path = ()) -> list[Path]:
    """Every path in ``tree`` (the root excluded), parents before children."""
    found: list[Path] = []
    if isinstance(tree, dict):
        items = list(tree.items())
    elif isinstance(tree, list):
        items = list(enumerate(tree))
    else:
        return found
    for key, value in items:
        found.append((*path, key))
        found += places(value, (*path, key))
    return found


def get(tree: Any, path: Path) -> Any:
    for key in path:
        tree = tree[key]
    return tree


#: "replace" is listed thrice: hostile values are what most mistakes are.
MUTATIONS = ("drop", "duplicate", "replace", "replace", "replace", "rename", "unknown", "wrap")


def mutate(tree: Any, path: Path, how: str, value: Any) -> Any:
    """A copy of ``tree`` (a list of documents) with the place at ``path`` changed ``how``
    (``value`` for the kinds of change that put something there)."""
    tree = copy.deepcopy(tree)
    parent, key = get(tree, path[:-1]), path[-1]
    if how == "drop":
        del parent[key]
    elif how == "duplicate":
        # A list item twice; a mapping cannot hold a key twice, so its whole document, then.
        into, at = (parent, key) if isinstance(parent, list) else (tree, path[0])
        into.insert(at, copy.deepcopy(into[at]))
    elif how == "replace":
        parent[key] = value
    elif how == "rename" and isinstance(parent, dict):
        parent[_renamed(str(key), value)] = parent.pop(key)
    elif how == "unknown" and isinstance(parent, dict):
        parent[f"{key}X"] = value
    else:  # wrap, or a rename/unknown field inside a list
        parent[key] = [parent[key]] if isinstance(value, list | dict) else {"value": parent[key]}
    return tree


def _renamed(key: str, value: Any) -> str:
    """A misspelling: another case, a character lost, or the key with text added."""
    if isinstance(value, str) and value:
        return key + value[:20]
    if isinstance(value, int) and value % 2:
        return key.swapcase()
    return key[:-1] or "k"


@st.composite
def mutated(draw: st.DrawFn, tree: Any, rounds: int = 3) -> tuple[Any, list[str]]:
    """``tree`` after one to ``rounds`` mutations, and what was done (for the failure report)."""
    done = []
    for _ in range(draw(st.integers(1, rounds))):
        where = places(tree)
        if not where:
            break
        path = draw(st.sampled_from(where))
        how = draw(st.sampled_from(MUTATIONS))
        value = draw(hostile_values)
        tree = mutate(tree, path, how, value)
        done.append(f"{how} {'.'.join(map(str, path))} {_short(value)}")
    return tree, done


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."
