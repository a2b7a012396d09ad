"""The names configurations use for plugins and actions.

The framework looks plugins and actions up here by name and never imports them: as Volcano's
plugins and actions register their builders, each package registers what it defines
(``berth.plugins``, ``berth.actions``), and whatever assembles a scheduler (the simulator, the
Kubernetes backend) imports those packages first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from berth.framework.plugin import Plugin
from berth.framework.session import Session


class Action(Protocol):
    name: str

    def execute(self, session: Session) -> None: ...


PLUGINS: dict[str, type[Plugin]] = {}
ACTIONS: dict[str, Callable[[dict[str, Any]], Action]] = {}

_T = TypeVar("_T")


def _register(table: dict[str, Any], kind: str, item: _T) -> _T:
    name = item.name  # type: ignore[attr-defined]
    if name in table and table[name] is not item:
        raise ValueError(f"two {kind}s named {name!r}")
    table[name] = item
    return item


def register_plugins(*plugins: type[Plugin]) -> None:
    for plugin in plugins:
        _register(PLUGINS, "plugin", plugin)


def register_actions(*actions: Callable[[dict[str, Any]], Action]) -> None:
    for action in actions:
        _register(ACTIONS, "action", action)


def plugin_class(name: str) -> type[Plugin]:
    """The plugin registered as ``name``; a KeyError that says what is registered otherwise."""
    try:
        return PLUGINS[name]
    except KeyError:
        raise KeyError(_missing("plugin", name, PLUGINS)) from None


def action_builder(name: str) -> Callable[[dict[str, Any]], Action]:
    try:
        return ACTIONS[name]
    except KeyError:
        raise KeyError(_missing("action", name, ACTIONS)) from None


def _missing(kind: str, name: str, table: dict[str, Any]) -> str:
    if not table:
        return f"no {kind}s registered (import berth.plugins and berth.actions first): {name!r}"
    return f"no {kind} named {name!r} (registered: {', '.join(sorted(table))})"
