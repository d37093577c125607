"""The generated token's header file (issue 42, reproduction 15): 0600 in a 0700 folder of the
user's own, never written through a planted link, and what is printed holds no command line or
address with the token in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.server.token import TokenSetupError, announce, header_file, removed_at_exit


def usage(header: str) -> list[str]:
    return [f"curl -H {header} http://127.0.0.1:1/v1/ask", "in a browser: http://127.0.0.1:1/login"]


def test_the_header_file_is_private_and_the_printed_lines_hold_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    token = "tok-" + "x" * 40
    kept = announce(token, True, what="w", name="t", usage=usage)
    assert kept == header_file("t") and kept.read_text() == f"Authorization: Bearer {token}\n"
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.parent.stat().st_mode & 0o777 == 0o700
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if token in line] == [f"token (shown once): {token}"]
    assert any(f"curl -H @{kept} " in line for line in lines)
    with removed_at_exit(kept):
        pass
    assert not kept.exists()
    # A token the operator named (--token-env) is theirs: nothing is written or printed.
    assert announce(token, False, what="w", name="t", usage=usage) is None
    assert capsys.readouterr().err == ""


def test_a_planted_link_as_the_token_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    header_file("t").parent.parent.mkdir(parents=True)
    header_file("t").parent.symlink_to(elsewhere)
    with pytest.raises(TokenSetupError, match="is not a folder of this user"):
        announce("tok-" + "y" * 40, True, what="w", name="t", usage=usage)
    assert not any(elsewhere.iterdir())
