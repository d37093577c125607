"""One GET that says both an S3 object's version and its first bytes (issue 46's cold fetch),
and a range streamed into a file, through botocore's S3 client (:mod:`._remote_s3`).

A first fetch of an object asked the store twice, a look-up (HEAD) for the version and size and
then the bytes; boto3's ``download_file`` does the same. A ranged GET's response carries what
the look-up gives (S3: ETag, VersionId, Last-Modified, and the total size in its Content-Range),
so one request serves an object up to the range's size, and a larger one's first range. Other
stores have no such request here: the caller looks their objects up first. Store errors
propagate as botocore raised them; no message here holds a URL's query or a library's text.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from typing import Any

from omnilab.media._remote_fs import status_of

__all__ = ["described", "first_range", "range_into"]

_TOTAL = re.compile(r"bytes \d+-\d+/(\d+)")
_PIECE = 1 << 20  # a range's bytes are written as they arrive, this much at a time
_NOT_SATISFIABLE = 416  # a range of an empty object


def first_range(
    client: Any, bucket: str, key: str, end: int
) -> tuple[dict[str, Any], bytes] | None:
    """The object's description (as a look-up gives it: ``size``, ``ETag``, ``VersionId``,
    ``LastModified``) and its bytes ``[0, end)`` (all of it when smaller), from one GET;
    ``None`` where the object is empty (no range of it exists): the caller looks it up."""
    try:
        resp = client.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{end - 1}")
    except Exception as exc:
        if status_of(exc) == _NOT_SATISFIABLE:
            return None
        raise
    with contextlib.closing(resp["Body"]) as body:
        data = bytes(body.read())
    return described(resp, len(data)), data


def range_into(client: Any, bucket: str, key: str, start: int, end: int, fd: int) -> int:
    """Bytes ``[start, end)`` of the object written at their offsets in ``fd`` as they arrive;
    returns how many came. A whole range held in memory cost a large object twice the AWS
    client's CPU (an 8 MiB buffer per range, page-faulted and copied), which streams its parts
    to the file."""
    resp = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}")
    at = start
    with contextlib.closing(resp["Body"]) as body:
        # The last read (empty) also checks the length the response announced.
        while piece := body.read(min(_PIECE, max(1, end - at))):
            os.pwrite(fd, piece, at)  # into the page cache: no wait worth a thread
            at += len(piece)
    return at - start


def described(resp: Mapping[str, Any], got: int | None = None) -> dict[str, Any]:
    """What a look-up says (``size``, ``ETag``, ``LastModified``, ``VersionId``), from a HEAD's
    or a GET's response (a store that ignored a GET's range sent the whole object: its
    Content-Length is the size)."""
    match = _TOTAL.fullmatch(str(resp.get("ContentRange") or ""))
    size = int(match.group(1)) if match else resp.get("ContentLength", got)
    return {
        "size": size,
        "ETag": resp.get("ETag", ""),
        "LastModified": resp.get("LastModified", ""),
        "VersionId": resp.get("VersionId"),
    }
