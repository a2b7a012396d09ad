"""A pod's shared settings: read and written as its own attributes, never changed under
another pod that shares them."""

import ast
import inspect
from dataclasses import replace

import pytest

import berth.api.pod as pod_module
from berth.api.objects import Pod
from berth.api.pod import DEFAULT_SETTINGS, PodSettings
from berth.api.selectors import Toleration


def test_pods_built_without_settings_share_the_default() -> None:
    a, b = Pod("a"), Pod("b")
    assert a.settings is DEFAULT_SETTINGS and b.settings is DEFAULT_SETTINGS
    assert a.scheduler_name == DEFAULT_SETTINGS.scheduler_name
    assert a.node_selector == {} and a.preemptable


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("fail_after", 30.0),
        ("owner", "default/web"),
        ("tolerations", (Toleration(key="gpu", operator="Exists"),)),
        ("utilization", 0.5),
        ("node_name", "n1"),
    ],
)
def test_a_write_changes_that_pod_only(field: str, value: object) -> None:
    shared = PodSettings(priority_class_name="high")
    a, b = Pod("a", settings=shared), Pod("b", settings=shared)
    setattr(a, field, value)
    assert getattr(a, field) == value
    assert a.priority_class_name == "high"  # the rest of its settings kept
    assert b.settings is shared and getattr(b, field) == getattr(PodSettings(), field)


def test_keywords_change_the_settings_given() -> None:
    shared = PodSettings(priority_class_name="high")
    pod = Pod("a", settings=shared, preemptable=False)
    assert not pod.preemptable and pod.priority_class_name == "high"
    assert shared.preemptable  # the shared settings untouched


def test_replace_keeps_sharing_unless_a_setting_changes() -> None:
    pod = Pod("a", requests={"cpu": 1000}, settings=PodSettings(owner="default/web"))
    copy = replace(pod, name="b")
    assert copy.settings is pod.settings and copy.requests is pod.requests
    moved = replace(pod, node_name="n1")
    assert moved.node_name == "n1" and moved.owner == "default/web"
    assert pod.node_name == ""
    assert replace(pod) == pod and moved != pod


def test_an_unknown_keyword_is_refused() -> None:
    with pytest.raises(TypeError, match="colour"):
        Pod("a", colour="red")


def test_a_pod_object_is_small() -> None:
    """The slots a trace's millions of pods each carry: 20 settings are shared."""
    assert len(Pod.__slots__) == 23


def test_type_checkers_are_told_every_setting_with_its_type() -> None:
    """``Pod`` declares the settings it reads through for type checkers alone (they cannot
    see the properties made at import): the declarations must name each field, typed alike."""
    tree = ast.parse(inspect.getsource(pod_module))
    declared: dict[str, str] = {}
    settings: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in ("Pod", "PodSettings"):
            body = node.body
            if node.name == "Pod":
                (block,) = [s for s in body if isinstance(s, ast.If)]
                assert ast.unparse(block.test) == "TYPE_CHECKING"
                body = block.body
            for statement in body:
                if isinstance(statement, ast.AnnAssign):
                    name = statement.target.id  # type: ignore[attr-defined]
                    annotation = ast.unparse(statement.annotation)
                    (declared if node.name == "Pod" else settings)[name] = annotation
    assert declared == settings
