"""Which process this is, and whether a process named that way is still there.

A run list must tell a run that is running now from one whose process is gone (a notebook
kernel restarted with a run stepped by hand, a script killed mid-run): both were last written
as "running". The store records which process writes each run (`this_process`), and a listing
asks `gone` of the runs still marked running. A pid alone is not a process: pids are reused,
so a process is its pid *and* the moment it started, read where the system keeps it (Linux's
``/proc``: start time in clock ticks since boot, with the boot's id and the pid namespace it is
counted in). Where that cannot be read, the pid alone is checked, which errs towards "still
there": a run is only called gone when that is certain.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from pathlib import Path
from typing import NamedTuple

__all__ = ["ProcessId", "gone", "this_process"]

_PROC = Path("/proc")


class ProcessId(NamedTuple):
    """A process as another process can recognise it later: where, which pid, since when.

    ``started`` is None where the system does not say when a process started (not Linux).
    """

    host: str
    pid: int
    started: str | None


def _started(pid: int | str) -> str | None:
    """When process ``pid`` started, as ``boot id/pid namespace/ticks since boot`` (Linux only).

    None if there is no such process (or a zombie: it has ended, only its exit status is left),
    or the system does not say.
    """
    try:
        return _start_of(pid)
    except OSError:
        return None


def _start_of(pid: int | str) -> str | None:
    """`_started`, raising `OSError` where ``/proc`` cannot be read for ``pid``.

    Not only for a pid no process has: a ``/proc`` mounted with ``hidepid`` (hardened
    multi-user hosts) hides another user's processes, alive or not.
    """
    stat = (_PROC / str(pid) / "stat").read_text()
    boot = (_PROC / "sys/kernel/random/boot_id").read_text().strip()
    namespace = os.readlink(_PROC / "self/ns/pid")
    fields = stat[stat.rfind(")") + 2 :].split()  # the name, in parentheses, may hold anything
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return f"{boot}/{namespace}/{fields[19]}"


@functools.cache
def this_process() -> ProcessId:
    """The process calling (a fork has a pid of its own: it is asked again in a new process)."""
    return ProcessId(socket.gethostname(), os.getpid(), _started("self"))


os.register_at_fork(after_in_child=this_process.cache_clear)


_gone: set[ProcessId] = set()
"""Processes found gone, by pid and start: a process that ended never comes back, so each is
checked once. One known by its pid alone (no start recorded: not Linux) is checked each time,
as its pid may be given to a later writer."""


def gone(host: object, pid: object, started: object) -> bool:
    """Whether the process ``(host, pid, started)`` has certainly ended.

    Only a process of this machine can be checked: one elsewhere is never called gone. A
    process of this machine started before its last boot is gone; one counted in another pid
    namespace (another container) cannot be checked, and is not. Values that name no process
    (a damaged row) are never called gone either.
    """
    if not isinstance(host, str) or not isinstance(pid, int) or pid <= 0:
        return False
    key = ProcessId(host, pid, started if isinstance(started, str) else None)
    if key in _gone:
        return True
    if host != this_process().host or not _ended(key):
        return False
    if key.started is not None:
        _gone.add(key)
    return True


def _ended(process: ProcessId) -> bool:
    """Whether ``process``, of this machine, has certainly ended."""
    here = this_process().started
    if process.started is None or here is None:
        return not _exists(process.pid)
    then, now = process.started.split("/"), here.split("/")
    if len(then) != 3:  # not a start this module wrote: cannot be told
        return False
    if then[0] != now[0]:  # another boot id: the machine has been restarted since
        return True
    if then[1] != now[1]:  # counted in another pid namespace (a container): cannot be checked
        return False
    try:
        started = _start_of(process.pid)
    except OSError:  # no such process, or one /proc hides (hidepid: another user's)
        return not _exists(process.pid)  # signal 0 tells them apart
    return started != process.started  # ended (a zombie now), or another with its pid


def _exists(pid: int) -> bool:
    """Whether some process has ``pid`` (it may be another one that was given the same pid)."""
    if sys.platform == "win32":  # os.kill would end it there: not checked, taken as there
        return True
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, only whether the pid exists is checked
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):  # another user's process; a bad pid
        return True
    return True
