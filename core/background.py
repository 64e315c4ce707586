"""Work beside the caller: a job in a forked process where a fork is safe, else run when its result is asked for."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from typing import Any


def fork_is_safe() -> bool:
    """Whether in_background may fork here: Linux (macOS offers fork, but its system libraries are not safe in a
    forked child), the main thread (see in_background), and a second core to run on."""
    return (threading.current_thread() is threading.main_thread() and sys.platform.startswith("linux")
            and "fork" in multiprocessing.get_all_start_methods() and (os.cpu_count() or 1) > 1)


def in_background(job: Callable[[], Any], wanted: bool) -> Callable[[], Any]:
    """Start job in a forked process (when wanted and safe) and return a function that waits for its result;
    otherwise a function that runs it then. The child inherits the parent's memory (no copy of the inputs) and
    sends back only the result, pickled. Only from the main thread: a fork copies just the calling thread, and
    a server's other threads (the dashboard's) may hold locks the child would wait on forever."""
    if not (wanted and fork_is_safe()):
        return job
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_run_and_send, args=(job, send), daemon=True)
    proc.start()
    send.close()

    def result() -> Any:
        try:
            ok, value = receive.recv()
        except EOFError:  # the child died without a word (killed, out of memory): do the work here
            ok, value = True, job()
        finally:
            receive.close()
            proc.join()
        if not ok:
            raise value
        return value

    return result


def _run_and_send(job: Callable[[], Any], send) -> None:
    """The forked child's body: the job's result, or the exception it raised, down the pipe."""
    try:
        out = (True, job())
    except BaseException as exc:  # noqa: BLE001 - re-raised in the parent, where it belongs
        out = (False, exc)
    send.send(out)
    send.close()
