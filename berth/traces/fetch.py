"""Fetching catalog traces into a local cache, and turning a trace argument into a file.

A file appears in the cache under its final name only once it is whole and, where the catalog
knows its checksum, verified: it is written to ``NAME.part`` first and renamed afterwards. So
a cached file is never downloaded again, and an interrupted download leaves only the ``.part``
file, which the next attempt resumes with an HTTP Range request when the server allows it. An
archive is checked before anything is taken out of it, and removed once its traces are out.

``BERTH_CACHE`` names the cache folder (default ``$XDG_CACHE_HOME/berth/traces``, or
``~/.cache/berth/traces``); ``BERTH_TRACE_MIRROR`` a base URL (or folder) to download from
instead of the publishers, holding the files at their cache paths (``itp/raw-traces.tar.gz``):
for sites without internet access, and for the tests.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from urllib.parse import urlparse

from rich.console import Console
from rich.filesize import decimal
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from berth import __version__
from berth.traces.catalog import SETS, TRACES, Download, FetchError, Trace, close_names

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, so two fetches of one file may collide
    fcntl = None  # type: ignore[assignment]

CACHE_ENV = "BERTH_CACHE"
MIRROR_ENV = "BERTH_TRACE_MIRROR"
_CHUNK = 1 << 20
_TIMEOUT = 60  # seconds without a byte before a download is given up
_credited: set[str] = set()  # datasets whose license and citation this process has shown


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _say(message: str) -> None:
    _stderr().print(message, markup=False)


def cache_dir() -> Path:
    """Where fetched traces are kept."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "berth" / "traces"


def source_url(download: Download) -> str:
    """Where ``download`` is fetched from: the mirror when one is set, else its publisher."""
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        return download.url
    if "://" not in mirror:
        mirror = Path(mirror).expanduser().resolve().as_uri()
    return f"{mirror.rstrip('/')}/{download.path}"


def cached(trace: Trace) -> Path | None:
    """The trace's file in the cache, if it is there whole."""
    path = cache_dir() / trace.path
    size = trace.size if trace.member else trace.download.size
    if path.is_file() and (size is None or path.stat().st_size == size):
        return path
    return None


def fetch(trace: Trace) -> Path:
    """The trace's file in the cache, downloaded (and taken out of its archive) if absent,
    with the files read beside it (``companions``)."""
    path = cached(trace) or _fetch(trace)
    for name in trace.companions:
        fetch(TRACES[name])
    return path


def resolve_trace(argument: str | Path) -> Path:
    """A trace argument as a file: an existing path as it is (a local copy wins), else a
    catalog name, fetched into the cache first if it is not there. A bare word that is neither
    but close to a name is refused naming the close ones; anything else is returned unchanged
    for the reader to report."""
    path = Path(argument)
    text = str(argument)
    if path.exists():
        return path
    if text in TRACES:
        trace = TRACES[text]
        if cached(trace) is None:
            _say(f"note: {text} is not in {cache_dir()}: fetching it")
        return fetch(trace)
    if text in SETS:
        members = SETS[text]
        raise FetchError(
            f"{text} names {len(members)} traces; give one of them ({', '.join(members[:3])}, "
            "...; berth trace get --list)"
        )
    close = close_names(text) if os.sep not in text and "/" not in text else []
    if close:
        raise FetchError(
            f"{text}: no such file or trace (did you mean {', '.join(close)}? berth trace get "
            "--list shows the traces berth can fetch)"
        )
    return path


def trace_folder(local: Path, name: str) -> Path:
    """Where the files of trace ``name`` and its set are: ``local`` when that folder exists
    (the experiment scripts' copies beside a checkout), else the cache folder ``name`` is
    fetched into. Exits with the fetch's error, for scripts."""
    if local.is_dir():
        return local
    try:
        return resolve_trace(name).parent
    except FetchError as exc:
        sys.exit(f"error: {exc}")


