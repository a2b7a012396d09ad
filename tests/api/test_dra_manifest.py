"""DRA objects at the manifest boundary: the example validates, and each kind of bad input
gets one problem line while the rest of the input is kept."""

from __future__ import annotations

from pathlib import Path

from berth.api.dra import DeviceClass, PodClaim, ResourceClaim, ResourceSlice
from berth.api.manifest import load_files

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra" / "cluster.yaml"

BAD = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: good}
spec:
  selectors: [{cel: {expression: 'device.driver == "x"'}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken}
spec:
  selectors: [{cel: {expression: 'device.driver == '}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c1}
spec:
  devices:
    requests:
    - name: r
      exactly: {deviceClassName: missing}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s1}
spec:
  driver: x
  pool: {name: p, resourceSliceCount: 1}
  nodeName: n9
  devices:
  - name: d0
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s2}
spec:
  driver: x
  pool: {name: p2, resourceSliceCount: 1}
  nodeName: n1
  devices:
  - name: d0
    attributes: {model: {string: a}}
    capacity: {memory: {value: 1Gi}}
"""


def test_example_validates() -> None:
    m = load_files(EXAMPLE)
    assert not m.errors, [str(p) for p in m.errors]
    kinds = sorted(type(o).__name__ for o in m.dra)
    assert kinds == [
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
    ]
    (pod,) = m.pods
    assert pod.resource_claims == (
        PodClaim("gpus", template_name="two-linked-gpus"),
        PodClaim("small", claim_name="a-slice-of-a-gpu"),
    )


def test_bad_input_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    m = load_files(path)
    lines = [str(p).replace(str(path), "f") for p in m.errors]
    assert lines == [
        "f: DeviceClass/broken: spec.selectors[0].cel.expression: does not compile: Syntax "
        "error: mismatched input '<EOF>' at column 18 (expected a CEL expression over device)",
        "f: ResourceClaim/c1: spec.devices.requests[0].exactly.deviceClassName: no DeviceClass "
        'named "missing" in the loaded files',
        'f: ResourceSlice/s1: spec.nodeName: no Node named "n9" in the loaded files (expected '
        "the node whose devices the slice publishes)",
    ]
    names = {type(o).__name__ + "/" + o.name for o in m.dra}
    assert {"DeviceClass/good", "ResourceClaim/c1", "ResourceSlice/s1", "ResourceSlice/s2"} <= names
    (s2,) = [o for o in m.dra if isinstance(o, ResourceSlice) and o.name == "s2"]
    assert s2.devices[0].attributes == {"model": "a"}
    assert str(s2.devices[0].capacity["memory"].value) == str(2**30)
    assert [o.name for o in m.dra if isinstance(o, DeviceClass | ResourceClaim)] == [
        "good",
        "broken",
        "c1",
    ]
