"""The catalog of fetchable traces is consistent (formats berth reads, names the commands can
resolve, well-formed checksums), and its checksums agree with the developers' copies of the
published files where those are beside the project."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from berth.traces.catalog import SETS, TRACES, FetchError, traces_named
from berth.traces.formats import FORMATS

SHA256 = re.compile(r"[0-9a-f]{64}")


@pytest.mark.parametrize("trace", TRACES.values(), ids=list(TRACES))
def test_entry_is_consistent(trace):
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", trace.name)
    assert trace.format in FORMATS
    assert trace.download.url.startswith("https://")
    for checksum in (trace.download.sha256, trace.sha256):
        assert checksum is None or SHA256.fullmatch(checksum)
    assert (trace.member is not None) == (trace.download.archive is not None)
    if trace.member is None:
        assert trace.path == trace.download.path and trace.sha256 is None
    assert trace.path.split("/")[0] == trace.download.path.split("/")[0]
    assert all(name in TRACES for name in trace.companions)


def test_names_paths_and_sets():
    paths = [trace.path for trace in TRACES.values()]
    assert len(paths) == len(set(paths))
    assert not set(SETS) & set(TRACES)
    for name, members in SETS.items():
        assert members and all(member.startswith(name + "-") for member in members)
    assert [trace.name for trace in traces_named("helios")] == list(SETS["helios"])
    with pytest.raises(FetchError, match=r"did you mean openb-default"):
        traces_named("openb-defualt")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_checksums_match_the_shared_copies(shared):
    """The shared folder keeps published files under the cache's folder names."""
    compared = 0
    for trace in TRACES.values():
        checksum = trace.sha256 if trace.member else trace.download.sha256
        copy = shared / trace.path
        if checksum is None or not copy.is_file():
            continue
        assert _sha256(copy) == checksum, trace.name
        compared += 1
    assert compared >= 20
