"""Issue 32: the coder agent's ``image_read`` of what the task's own commands planted (a FIFO, a
link to a root-only file, a decompression bomb) is a one-line tool error at once, and the run
goes on to its answer (it used to hang in ``open`` past ``--max-seconds``)."""

from __future__ import annotations

import time
from pathlib import Path

from agentkit import VISION, scripted
from coderkit import run_coder, sandbox_level  # noqa: F401 (sandbox_level: autouse)

from omnilab.agents import Budgets
from omnilab.models.providers import scripted as s


def _cmd(keystrokes: str) -> s.OutputStep:
    args = {"analysis": "a", "plan": "p", "keystrokes": keystrokes, "wait_seconds": 5}
    return s.tool_call("execute_commands", args)


def test_image_read_of_planted_files_fails_at_once_and_the_run_answers(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "shadow.png").write_bytes(b"\x89PNG not really")
    model, _ = scripted(
        [
            _cmd(f"mkfifo t.png && ln -s {private}/shadow.png s.png && mkdir d && echo planted"),
            s.tool_call("image_read", {"path": "t.png"}),
            s.tool_call("image_read", {"path": "s.png"}),
            s.tool_call("image_read", {"path": "d"}),
            s.tool_call("task_complete", {"answer": "<answer>x</answer>"}),
        ],
        caps=VISION,
    )
    started = time.monotonic()
    run = run_coder(tmp_path, model, [], "What?", budgets=Budgets(max_seconds=60))
    assert time.monotonic() - started < 45
    planted, fifo, link, folder, _ = run.saved.tool_results
    assert "planted" in planted.result.text
    assert fifo.result.error is not None and "not a regular file" in fifo.result.error.message
    assert link.result.error is not None and "link" in link.result.error.message
    assert folder.result.error is not None
    for result in (fifo, link, folder):
        assert "\n" not in result.result.error.message  # type: ignore[union-attr]
    assert run.saved.answer == "x"
