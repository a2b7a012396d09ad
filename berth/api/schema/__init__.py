"""Pydantic models of the manifest shapes berth reads, and the translation of their verdicts into
plain problem lines.

The models stop at the boundary: they check types, ranges and enumerations of the raw documents,
and ``berth.api.manifest`` turns the validated models into the dataclasses of
``berth.api.objects`` and ``berth.api.selectors``. Field names are the Kubernetes camelCase
spellings, produced by an alias generator so the Python side stays snake_case.

Unknown fields are found by walking the raw document against the models instead of reading
``model_extra``: the walk works on documents that fail validation too, and a misspelt field is
usually what makes a required one "missing", so reporting both together is what helps.

The package's names are those of its modules, loaded on first use: building the models takes
about a tenth of a second, which a run from a trace or a node list (no manifests) never needs.
"""

from importlib import import_module
from typing import Any

#: Later modules' names win, as the star imports this replaces did. ``jobset``, ``lws`` and
#: ``workload_api`` stay out: the Workload API's PodGroupDoc is not Volcano's, which is the one
#: ``schema.PodGroupDoc`` names; their models are imported from their modules.
_MODULES = (
    "base",
    "dra",
    "kubeflow",
    "meta",
    "namespaces",
    "nodes",
    "paddle",
    "pods",
    "topology",
    "volcano",
    "workloads",
)


def _public(module: Any) -> dict[str, Any]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith("_")]
    return {name: getattr(module, name) for name in names}


def _load() -> None:
    names = globals()
    for module in _MODULES:
        names.update(_public(import_module(f"{__name__}.{module}")))


def __getattr__(name: str) -> Any:
    _load()  # (a submodule's name too: importing it set that attribute)
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    _load()
    return sorted(globals())
