"""Calls into anyio's worker processes whose answers come back through a private file.

Agents move pure-Python work that would hold the daemon's GIL for seconds (dreaming's plan,
abstraction's Louvain) into anyio's worker pool. anyio's worker writes its answer to the
pipe with one unbuffered ``write`` and does not check how much of it went out. A signal
that stops the worker while it is blocked writing into a full pipe (a debugger or profiler
attaching, ``SIGSTOP``/``SIGCONT``, a laptop suspending) ends that ``write`` short, and the
daemon then waits forever for the missing bytes: a profiled 100k dreaming run hung exactly
so (8.7 MB of term cache in the answer). So the worker pickles its answer to a new file
(``O_EXCL``, owner-only) under a random name the daemon chose in its private data folder,
and answers the pipe with ``None``, a few bytes that fit it in one atomic write.

Each caller names its files (``name``); a call first deletes any of that name that a daemon
killed mid-call left behind, so one caller must not make two calls at once (an agent runs
one cycle at a time). The worker is killed if the awaiting task is cancelled.

This module imports nothing heavy: the worker imports it to run ``_answer_to_file``.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_process

T = TypeVar("T")

PREFIX = ".worker-answer-"


async def run_in_worker(
    folder: Path, name: str, expect: type[T], func: Callable[..., T], *args: Any
) -> T:
    """``func(*args)`` in a worker process; its answer, which must be an ``expect``."""
    out = await asyncio.to_thread(_fresh_file, folder, name)
    try:
        await anyio.to_process.run_sync(
            partial(_answer_to_file, str(out), func, args), cancellable=True
        )
        return await asyncio.to_thread(_load, out, expect)
    finally:
        out.unlink(missing_ok=True)


def _fresh_file(folder: Path, name: str) -> Path:
    """A new random file name for ``name``'s answer, after deleting any left behind."""
    for stale in folder.glob(f"{PREFIX}{name}-{'[0-9a-f]' * 32}.pickle"):
        stale.unlink(missing_ok=True)
    return folder / f"{PREFIX}{name}-{uuid.uuid4().hex}.pickle"


def _answer_to_file(out: str, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """In the worker: run ``func`` and pickle its answer to the new file ``out``."""
    answer = func(*args)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        pickle.dump(answer, f, protocol=pickle.HIGHEST_PROTOCOL)


def _load(out: Path, expect: type[T]) -> T:
    """The answer ``_answer_to_file`` wrote. Unpickling is as safe as it is for anyio's own
    answers: the file is new (``O_EXCL``), owner-only, under a random name the daemon chose
    in its private data folder, and written by the daemon's own worker."""
    with out.open("rb") as f:
        answer = pickle.load(f)  # noqa: S301 - our worker's file, see above
    if not isinstance(answer, expect):
        raise TypeError(f"{out.name} holds a {type(answer).__name__}, not a {expect.__name__}")
    return answer
