"""When a pod can be updated in place: OpenKruise's ``TestCalculateInPlaceUpdateSpec``
(``pkg/util/inplaceupdate/inplace_update_test.go``), ported: only container images and
template metadata may differ."""

from __future__ import annotations

from typing import Any

import pytest

from berth.controllers.inplace import InPlaceUpdate, in_place_update
from tests.controllers.workload_docs import cloneset, load


def revision(tmpl: dict[str, Any]):
    return load(cloneset(tmpl={"metadata": {"labels": {"app": "web"}}, **tmpl}))[0].spec.template


def spec(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": list(containers)}}


def meta(labels: dict[str, str], **rest: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web", **labels}}, **rest}


CASES = {
    "image changed": (
        spec({"name": "c1", "image": "foo1"}),
        spec({"name": "c1", "image": "foo2"}),
        {"c1": "foo2"},
    ),
    "image and a label added": (
        meta({"k": "v"}, **spec({"name": "c1", "image": "foo1"})),
        meta({"k": "v", "k1": "v1"}, **spec({"name": "c1", "image": "foo2"})),
        {"c1": "foo2"},
    ),
    "image changed, a label removed": (
        meta({"k": "v", "k2": "v2"}, **spec({"name": "c1", "image": "foo1"})),
        meta({"k": "v", "k1": "v1"}, **spec({"name": "c1", "image": "foo2"})),
        {"c1": "foo2"},
    ),
    "only metadata": (
        meta({"k": "v"}, **spec({"name": "c1", "image": "foo1"})),
        meta({"k": "v2"}, **spec({"name": "c1", "image": "foo1"})),
        {},
    ),
    "an env var added": (
        spec({"name": "c1", "image": "foo1"}),
        spec({"name": "c1", "image": "foo2", "env": [{"name": "k", "value": "v"}]}),
        None,
    ),
    "a container added": (
        spec({"name": "c1", "image": "foo1"}),
        spec({"name": "c1", "image": "foo1"}, {"name": "c2", "image": "bar"}),
        None,
    ),
    "requests changed": (
        spec({"name": "c1", "image": "foo1", "resources": {"requests": {"cpu": "1"}}}),
        spec({"name": "c1", "image": "foo1", "resources": {"requests": {"cpu": "2"}}}),
        None,
    ),
    "an image where there was none": (
        spec({"name": "c1"}),
        spec({"name": "c1", "image": "foo1"}),
        None,
    ),
}


@pytest.mark.parametrize("old,new,images", CASES.values(), ids=CASES.keys())
def test_in_place_update(old, new, images) -> None:
    update = in_place_update(revision(old), revision(new))
    assert update == (None if images is None else InPlaceUpdate(images))


def test_unknown_old_revision_is_not_in_place() -> None:
    assert in_place_update(None, revision(spec({"name": "c1", "image": "foo1"}))) is None
