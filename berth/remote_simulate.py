"""``berth simulate`` command lines as tasks on a Ray cluster, for the experiment runners that
sweep over them (``docs/experiments``).

The input files the command lines name (``--trace``, ``--cluster``, ``--workload``,
``--config``) are read here once and put in Ray's object store; a task writes the ones its
command needs into a scratch folder on its node, runs the command there with ``--out`` in
scratch, and sends the output folder back to be written where the caller asked. Trace names
(``--trace itp-cluster04``) are not files: each node resolves them from its own trace cache.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from berth.executors import (
    Executor,
    folder_files,
    raise_failures,
    ray_map,
    scratch,
    write_files,
)

#: Options whose value may name an input file or folder.
FILE_OPTIONS = ("--trace", "--cluster", "--workload", "--config")

Inputs = dict[str, bytes | dict[str, bytes]]


def run_simulations(
    executor: Executor,
    commands: Sequence[list[str]],
    outs: Sequence[Path],
    labels: Sequence[str],
    done: Callable[[int, str], None] | None = None,
) -> list[float]:
    """Run ``berth simulate <command>`` for every command (without ``--out``) on the cluster,
    writing each one's outputs into the matching ``outs`` folder; returns each run's seconds
    on its worker. Raises SweepError naming the runs that failed, once the rest are written."""
    inputs: Inputs = {}
    for command in commands:
        for name in _file_arguments(command):
            path = Path(name)
            if name not in inputs and path.exists():
                inputs[name] = folder_files(path) if path.is_dir() else path.read_bytes()
    tasks = [("inputs", list(command)) for command in commands]
    results = ray_map(executor, _simulate, {"inputs": inputs}, tasks, labels, done, read_only=True)
    seconds = []
    for out, result in zip(outs, results, strict=True):
        if isinstance(result, tuple):
            files, took = result
            write_files(Path(out), files)
            seconds.append(took)
    raise_failures(results, "the other runs' outputs are written")
    return seconds


def _file_arguments(command: Sequence[str]) -> list[str]:
    """The values of the options that may name an input file or folder."""
    return [
        value for option, value in zip(command, command[1:], strict=False) if option in FILE_OPTIONS
    ]


def _simulate(inputs: Inputs, command: list[str]) -> tuple[dict[str, bytes], float]:
    """One command on a worker: its inputs written into scratch, its outputs read back."""
    from berth.cli import main

    with scratch() as folder:
        root = Path(folder)
        local = {}
        shipped = [name for name in _file_arguments(command) if name in inputs]
        for k, name in enumerate(dict.fromkeys(shipped)):
            target = root / "in" / str(k) / Path(name).name
            content = inputs[name]
            if isinstance(content, dict):
                write_files(target, content)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            local[name] = str(target)
        argv = [local.get(arg, arg) for arg in command]
        out = root / "out"
        errors = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(["simulate", *argv, "--out", str(out), "--quiet"])
            except SystemExit as exc:  # argparse's refusal: the run's own error, not a crash
                code = exc.code if isinstance(exc.code, int) else 2
        took = time.perf_counter() - started
        if code:
            lines = [line for line in errors.getvalue().splitlines() if line.strip()]
            raise RuntimeError(lines[-1] if lines else f"berth simulate exited with {code}")
        return folder_files(out), took
