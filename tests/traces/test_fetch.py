"""``berth trace get`` and ``--trace NAME`` against a local HTTP server standing in for the
publishers (through ``BERTH_TRACE_MIRROR``): downloads are verified, cached, resumed, and
refused in one line when corrupt, cut short or unreachable. Nothing here reaches the internet."""

from __future__ import annotations

import csv
import hashlib
import io
import socket
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from berth.cli import main
from berth.traces import catalog
from berth.traces.catalog import Dataset, Download, Trace
from berth.traces.fetch import CACHE_ENV, MIRROR_ENV

ITP = "job_id,submission_time,duration,num_gpu\n" + "".join(
    f"j{i},{i * 600},300,{1 + i % 2}\n" for i in range(6)
)
TESTS = Dataset("Test traces", "http://example.invalid", "MIT", "nobody")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Server:
    """Files by URL path; ``cut`` sends only that many bytes of a file (while its
    Content-Length promises all of them) and closes; ``ranges`` honours Range requests."""

    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    ranges: bool = True
    requests: list[tuple[str, str | None]] = field(default_factory=list)


def _handler(state: Server) -> type[BaseHTTPRequestHandler]:
    class Files(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server name)
            asked = self.headers.get("Range")
            state.requests.append((self.path, asked))
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            start = 0
            if asked and state.ranges:
                start = int(asked.removeprefix("bytes=").removesuffix("-"))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            payload = body[start:]
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.path in state.cut:
                payload = payload[: state.cut[self.path]]
                self.close_connection = True
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    return Files


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: Server) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    monkeypatch.setenv(MIRROR_ENV, server.url)
    return folder


def publish(monkeypatch, server: Server, name: str, data: bytes, sha: str | None = "") -> Trace:
    """A catalog entry for ``data``, served at test/NAME.csv (``sha`` "" means its real one)."""
    path = f"test/{name}.csv"
    server.files[f"/{path}"] = data
    checksum = sha256(data) if sha == "" else sha
    download = Download(f"https://example.invalid/{path}", path, checksum, len(data))
    trace = Trace(name, "a test trace", "itp", TESTS, download, path)
    monkeypatch.setitem(catalog.TRACES, name, trace)
    return trace


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def test_a_download_is_verified_cached_and_not_fetched_again(cache, server, monkeypatch, capsys):
    publish(monkeypatch, server, "tiny", ITP.encode())
    rc, out, err = run(capsys, "trace", "get", "tiny")
    assert rc == 0, err
    path = cache / "test/tiny.csv"
    assert out.strip() == str(path)
    assert path.read_text() == ITP
    assert not path.with_name("tiny.csv.part").exists()
    assert "tiny: downloading tiny.csv" in err and "Test traces: MIT; cite nobody" in err
    rc, out, err = run(capsys, "trace", "get", "tiny")
    assert (rc, out.strip(), err) == (0, str(path), "")
    assert len(server.requests) == 1


def test_a_corrupt_download_is_deleted_naming_both_checksums(cache, server, monkeypatch, capsys):
    expected = sha256(b"what the publisher released")
    publish(monkeypatch, server, "tiny", ITP.encode(), sha=expected)
    rc, out, err = run(capsys, "trace", "get", "tiny")
    assert rc == 1 and out == ""
    assert f"expected sha256 {expected}, got {sha256(ITP.encode())}" in err
    assert "the download was deleted" in err
    assert list((cache / "test").iterdir()) == []


def test_an_interrupted_download_is_an_error_and_resumes(cache, server, monkeypatch, capsys):
    data = ITP.encode()
    publish(monkeypatch, server, "tiny", data)
    server.cut["/test/tiny.csv"] = 40
    rc, out, err = run(capsys, "trace", "get", "tiny")
    assert rc == 1 and out == ""
    assert f"tiny: download interrupted after 40 of {len(data)} bytes" in err
    assert len(err.strip().splitlines()) == 2  # the "downloading" line and the error
    final = cache / "test/tiny.csv"
    assert not final.exists()
    assert final.with_name("tiny.csv.part").stat().st_size == 40
    del server.cut["/test/tiny.csv"]
    rc, out, err = run(capsys, "trace", "get", "tiny")
    assert rc == 0, err
    assert server.requests[-1] == ("/test/tiny.csv", "bytes=40-")
    assert "tiny: resuming tiny.csv" in err
    assert final.read_bytes() == data


def test_a_server_without_ranges_starts_over(cache, server, monkeypatch, capsys):
    publish(monkeypatch, server, "tiny", ITP.encode())
    part = cache / "test/tiny.csv.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes of another attempt")
    server.ranges = False
    rc, _, err = run(capsys, "trace", "get", "tiny")
    assert rc == 0, err
    assert (cache / "test/tiny.csv").read_text() == ITP


