"""One GET that says both an object's version and its first bytes (issue 46's cold fetch).

A first fetch of an object asked the store twice, a look-up (HEAD) for the version and size and
then the bytes; boto3's ``download_file`` does the same. A ranged GET's response carries what
the look-up gives (S3: ETag, VersionId, Last-Modified, and the total size in its Content-Range),
so one request serves an object up to the range's size, and a larger one's first range. Only S3
(s3fs) has this here, through s3fs's own client (``_call_s3``: its credential chain, endpoint
and retries); for other stores :func:`first_range` says ``None`` and the caller looks the object
up first. No message here holds a URL's query or a library's error text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omnilab.media._remote_fs import status_of

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["first_range", "range_into", "ranged_gets"]

_TOTAL = re.compile(r"bytes \d+-\d+/(\d+)")
_PIECE = 1 << 20  # a range's bytes are written as they arrive, this much at a time
_NOT_SATISFIABLE = 416  # a range of an empty object


def ranged_gets(fs: AbstractFileSystem) -> bool:
    """Whether ``fs`` reads a byte range without a look-up of its own first (s3fs's
    ``cat_file`` of a whole object asks the store for the size before the GET)."""
    protocol = fs.protocol
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return "s3" in names


def first_range(fs: AbstractFileSystem, path: str, end: int) -> tuple[dict[str, Any], bytes] | None:
    """The object's description (as ``fs.info`` gives it: ``size``, ``ETag``, ``VersionId``,
    ``LastModified``) and its bytes ``[0, end)`` (all of it when smaller), from one GET.

    ``None`` where ``fs`` is not s3fs, or the object is empty (no range of it exists): the
    caller looks the object up instead. Store errors propagate as the client raised them.
    """
    if not ranged_gets(fs):
        return None
    from fsspec.asyn import sync

    bucket, key, version_id = fs.split_path(path)
    extra = {"VersionId": version_id} if version_id else {}

    async def get() -> tuple[Mapping[str, Any], bytes]:
        resp = await fs._call_s3(
            "get_object", Bucket=bucket, Key=key, Range=f"bytes=0-{end - 1}", **extra
        )
        try:
            return resp, bytes(await resp["Body"].read())
        finally:
            resp["Body"].close()

    try:
        resp, data = sync(fs.loop, get)
    except Exception as exc:
        if status_of(exc) == _NOT_SATISFIABLE:
            return None
        raise
    return _described(resp, len(data)), data


def range_into(fs: AbstractFileSystem, path: str, start: int, end: int, fd: int) -> int:
    """Bytes ``[start, end)`` of the object written at their offsets in ``fd`` as they arrive
    (S3 only, see :func:`ranged_gets`); returns how many came. A whole range held in memory
    cost a large object twice the AWS client's CPU (an 8 MiB buffer per range, page-faulted
    and copied), which streams its parts to the file."""
    from fsspec.asyn import sync

    bucket, key, version_id = fs.split_path(path)
    extra = {"VersionId": version_id} if version_id else {}

    async def get() -> int:
        resp = await fs._call_s3(
            "get_object", Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}", **extra
        )
        body, at = resp["Body"], start
        try:
            while piece := await body.read(min(_PIECE, max(1, end - at))):
                os.pwrite(fd, piece, at)  # into the page cache: no wait worth a thread
                at += len(piece)
        finally:
            body.close()
        return at - start

    done: int = sync(fs.loop, get)
    return done


def _described(resp: Mapping[str, Any], got: int) -> dict[str, Any]:
    """What ``fs.info`` says, from a GET's response (a store that ignored the range sent the
    whole object: its Content-Length is the size)."""
    match = _TOTAL.fullmatch(str(resp.get("ContentRange") or ""))
    size = int(match.group(1)) if match else resp.get("ContentLength", got)
    return {
        "size": size,
        "ETag": resp.get("ETag", ""),
        "LastModified": resp.get("LastModified", ""),
        "VersionId": resp.get("VersionId"),
    }
