"""Untrusted text reaches a terminal inert (issue 32, point 6): ``omnilab ask``'s live view,
``omnilab trace``, error lines and every CLI console show control characters as visible escapes
and never read model text as rich markup."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from omnilab.cli._console import err_console, inert_console, out_console
from omnilab.cli.ask import LiveView
from omnilab.cli.main import app
from omnilab.terminal import inert
from omnilab.trajectory import (
    AnswerEvent,
    ErrorEvent,
    RunEnd,
    RunStart,
    StepNote,
    TrajectoryWriter,
    read_trajectory,
    render_text,
)

# Retitles the window, clears the screen, paints red, a one-byte CSI, a carriage return that
# rewrites the line, a right-to-left override, a bell, and rich markup.
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31m[bold]red[/bold]\x9b6n\rfake\u202eabc\x08\x00"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e", "\x08", "\x00")


def _raw(text: str) -> list[str]:
    return [c for c in RAW if c in text]


def test_inert_shows_every_control_character_but_newline_and_tab() -> None:
    shown = inert(HOSTILE + "\nline two\tcell")
    assert _raw(shown) == []
    assert shown.startswith("\\x1b]0;owned\\x07\\x1b[2J")
    assert "\\x9b" in shown and "\\x0d" in shown and "\\u202e" in shown and "\\x00" in shown
    assert shown.endswith("\nline two\tcell")
    assert inert("plain text, é, 日本") == "plain text, é, 日本"
    assert inert(shown) == shown  # idempotent: escaping twice changes nothing


def test_cli_consoles_make_every_string_inert() -> None:
    for make in (out_console, err_console):
        console = make()
        console.file = io.StringIO()
        console.print(f"[green]tool:[/] {HOSTILE}", markup=False)
        assert _raw(console.file.getvalue()) == []
    # With styles on, rich's own escapes are there, never the text's.
    screen = io.StringIO()
    console = inert_console(file=screen, force_terminal=True, color_system="standard")
    console.print("[green]ok[/]", HOSTILE, markup=True)
    out = screen.getvalue()
    assert "\x1b[32m" in out and "\x1b]0;" not in out and "\x1b[2J" not in out


def test_live_view_is_inert_and_never_reads_model_text_as_markup() -> None:
    out = io.StringIO()
    # Even a plain console (the Python API's): the view makes the text inert itself.
    view = LiveView(Console(file=out, width=200, color_system=None))
    view(StepNote(label="note", text=HOSTILE))
    view(ErrorEvent(error_kind="tool", message=HOSTILE))
    view(AnswerEvent(text=HOSTILE, answer=HOSTILE))
    shown = out.getvalue()
    assert _raw(shown) == []
    assert "[bold]red[/bold]" in shown  # markup in model text is shown, not applied
    assert "\\x1b]0;owned" in shown


def _hostile_run(path: Path) -> Path:
    with TrajectoryWriter(path, run_id="run-1") as writer:
        writer.emit(RunStart(run_id=writer.run_id, question=f"q {HOSTILE}", agent="tir"))
        writer.emit(StepNote(label="shell", text=HOSTILE))
        writer.emit(AnswerEvent(text=HOSTILE, answer=HOSTILE))
        writer.emit(RunEnd(status="answered", wall_s=1.0, turns=1))
    return path


def test_trace_and_render_text_are_inert(tmp_path: Path) -> None:
    run_file = _hostile_run(tmp_path / "run.jsonl")
    text = render_text(read_trajectory(run_file), width=400)
    assert _raw(text) == [] and "\\x1b[2J" in text
    result = CliRunner().invoke(app, ["trace", str(run_file), "--width", "400"])
    assert result.exit_code == 0, result.output
    assert _raw(result.output) == [] and "[bold]red[/bold]" in result.output


def test_an_error_line_quoting_untrusted_text_is_inert(tmp_path: Path) -> None:
    missing = tmp_path / "a\x1b]0;owned\x07\x1b[2J.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "trace", str(missing)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert (
        proc.stderr.startswith("error: cannot read trajectory") and "\\x1b]0;owned" in proc.stderr
    )
    assert _raw(proc.stderr) == [], proc.stderr


def test_chat_prints_the_models_answer_inert(tmp_path: Path) -> None:
    script = tmp_path / "hostile.json"
    script.write_text(json.dumps([HOSTILE]))
    result = CliRunner().invoke(app, ["chat", "-m", f"scripted:{script}", "hi"])
    assert result.exit_code == 0, result.output
    assert _raw(result.output) == [] and "\\x1b]0;owned\\x07" in result.output


def test_data_show_prints_a_datasets_text_inert(tmp_path: Path) -> None:
    # A downloaded benchmark file is third-party text: its ids and questions are untrusted.
    data = tmp_path / "tasks.json"
    task = {"id": f"t{HOSTILE}", "question": HOSTILE, "options": ["A. x", "B. y"], "answer": "A"}
    data.write_text(json.dumps([task]))
    result = CliRunner().invoke(app, ["data", "show", "mcq", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert _raw(result.output) == [] and "\\x1b[2J" in result.output


def test_no_cli_command_prints_through_a_plain_rich_console() -> None:
    # The class, not the examples: a command that makes its own rich Console prints model,
    # dataset and media text raw. Every console of the CLI comes from cli/_console.py.
    cli = Path(__file__).resolve().parents[1] / "src" / "omnilab" / "cli"
    plain = re.compile(r"(?<![\w.])Console\(")
    offenders = [
        f"{path.name}:{number}"
        for path in sorted(cli.glob("*.py"))
        if path.name != "_console.py"
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if plain.search(line)
    ]
    assert offenders == []


def test_json_output_escapes_what_its_encoder_leaves_raw(tmp_path: Path) -> None:
    # json.dumps(ensure_ascii=False) and pydantic escape C0 controls only: the one-byte CSI
    # (\x9b) and bidi overrides went to the terminal raw. Escaped as \uXXXX: the same JSON.
    run_file = _hostile_run(tmp_path / "run.jsonl")
    result = CliRunner().invoke(app, ["trace", str(run_file), "--json"])
    assert result.exit_code == 0, result.output
    assert _raw(result.output) == [] and "\\u009b" in result.output
    events = json.loads(result.output)["events"]
    assert any(e.get("text") == HOSTILE for e in events)  # the value is unchanged
    script = tmp_path / "hostile.json"
    script.write_text(json.dumps([HOSTILE]))
    chat = CliRunner().invoke(app, ["chat", "-m", f"scripted:{script}", "hi", "--json"])
    assert chat.exit_code == 0, chat.output
    assert _raw(chat.output) == []
    assert json.loads(chat.output)["message"]["content"][0]["text"] == HOSTILE