def _tar(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_an_archive_is_verified_then_its_traces_taken_out(cache, server, monkeypatch, capsys):
    first, second = ITP.encode(), ITP.replace("j", "k").encode()
    data = _tar({"first.csv": first, "data/second.csv": second, "README": b"x"})
    server.files["/test/bundle.tar.gz"] = data
    download = Download(
        "https://example.invalid/b.tar.gz", "test/bundle.tar.gz", sha256(data), None
    )
    for name, member, body in (("one", "first.csv", first), ("two", "second.csv", second)):
        trace = Trace(name, "", "itp", TESTS, download, f"test/{name}.csv", member,
                      sha256(body), len(body))  # fmt: skip
        monkeypatch.setitem(catalog.TRACES, name, trace)
    rc, out, err = run(capsys, "trace", "get", "one")
    assert rc == 0, err
    assert out.strip() == str(cache / "test/one.csv")
    assert (cache / "test/one.csv").read_bytes() == first
    assert (cache / "test/two.csv").read_bytes() == second  # by the end of its path
    assert not (cache / "test/bundle.tar.gz").exists()
    rc, out, _ = run(capsys, "trace", "get", "two")
    assert (rc, out.strip()) == (0, str(cache / "test/two.csv"))
    assert len(server.requests) == 1


def test_an_unverified_zip_warns_and_a_broken_one_is_deleted(cache, server, monkeypatch, capsys):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data/Venus/cluster_log.csv", ITP)
        archive.writestr("data/Earth/cluster_log.csv", "other")
    server.files["/test/data.zip"] = buffer.getvalue()
    download = Download("https://example.invalid/data.zip", "test/data.zip", None, None)
    trace = Trace("venus", "", "itp", TESTS, download, "test/venus.csv", "Venus/cluster_log.csv")
    monkeypatch.setitem(catalog.TRACES, "venus", trace)
    rc, out, err = run(capsys, "trace", "get", "venus")
    assert rc == 0, err
    assert (cache / "test/venus.csv").read_text() == ITP
    assert "warning: venus: no checksum is known for it, so the download is unverified" in err
    (cache / "test/venus.csv").unlink()
    server.files["/test/data.zip"] = b"<html>not an archive</html>"
    rc, out, err = run(capsys, "trace", "get", "venus")
    assert rc == 1
    assert f"error: {cache / 'test/data.zip'}: not a readable zip archive" in err
    assert not (cache / "test/data.zip").exists()


def test_an_unknown_name_is_refused_with_the_close_ones(cache, server, capsys):
    rc, out, err = run(capsys, "trace", "get", "itp-cluster4")
    assert (rc, out) == (1, "")
    assert err.startswith("error: unknown trace 'itp-cluster4' (did you mean itp-cluster04")
    assert server.requests == []


def test_unreachable_and_missing_files_are_one_line(cache, server, monkeypatch, capsys):
    publish(monkeypatch, server, "tiny", ITP.encode())
    del server.files["/test/tiny.csv"]
    rc, _, err = run(capsys, "trace", "get", "tiny")
    assert rc == 1
    assert err.strip().splitlines()[-1].endswith("the server answered HTTP 404 Not Found")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{port}")
    rc, _, err = run(capsys, "trace", "get", "tiny")
    assert (rc, err) == (
        1,
        f"error: cannot reach 127.0.0.1 for http://127.0.0.1:{port}/test/tiny.csv: the "
        "connection was refused\n",
    )


def test_simulate_takes_a_trace_by_name(cache, server, monkeypatch, tmp_path, capsys):
    publish(monkeypatch, server, "tiny", ITP.encode())
    out = tmp_path / "out"
    argv = ["simulate", "--trace", "tiny", "--cluster-from-trace", "--quiet", "--out", str(out)]
    rc, _, err = run(capsys, *argv)
    assert rc == 0, err
    assert f"note: tiny is not in {cache}: fetching it" in err
    with open(out / "pods.csv", newline="") as handle:
        assert sorted(row["job"] for row in csv.DictReader(handle)) == [f"j{i}" for i in range(6)]
    # a local file of that name comes first
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").write_text(ITP.splitlines()[0] + "\nlocal,0,60,1\n")
    rc, _, err = run(capsys, *argv, "--force")
    assert rc == 0, err
    with open(out / "pods.csv", newline="") as handle:
        assert [row["job"] for row in csv.DictReader(handle)] == ["local"]
    assert len(server.requests) == 1


def test_a_set_name_is_not_one_trace(cache, server, capsys):
    rc, _, err = run(capsys, "trace", "info", "itp")
    assert rc == 1
    assert err.startswith("error: itp names 10 traces; give one of them (itp-cluster01,")
    assert server.requests == []


def test_trace_info_by_name_and_the_list(cache, server, monkeypatch, capsys):
    publish(monkeypatch, server, "tiny", ITP.encode())
    rc, out, err = run(capsys, "trace", "info", "tiny")
    assert rc == 0, err
    assert f"{cache / 'test/tiny.csv'}: itp jobs" in out
    rc, out, _ = run(capsys, "trace", "get", "--list")
    assert rc == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["tiny"][-2:] == ["yes", "yes"]  # checksum known, cached
    assert rows["itp-cluster04"][1:] == ["itp", "1.9", "MB", "tar.gz", "MIT", "yes"]
    assert rows["helios-venus"][-1] == "no"
    assert f"Cache: {cache}" in out
