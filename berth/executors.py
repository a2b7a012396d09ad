"""Where a sweep's runs execute: worker processes on this machine (``local``, the default), or
tasks on a Ray cluster (``ray``), for sweeps that outgrow one machine.

On Ray each run is one task. What every run reads (parsed inputs, configurations) is put in
Ray's object store once and handed to the tasks by reference, so a node fetches it once
instead of every run re-reading files the node may not even have. A task returns its result
(and, for runs that write a folder, the folder's files) to the caller, which writes them where
a local sweep would: the outputs do not depend on where a run executed.

A task whose worker dies (the process killed, the node lost) is run again by Ray, up to
``RETRIES`` times; a run that raises fails once, with its error, and the rest go on. Ray is an
optional dependency (``pip install 'berth[ray]'``), imported only when asked for.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: How often Ray runs a task again after its worker died.
RETRIES = 3
#: How long to wait for the head's port to answer.
CONNECT_SECONDS = 10

EXECUTOR_HELP = (
    "where the runs execute: local (processes on this machine, the default), ray (a Ray "
    "cluster started for this sweep on this machine), ray=auto (the Ray cluster this machine "
    "has joined) or ray=HOST:PORT (that cluster's head); Ray needs pip install 'berth[ray]'"
)


class SweepError(Exception):
    """The executor cannot be used, or runs failed (each named with its error)."""


@dataclass(frozen=True, slots=True)
class Executor:
    kind: str  # "local" or "ray"
    #: With ray: None starts a cluster on this machine, "auto" joins the one it belongs to,
    #: else the head's address.
    address: str | None = None

    @property
    def remote(self) -> bool:
        return self.kind == "ray"

    def __str__(self) -> str:
        return self.kind if self.address is None else f"{self.kind}={self.address}"


LOCAL = Executor("local")


def add_executor_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--executor", type=_executor_type, default=LOCAL, metavar="WHERE", help=EXECUTOR_HELP
    )


def _executor_type(text: str) -> Executor:
    try:
        return parse_executor(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_executor(text: str) -> Executor:
    """``local``, ``ray``, ``ray=auto`` or ``ray=ADDRESS``."""
    kind, has_address, address = text.partition("=")
    if kind == "local" and not has_address:
        return LOCAL
    if kind == "ray":
        if has_address and not address.strip():
            raise ValueError("ray= needs an address (ray=auto, or ray=HOST:PORT)")
        return Executor("ray", address.strip() or None)
    raise ValueError(f"{text!r}: expected local, ray, ray=auto or ray=HOST:PORT")


@dataclass(frozen=True, slots=True)
class Failure:
    """A run that raised: its label and its error, one line."""

    label: str
    error: str

    def __str__(self) -> str:
        return f"{self.label}: {self.error}"


def failed(results: Sequence[Any]) -> list[Failure]:
    return [r for r in results if isinstance(r, Failure)]


def raise_failures(results: Sequence[Any], written: str = "") -> None:
    """Raise SweepError naming every failed run (``written``: what was kept all the same)."""
    failures = failed(results)
    if failures:
        lines = "; ".join(str(f) for f in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        raise SweepError(
            f"{len(failures)} of {len(results)} runs failed: {lines}{more}"
            + (f"; {written}" if written else "")
        )


def ray_map(
    executor: Executor,
    run: Callable[[Any, Any], Any],
    shared: dict[Any, Any],
    tasks: Sequence[tuple[Any, Any]],
    labels: Sequence[str],
    done: Callable[[int, str], None] | None = None,
    read_only: bool = False,
) -> list[Any]:
    """``run(shared[key], item)`` for every ``(key, item)`` in ``tasks``, each as a Ray task;
    results (or a Failure) in the order of ``tasks``. ``done`` hears how many runs have finished
    and the label of the last one. ``run`` must be a module-level function (workers import
    it). With ``read_only`` (``run`` never changes what it is given) a worker process
    deserializes each shared value once and hands the same object to every run it takes;
    otherwise each run gets its own copy."""
    ray = _import_ray()
    started_here = _connect(ray, executor)
    try:
        refs = {key: ray.put(value) for key, value in shared.items()}
        remote = ray.remote(max_retries=RETRIES, retry_exceptions=False)(_call)
        # The reference goes inside a list, so Ray hands it over unresolved.
        index = {
            remote.remote(run, [refs[key]], item, read_only): k
            for k, (key, item) in enumerate(tasks)
        }
        results: list[Any] = [None] * len(tasks)
        waiting = list(index)
        finished = 0
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                k = index[ref]
                results[k] = _outcome(ray, ref, labels[k])
                finished += 1
                if done is not None:
                    done(finished, labels[k])
        return results
    finally:
        if started_here:
            ray.shutdown()


#: In a worker process: shared values already deserialized, by reference (read-only runs).
_SHARED: dict[Any, Any] = {}
_SHARED_KEPT = 4


def _call(run: Callable[[Any, Any], Any], ref: list[Any], item: Any, read_only: bool) -> Any:
    import ray

    if not read_only:
        return run(ray.get(ref[0]), item)
    value = _SHARED.get(ref[0])
    if value is None:
        if len(_SHARED) >= _SHARED_KEPT:
            _SHARED.clear()
        value = _SHARED[ref[0]] = ray.get(ref[0])
    return run(value, item)


def _outcome(ray: Any, ref: Any, label: str) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if getattr(exc, "cause", None) is not None else exc
        return Failure(label, f"{type(cause).__name__}: {_first_line(cause)}".rstrip(": "))
    except ray.exceptions.RayError as exc:  # its worker died more than RETRIES times
        return Failure(label, f"{type(exc).__name__}: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SweepError(
            "--executor ray needs Ray, which is not installed: pip install 'berth[ray]'"
        ) from None
    return ray


def _connect(ray: Any, executor: Executor) -> bool:
    """Join or start the cluster; returns whether this call started the connection (and so
    should end it). Without an address a cluster of this machine's CPUs is started."""
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
    }
    if executor.address not in (None, "auto"):
        _reachable(executor)
    try:
        if executor.address is None:
            ray.init(num_cpus=os.cpu_count() or 1, **options)
        else:
            ray.init(address=executor.address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SweepError(
            f"--executor {executor}: cannot reach the Ray cluster: {_first_line(exc) or exc}"
        ) from None
    return True


def _reachable(executor: Executor) -> None:
    """Refuse at once a head nothing listens on (Ray would keep retrying for minutes)."""
    address = str(executor.address).removeprefix("ray://")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise SweepError(f"--executor {executor}: expected HOST:PORT of the Ray head")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise SweepError(
            f"--executor {executor}: cannot reach the Ray cluster: {exc.strerror or exc}"
        ) from None


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by path relative to it: what a task sends back."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write what ``folder_files`` gathered under ``folder``."""
    for relative, data in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def scratch() -> tempfile.TemporaryDirectory:
    """A folder a task writes its run into before sending the files back."""
    return tempfile.TemporaryDirectory(prefix="berth-run-")
