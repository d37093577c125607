"""Issue 42's leftover: ``omnilab serve --media-root`` was resolved before anything was checked,
so a link another user planted at the name (``media -> /root`` in ``/tmp``) chose which folder root
let the server's clients read (``paths=.ssh/id_rsa``). A link another user owns anywhere on the
path is now refused with one line when the server starts; the root is resolved once, so a
later swap of the name changes nothing; another user's real folder (a shared dataset) works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_http import client, script, serving
from test_serve_runs_dir import (
    NOBODY,
    TOKEN,
    _roots_private,
    _shared_tmp,
    root_only,
    serve_stops_with_one_line,
)

from omnilab._ownfolders import UnsafeFolderError
from omnilab.media import synth
from omnilab.server.http import create_app


def _alices_link(at: Path, target: Path) -> Path:
    at.symlink_to(target)
    os.lchown(at, NOBODY, NOBODY)  # alice's link: she may point it anywhere, at any time
    return at


@root_only
def test_a_media_root_that_is_another_users_link_is_refused(tmp_path: Path) -> None:
    link = _alices_link(_shared_tmp(tmp_path) / "media", _roots_private(tmp_path))
    for given in (link, link / "sub"):  # the link itself, or a folder through it
        with pytest.raises(UnsafeFolderError) as refused:
            create_app(runs_dir=tmp_path / "runs", token=TOKEN, media_root=given)
        message = str(refused.value)
        assert f"{link} is a link owned by" in message and "--media-root" in message
        assert "\n" not in message


@root_only
def test_serve_with_another_users_linked_media_root_stops_with_one_line(tmp_path: Path) -> None:
    link = _alices_link(_shared_tmp(tmp_path) / "media", _roots_private(tmp_path))
    serve_stops_with_one_line(
        tmp_path, "--runs-dir", str(tmp_path / "runs"), "--media-root", str(link)
    )


def _ask(url: str, path: str) -> tuple[int, str]:
    with client(url) as http:
        reply = http.post("/v1/ask", data={"question": "What is shown?", "paths": path})
    return reply.status_code, reply.text


@root_only
def test_another_users_real_folder_is_served(tmp_path: Path) -> None:
    shared = tmp_path / "datasets" / "alices"
    shared.mkdir(parents=True)
    synth.make_image(shared / "pic.png", size=(32, 32), index=1)
    for path in (shared / "pic.png", shared, shared.parent):
        os.chown(path, NOBODY, NOBODY)  # a shared dataset of alice's: no link on the way
    model = script(tmp_path, ["<answer>a square</answer>"])
    with serving(tmp_path / "runs", model, media_root=shared) as url:
        status, text = _ask(url, "pic.png")
    assert status == 200 and '"answered"' in text, text


def test_the_media_root_is_resolved_once_when_the_server_starts(tmp_path: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    synth.make_image(media / "pic.png", size=(32, 32), index=1)
    private = _roots_private(tmp_path)
    link = tmp_path / "media-link"
    link.symlink_to(media)  # the operator's own link: followed
    model = script(tmp_path, ["<answer>a square</answer>", "<answer>a square</answer>"])
    with serving(tmp_path / "runs", model, media_root=link) as url:
        status, text = _ask(url, "pic.png")
        assert status == 200, text
        link.unlink()
        link.symlink_to(private)  # repointed while the server runs: nothing changes
        status, text = _ask(url, "key")
    assert status == 400 and "no such file under the media root" in text, text