def _fetch(trace: Trace) -> Path:
    download = trace.download
    with _locked(cache_dir() / ".lock"):
        path = cached(trace)  # another process may have fetched it meanwhile
        if path is not None:
            return path
        _download(download, trace.name)
        if download.archive:
            _extract(download)
        path = cached(trace)
    if path is None:  # the archive did not hold it in the size the catalog says
        raise FetchError(f"{trace.name}: {trace.path} is not in the cache after fetching it")
    if not trace.verified:
        _say(f"warning: {trace.name}: no checksum is known for it, so the download is unverified")
    if trace.dataset.title not in _credited:
        _credited.add(trace.dataset.title)
        _say(f"{trace.dataset.title}: {trace.dataset.license}; cite {trace.dataset.citation}")
    return path


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    """One process at a time fetches into the cache (others wait, then find their file)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# -- downloading ------------------------------------------------------------------------------


def _download(download: Download, name: str) -> None:
    """``download`` into its cache path, through a ``.part`` file renamed once whole and
    verified; a complete copy already there is kept."""
    dest = cache_dir() / download.path
    if dest.is_file() and (download.size is None or dest.stat().st_size == download.size):
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    url = source_url(download)
    have = part.stat().st_size if part.is_file() else 0
    response = _request(url, have)
    if response is None:  # the server refused the range: the part is stale, start over
        part.unlink()
        have = 0
        response = _request(url, 0)
        assert response is not None
    with response:
        digest = hashlib.sha256()
        resumed = have > 0 and response.status == 206
        if resumed:
            _check_range(response, have, url, part)
            with open(part, "rb") as existing:
                _copy(existing, digest.update)
        else:
            have = 0
        length = response.headers.get("Content-Length", "")
        total = have + int(length) if length.isdigit() else download.size
        size = f" ({decimal(total)})" if total else ""
        again = "resuming" if resumed else "downloading"
        _say(f"{name}: {again} {Path(download.path).name}{size} from {url}")
        got = have
        with open(part, "ab" if resumed else "wb") as sink, _bar(name, total, have) as advance:

            def write(chunk: bytes) -> None:
                nonlocal got
                sink.write(chunk)
                digest.update(chunk)
                got += len(chunk)
                advance(len(chunk))

            try:
                _copy(response, write)
            except (OSError, http.client.HTTPException) as exc:
                raise _interrupted(name, got, total, f" ({exc})") from None
    if total is not None and got < total:
        raise _interrupted(name, got, total, ": the connection closed early")
    _keep(
        part,
        dest,
        download.sha256,
        digest.hexdigest(),
        f"{name}: {url}",
        "; the download was deleted",
    )


def _keep(
    part: Path, dest: Path, expected: str | None, actual: str, what: str, tail: str = ""
) -> None:
    """Rename a finished ``part`` file to ``dest`` if its checksum is the expected one (or none
    is known), else delete it and say so."""
    if expected is not None and actual != expected:
        part.unlink()
        raise FetchError(
            f"{what} does not match its checksum (expected sha256 {expected}, got {actual}){tail}"
        )
    os.replace(part, dest)


def _request(url: str, start: int) -> http.client.HTTPResponse | None:
    """The server's response for ``url`` from byte ``start``; None if the range is refused."""
    headers = {"User-Agent": f"berth/{__version__}"}
    if start:
        headers["Range"] = f"bytes={start}-"
    try:
        return urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=_TIMEOUT
        )
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and start:
            return None
        raise FetchError(f"{url}: the server answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise FetchError(_unreachable(url, exc.reason)) from None
    except (OSError, http.client.HTTPException) as exc:
        raise FetchError(_unreachable(url, exc)) from None


def _unreachable(url: str, reason: object) -> str:
    host = urlparse(url).hostname or url
    if isinstance(reason, socket.gaierror):
        why = f"the name does not resolve ({reason.strerror}): no network, or no DNS"
    elif isinstance(reason, ConnectionRefusedError):
        why = "the connection was refused"
    elif isinstance(reason, TimeoutError):
        why = "it did not answer in time"
    elif isinstance(reason, OSError) and reason.strerror:
        why = reason.strerror
    else:
        why = str(reason)
    return f"cannot reach {host} for {url}: {why}"


def _check_range(response: http.client.HTTPResponse, start: int, url: str, part: Path) -> None:
    answered = response.headers.get("Content-Range", "")
    if not answered.startswith(f"bytes {start}-"):
        part.unlink()
        raise FetchError(
            f"{url}: asked for the bytes from {start} on, the server sent {answered!r}; the "
            "partial download was deleted, so the same command starts over"
        )


def _copy(source: IO[bytes], write: Callable[[bytes], object]) -> None:
    while chunk := source.read(_CHUNK):
        write(chunk)


def _interrupted(name: str, got: int, total: int | None, why: str) -> FetchError:
    of = f" of {total:,}" if total else ""
    return FetchError(
        f"{name}: download interrupted after {got:,}{of} bytes{why}; nothing was kept as "
        "complete, and the same command resumes it"
    )


@contextmanager
def _bar(name: str, total: int | None, done: int) -> Iterator[Callable[[int], None]]:
    """A byte progress bar on stderr, drawn only on a terminal."""
    console = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as p:
        task = p.add_task(name, total=total, completed=done)
        yield lambda n: p.advance(task, n)


# -- archives ---------------------------------------------------------------------------------


def _extract(download: Download) -> None:
    """Take the catalog's traces out of the (verified) archive, then remove it."""
    archive = cache_dir() / download.path
    wanted = [
        trace for trace in TRACES.values() if trace.download == download and cached(trace) is None
    ]
    seen: list[str] = []
    try:
        if download.archive == "zip":
            with zipfile.ZipFile(archive) as bundle:
                for info in bundle.infolist():
                    if not info.is_dir():
                        _take(info.filename, lambda info=info: bundle.open(info), wanted, seen)
        else:
            with tarfile.open(archive, "r|gz") as bundle:  # one pass: archives may be large
                for member in bundle:
                    if member.isfile():
                        _take(member.name, lambda m=member: bundle.extractfile(m), wanted, seen)
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
        archive.unlink()
        raise FetchError(
            f"{archive}: not a readable {download.archive} archive ({exc}); it was deleted, so "
            "the same command downloads it again"
        ) from None
    if wanted:
        held = ", ".join(seen[:8]) + (", ..." if len(seen) > 8 else "")
        names = ", ".join(trace.member or trace.name for trace in wanted)
        raise FetchError(f"{archive}: has no {names} (it holds {held or 'no files'})")
    archive.unlink()


def _take(
    name: str, open_member: Callable[[], IO[bytes] | None], wanted: list[Trace], seen: list[str]
) -> None:
    """Extract archive member ``name`` if it is a wanted trace (removing it from ``wanted``)."""
    seen.append(name)
    path = name.removeprefix("./")
    for trace in wanted:
        member = trace.member or ""
        if path == member or path.endswith("/" + member):
            source = open_member()
            assert source is not None
            with source:
                _place(source, trace)
            wanted.remove(trace)
            return


def _place(source: IO[bytes], trace: Trace) -> None:
    dest = cache_dir() / trace.path
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    with open(part, "wb") as sink:
        _copy(source, lambda chunk: (sink.write(chunk), digest.update(chunk)))
    what = f"{trace.name}: {trace.member} in {Path(trace.download.path).name}"
    _keep(part, dest, trace.sha256, digest.hexdigest(), what)
