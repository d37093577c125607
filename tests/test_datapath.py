"""Paths named by data (issue 42, reproduction 4's type rule): a ``DataPath`` is made only by its
validating constructor, lies beneath its root, and only ``omnilab._wsread`` opens it, through no
link."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from omnilab import _wsread
from omnilab._datapath import DataPath, DataPathError


@pytest.mark.parametrize(
    "given",
    [
        "/etc/shadow",
        "/etc/../etc/shadow",
        "~/.ssh/id_rsa",
        "~root/.ssh/id_rsa",
        "../key",
        "../../../opt/x/rootonly/key",
        "a/../../key",
        "a/b/c/../../../../key",
        "a/../b.png",  # climbs and comes back: still refused (a link on the way would differ)
        "a\\..\\..\\key",
        "C:/Windows/win.ini",
        "",
        ".",
        "./",
        "a/\x00b",
    ],
)
def test_absolute_paths_and_escapes_are_refused_naming_the_item(given: str) -> None:
    with pytest.raises(DataPathError) as refused:
        DataPath.beneath("/data/media", given, item="omnigaia item 7")
    message = str(refused.value)
    assert message.startswith("omnigaia item 7: ") and "\n" not in message


@pytest.mark.parametrize(
    ("given", "rel"),
    [
        ("a.png", "a.png"),
        ("./videos//x.mp4", "videos/x.mp4"),
        ("/data/media/videos/x.mp4", "videos/x.mp4"),  # written out in full, still beneath
        ("d/e/f/g.wav", "d/e/f/g.wav"),
    ],
)
def test_paths_beneath_the_root_are_kept_relative(given: str, rel: str) -> None:
    path = DataPath.beneath("/data/media", given, item="x")
    assert (path.root, path.rel) == ("/data/media", rel)
    assert path.shown() == Path("/data/media", rel)
    assert path == DataPath.beneath(Path("/data/media/"), rel, item="y")


def test_a_prefix_of_the_root_is_not_beneath_it() -> None:
    with pytest.raises(DataPathError, match="absolute path"):
        DataPath.beneath("/data/media", "/data/media-other/secret", item="x")


def test_a_data_path_is_no_file_system_path_for_anything_but_the_safe_opener(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("hello")
    path = DataPath.beneath(tmp_path, "a.txt", item="x")
    with pytest.raises(TypeError):
        os.fspath(path)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        open(path)  # type: ignore[call-overload]  # noqa: PTH123, SIM115
    with pytest.raises(TypeError):
        DataPath(str(tmp_path), "a.txt", object())  # only beneath() holds the key
    assert _wsread.read_bytes(path) == b"hello"


def test_the_safe_opener_follows_no_link_beneath_the_root(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"root only")
    secret.chmod(0o600)
    root = tmp_path / "media"
    (root / "deep" / "er").mkdir(parents=True)
    (root / "v.mp4").symlink_to(secret)
    (root / "deep" / "er" / "v.mp4").symlink_to("../../../secret")
    (root / "linked").symlink_to(tmp_path)  # a folder link on the way
    os.mkfifo(root / "fifo.wav")
    for rel in ("v.mp4", "deep/er/v.mp4", "linked/secret", "fifo.wav"):
        path = DataPath.beneath(root, rel, item="x")
        with pytest.raises(_wsread.UnsafeFileError):
            _wsread.read_bytes(path)
        assert not _wsread.regular_file(path)


@pytest.mark.slow
def test_mypy_refuses_a_data_path_where_a_file_path_is_expected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mypy import api

    monkeypatch.setenv("MYPYPATH", str(Path(__file__).resolve().parents[1] / "src"))
    snippet = tmp_path / "misuse.py"
    snippet.write_text(
        "from pathlib import Path\n"
        "from omnilab._datapath import DataPath\n"
        "def read(p: DataPath) -> None:\n"
        "    Path(p)\n"
        "    open(p, 'rb').close()\n"
    )
    out, _, status = api.run(
        [
            "--no-incremental",
            "--follow-imports=silent",
            "--python-executable",
            sys.executable,
            "--no-site-packages",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
    )
    assert status == 1, out
    # Path(p) and open(p): both calls refused, nothing else wrong (the module was found).
    assert out.count("error:") == 2 and "DataPath" in out, out
