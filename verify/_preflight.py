"""Checks made before the first check runs, and interrupts that keep results: shared by ``python -m verify``
(:mod:`verify.cli`), ``python -m verify calibrate`` (:mod:`verify.calibrate`) and ``verify.run``.

Every refusal is one ``error: ...`` line (``SystemExit``, exit status 1), before any work; :func:`interrupts` turns
the first SIGINT or SIGTERM into a ``KeyboardInterrupt`` that the command catches to write what finished."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

from numerics import check_device

from .claim import select
from .context import CheckContext
from .sequential import MAX_ROUND
from .validation import path_or_none

#: exit status after SIGINT or SIGTERM (the finished work is written first)
EXIT_INTERRUPTED = 130
#: seconds allowed to reach a ``--scheduler`` before the run is refused
SCHEDULER_TIMEOUT_S = 5.0


def refuse(message: str) -> None:
    """Stop the command with ``error: <message>`` (exit status 1)."""
    raise SystemExit(f"error: {message}")


def command(argv: Sequence[str]) -> str:
    """The shell command ``python -m verify ARGV`` (each argument quoted where a shell needs it)."""
    return shlex.join(["python", "-m", "verify", *argv])


def resume_line(sig: str, where: str, kept: str, argv: Sequence[str], cache_dir: Path | None, off: str,
                reused: str = "") -> str:
    """The one line printed after the signal ``sig`` stopped ``where``: what was ``kept`` and how to resume (the same
    command, :func:`command` of ``argv``; ``reused``: what the rerun reuses; ``off``: what it does without a cache)."""
    cache = (f"the cache {cache_dir} keeps the finished cells" if cache_dir is not None
             else f"the cache is off (--cache-dir none): {off}")
    return (f"interrupted by {sig} during {where}: {kept}; to resume, run the same command again "
            f"({command(argv)}): {reused}{cache}")


def cache_dir_option(value: Path | None, profile: str) -> Path | None:
    """The cache directory of ``--cache-dir``: ``None`` for ``none``, the default ``.cache/verify/<profile>``."""
    return Path(".cache") / "verify" / profile if value is None else path_or_none(value)


def select_checks(ids: list[str] | None) -> list:
    """The specs of ``--only`` ids (:func:`verify.claim.select`); an unknown id is one ``error: ...`` line."""
    try:
        return select(ids)
    except ValueError as exc:
        refuse(f"--only: {exc}")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of ``python -m verify`` and ``calibrate``: which checks, their sizes, where they run, what they
    cache, and sequential verdicts (per seed for ``calibrate``)."""
    p.add_argument("--profile", choices=("quick", "paper", "smoke"), default="quick", metavar="{quick,paper}",
                   help="quick: minutes on a laptop (default); paper: the papers' scale "
                        "(smoke: tiny sizes for the tests, verdicts meaningless)")
    p.add_argument("--only", nargs="+", metavar="ID", help="only these claim ids (e.g. A1 B2)")
    p.add_argument("--budget", type=float, default=None, metavar="MINUTES",
                   help="sequential verdicts: run every check, then spend the rest of MINUTES (wall clock) on rounds "
                        "of replicates of the undecided ones; a rerun continues from the cached rounds")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="sequential verdicts with at most N rounds after the first per check (reproducible on any "
                        "machine; with --budget, whichever ends first)")
    p.add_argument("--cache-dir", type=Path, metavar="DIR",
                   help="on-disk cache for sweep cells (default .cache/verify/<profile>; 'none' disables)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes: checks side by side, each at one thread (a lone check, --budget, "
                        "--device cuda or --executor dask: a check's sweeps); >= 1, or -1 for all cores "
                        "(default: number of CPU cores)")
    p.add_argument("--device", default="cpu", help="torch device for the estimators: cpu (default), cuda or cuda:K")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="where sweep cells run: local processes (default) or a Dask cluster")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="Dask scheduler address (tcp://host:port); omitted with --executor dask: an in-process cluster")


