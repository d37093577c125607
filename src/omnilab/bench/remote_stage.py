"""Task inputs at URLs: their versions recorded by the driver, their bytes fetched where each
task runs.

A run whose tasks name inputs by URL never ships the driver's paths to a worker: a task carries
its URLs, and whoever runs it (the driver's event loop, a process, a Ray worker on another node)
fetches them into its own media cache before the agent starts (:func:`stage_task`). The driver
records each object's version (:func:`record_versions`) in the run folder's ``remote.json``
(URLs without query or user info, so a signed URL's signature is never written) and stamps the
tasks with it, so a resumed run that finds an object changed fails that task with the reason
rather than mixing two versions of its inputs. Credentials come from each store's standard
chain in the process that fetches; nothing here writes or returns them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omnilab._atomic import write_atomic
from omnilab._urls import public_url, url_name
from omnilab.bench.task import Task, TaskFile
from omnilab.errors import OmnilabError

__all__ = ["VERSIONS_FILE", "StageError", "record_versions", "stage_present", "stage_task"]

VERSIONS_FILE = "remote.json"
"""The run folder's record of each input URL's version (``{"versions": {url: tag}}``)."""
_STAT_THREADS = 8


class StageError(OmnilabError):
    """An input of a task could not be fetched (one line: the URL without query, and why)."""

    code = "MEDIA"


def _read(path: Path) -> dict[str, str]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    versions = body.get("versions") if isinstance(body, dict) else None
    if not isinstance(versions, dict):
        return {}
    return {str(k): str(v) for k, v in versions.items() if isinstance(v, str)}


def _stat(url: str) -> str | None:
    # Imported here (as below): the fetch layer loads the media package (PyAV, Pillow), which
    # a run whose inputs are all local never needs.
    from omnilab.media.remote import stat_remote

    try:
        return stat_remote(url).tag
    except OmnilabError:
        return None  # denied, missing, unreachable: the task's own fetch fails with the reason


def record_versions(run: Path, tasks: Sequence[Task]) -> list[Task]:
    """``tasks`` with each URL input stamped with its version: the one ``run/remote.json``
    recorded first, else the store's now (then recorded). An object that cannot be looked up
    is left unstamped (its task fails when it runs). Writes the file only when it grows."""
    urls = {f.url: public_url(f.url) for t in tasks for f in t.files if f.url is not None}
    if not urls:
        return list(tasks)
    record = run / VERSIONS_FILE
    known = _read(record)
    new = [u for u, shown in urls.items() if shown not in known]
    if new:
        with ThreadPoolExecutor(min(_STAT_THREADS, len(new))) as pool:
            found = dict(zip(new, pool.map(_stat, new), strict=True))
        added = {urls[u]: tag for u, tag in found.items() if tag is not None}
        if added:
            known |= added
            record.parent.mkdir(parents=True, exist_ok=True)
            body = {"versions": dict(sorted(known.items()))}
            write_atomic(record, json.dumps(body, indent=1) + "\n")
    return [_stamped(t, urls, known) for t in tasks]


def _stamped(task: Task, urls: dict[str, str], known: dict[str, str]) -> Task:
    if not any(f.url is not None for f in task.files):
        return task
    files = tuple(
        f.model_copy(update={"version": known.get(urls[f.url])}) if f.url is not None else f
        for f in task.files
    )
    return task.model_copy(update={"files": files})


def stage_task(task: Task) -> Task:
    """``task`` with every input at a URL fetched into this machine's media cache: each file's
    ``path`` is the local copy and its ``url`` the public URL. Blocking (run it in a thread).

    Raises :class:`StageError` (one line, naming the input's id) for a missing object, denied
    access, an unreachable store, or an object changed since the run recorded its version.
    """
    staged, _ = _stage_all(task, missing_ok=False)
    return staged


def stage_present(task: Task) -> tuple[Task, list[TaskFile]]:
    """As :func:`stage_task`, but an input whose object does not exist (``NOT_FOUND``) is left
    as it was and returned: what ``--missing-media drop`` drops, as it drops a missing local
    file. Every other failure (denied, unreachable, changed) still raises :class:`StageError`.
    """
    return _stage_all(task, missing_ok=True)


def _stage_all(task: Task, *, missing_ok: bool) -> tuple[Task, list[TaskFile]]:
    if not any(f.url is not None for f in task.files):
        return task, []
    files: list[TaskFile] = []
    absent: list[TaskFile] = []
    for f in task.files:
        staged = _stage(f, missing_ok=missing_ok)
        files.append(f if staged is None else staged)
        if staged is None:
            absent.append(f)
    return task.model_copy(update={"files": tuple(files)}), absent


def _stage(f: TaskFile, *, missing_ok: bool) -> TaskFile | None:
    """``f`` fetched (``f`` itself when it is not at a URL); ``None`` for an object that does
    not exist when ``missing_ok``."""
    if f.url is None:
        return f
    from omnilab.media.errors import MediaError, MediaErrorCode
    from omnilab.media.remote import ObjectVersion, fetch
    from omnilab.media.remote_named import named_copy

    expect = ObjectVersion(f.version, -1, None) if f.version else None
    try:
        got = fetch(f.url, expect=expect)
    except MediaError as e:
        if missing_ok and e.code is MediaErrorCode.NOT_FOUND:
            return None
        raise StageError(f"cannot fetch input {f.id}: {e}") from None
    except OmnilabError as e:
        raise StageError(f"cannot fetch input {f.id}: {e}") from None
    path = named_copy(got.path, url_name(got.url))
    return f.model_copy(update={"path": path, "url": got.url, "version": got.version.tag})