def run_context(args: argparse.Namespace, **fields) -> CheckContext:
    """The base context of a command's runs from the options it shares with the other commands, each checked:
    ``--jobs`` (``>= 1``, or ``-1`` for all cores), ``--budget`` (minutes, finite and ``> 0``), ``--rounds`` (in
    ``[0, MAX_ROUND]``), ``--profile``, ``--device`` (format, and a CUDA device that exists:
    :func:`numerics.check_device`), ``--executor`` / ``--scheduler`` (:func:`check_executor`) and ``--cache-dir``
    (created and written to once); ``fields``: the command's other fields of :class:`~verify.context.CheckContext`,
    refused under their option's name."""
    if args.jobs is not None and args.jobs != -1 and args.jobs < 1:
        refuse(f"--jobs must be an integer >= 1, or -1 for all cores, got {args.jobs}")
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        refuse(f"--budget must be a number of minutes > 0, got {args.budget:g}")
    if args.rounds is not None and not 0 <= args.rounds <= MAX_ROUND:
        refuse(f"--rounds must be an integer in [0, {MAX_ROUND}], got {args.rounds}")
    try:
        base = CheckContext(profile=args.profile, cache_dir=cache_dir_option(args.cache_dir, args.profile),
                            device=args.device, n_jobs=(os.cpu_count() or 1) if args.jobs is None else args.jobs,
                            executor=args.executor, scheduler=args.scheduler, **fields)
        check_device("device", base.device)  # a CUDA device this machine has
    except (TypeError, ValueError) as exc:
        field = str(exc).split()[0]  # the option behind the field: --jobs for n_jobs, --cache-dir for cache_dir
        option = "--jobs" if field == "n_jobs" else "--" + field.replace("_", "-")
        refuse(f"{option}: " + str(exc).replace("device='cpu'", "--device cpu"))
    check_executor(args.executor, args.scheduler)
    if base.cache_dir is not None:
        check_writable_dir("--cache-dir", base.cache_dir)
    return base


def check_executor(executor: str, scheduler: str | None) -> None:
    """``--scheduler`` only with dask; dask installed; the scheduler reachable within :data:`SCHEDULER_TIMEOUT_S`."""
    if scheduler and executor != "dask":
        refuse("--scheduler needs --executor dask")
    if executor != "dask":
        return
    try:
        import distributed  # noqa: F401
    except ImportError:
        refuse("--executor dask needs dask[distributed] installed (pip install 'dask[distributed]')")
    if scheduler and scheduler != "local":
        check_scheduler_reachable(scheduler, SCHEDULER_TIMEOUT_S)


def check_scheduler_reachable(address: str, timeout: float) -> None:
    """Connect to the Dask scheduler at ``address`` within about ``timeout`` seconds in all: TCP, then the
    scheduler's ``identity`` request (no client object is made: a failed one would hang the interpreter's exit);
    refuse the run when either fails."""
    import asyncio

    from distributed.comm import connect

    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in ("tcp", "tls"):
        refuse(f"--scheduler {address}: only tcp:// and tls:// addresses are supported")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        refuse(f"--scheduler {address}: expected tcp://HOST:PORT")
    t0 = time.monotonic()
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        refuse(f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({exc.strerror or exc}); "
               "start it, or omit --scheduler for an in-process cluster")
    left = max(1.0, timeout - (time.monotonic() - t0))

    async def identity() -> object:
        comm = await connect(f"{scheme}://{rest}", timeout=left)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        reply = asyncio.run(asyncio.wait_for(identity(), left))
        problem = ("" if isinstance(reply, dict) and reply.get("type") == "Scheduler"
                   else f"the reply is not a scheduler's: {str(reply)[:120]}")
    except Exception as exc:  # noqa: BLE001 - any failure (timeout, garbage reply) means: no scheduler there
        problem = f"{type(exc).__name__}: {str(exc)[:120]}"
    if problem:
        refuse(f"{address} accepts connections but no Dask scheduler answered within {timeout:g} s ({problem}); "
               "check the address, or omit --scheduler for an in-process cluster")


def check_writable_dir(opt: str, d: Path) -> None:
    """``d`` exists (created if needed) and a file can be written in it."""
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as exc:
        refuse(f"{opt} {d}: not a writable directory ({exc.strerror or exc})")


def check_writable_file(opt: str, f: Path) -> None:
    """``f`` can be written: not a directory, its directory writable, the file itself writable if it exists."""
    if f.is_dir():
        refuse(f"{opt} {f}: is a directory")
    check_writable_dir(opt, f.parent if str(f.parent) else Path("."))
    if f.exists() and not os.access(f, os.W_OK):
        refuse(f"{opt} {f}: the file is not writable")


@contextlib.contextmanager
def interrupts() -> Iterator[dict]:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` (the first one, while ``armed``); the yielded dict
    records the signal's name.  Later signals are only noted, so that the cleanup and the outputs finish.
    Outside the main thread (no signal handlers there) nothing changes; the previous handlers are restored."""
    state: dict = {"signal": None, "armed": True}

    def handler(signum: int, frame: object) -> None:
        if state["signal"] is None:
            state["signal"] = signal.Signals(signum).name
            if state["armed"]:
                raise KeyboardInterrupt(state["signal"])

    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield state
    finally:
        for s, h in old.items():
            signal.signal(s, h)
