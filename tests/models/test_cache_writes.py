"""The reply cache's key (built part by part) and its written-behind stores."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from omnilab.models import GenerateConfig, Message, ModelOutput, ResponseCache, ToolSpec
from omnilab.models.cache import _LATER_SETTINGS, _canonical_message, request_key

SEARCH = ToolSpec(
    name="search",
    description="Find pages — «quoted» ünïcode",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)
READ = ToolSpec(name="read", parameters={"type": "object", "properties": {}})


def _reference_key(
    model: str,
    messages: list[Message],
    tools: list[ToolSpec],
    config: GenerateConfig,
    sample: int | None,
) -> str:
    """The key as version 1 defined it: one ``json.dumps`` of the whole request."""
    settings = config.model_dump(mode="json", exclude={"timeout_s"})
    for name, default in _LATER_SETTINGS.items():
        if settings.get(name) == default:
            del settings[name]
    canon: dict[str, Any] = {
        "v": 1,
        "model": model,
        "messages": [_canonical_message(m) for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools],
        "config": settings,
    }
    if sample:
        canon["sample"] = sample
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("sample", [None, 0, 1, 7])
@pytest.mark.parametrize("tools", [[], [SEARCH], [SEARCH, READ]])
@pytest.mark.parametrize(
    "config",
    [GenerateConfig(), GenerateConfig(temperature=0.7, seed=3, max_tokens=50, logprobs=True)],
)
@pytest.mark.parametrize("question", ["Wie heißt das?", "Wie heißt das? " * 700])
def test_the_key_is_the_same_as_dumping_the_whole_request(
    sample: int | None, tools: list[ToolSpec], config: GenerateConfig, question: str
) -> None:
    # Caches written before the key was built part by part must keep answering, for short
    # and long prompts alike.
    messages = [Message.system("Be brief. ☃"), Message.user(question)]
    for _ in range(2):  # the second time the tool list's text comes from the memo
        got = request_key("openai:m", messages, tools, config, sample=sample)
        assert got == _reference_key("openai:m", messages, tools, config, sample)


def test_a_changed_tool_list_changes_the_key() -> None:
    messages = [Message.user("q")]
    first = request_key("m", messages, [SEARCH], GenerateConfig())
    other = ToolSpec(name="search", description="other", parameters=SEARCH.parameters)
    assert request_key("m", messages, [other], GenerateConfig()) != first
    assert request_key("m", messages, [SEARCH, READ], GenerateConfig()) != first
    assert request_key("m", messages, [SEARCH], GenerateConfig()) == first


def _rows(path: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(path) as conn:
            return dict(conn.execute("SELECT key, output FROM responses").fetchall())
    except sqlite3.OperationalError:  # the writer made the file and not yet its table
        return {}


def test_a_store_is_served_at_once_and_written_behind(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    cache = ResponseCache(path)
    cache.put("k", "m", ModelOutput.from_text("one"))
    # Another cache object on the same file (another model of the run) finds it before any
    # commit.
    hit = ResponseCache(path).get("k")
    assert hit is not None and hit.text == "one"
    # The background writer commits it without being asked.
    deadline = time.monotonic() + 10
    while not (path.exists() and "k" in _rows(path)):
        assert time.monotonic() < deadline, "the written-behind store never reached the file"
        time.sleep(0.02)
    assert json.loads(_rows(path)["k"])["message"]["content"][0]["text"] == "one"


def test_flush_writes_many_stores_in_one_go_and_a_later_store_wins(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    cache = ResponseCache(path)
    for i in range(450):  # more than one INSERT's worth of rows
        cache.put(f"k{i}", "m", ModelOutput.from_text(str(i)))
    cache.put("k0", "m", ModelOutput.from_text("replaced"))
    cache.flush()
    rows = _rows(path)
    assert len(rows) == 450 and len(cache) == 450
    assert json.loads(rows["k449"])["message"]["content"][0]["text"] == "449"
    assert json.loads(rows["k0"])["message"]["content"][0]["text"] == "replaced"


def test_a_process_that_exits_leaves_its_pending_stores_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite3"
    script = (
        "from pathlib import Path\n"
        "from omnilab.models import ModelOutput, ResponseCache\n"
        f"cache = ResponseCache(Path({str(path)!r}))\n"
        "for i in range(20):\n"
        "    cache.put(f'k{i}', 'm', ModelOutput.from_text(str(i)))\n"
        # Exits at once: the writer thread has not had its moment; the exit hook writes them.
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert len(_rows(path)) == 20


def test_clear_drops_pending_stores_too(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite3")
    cache.put("a", "m", ModelOutput.from_text("a"))
    cache.flush()
    cache.put("b", "m", ModelOutput.from_text("b"))
    cache.clear()
    assert cache.get("a") is None and cache.get("b") is None and len(cache) == 0


def test_flush_pending_writes_before_a_worker_is_killed(tmp_path: Path) -> None:
    # Pool workers and Ray actors are ended without exit hooks; the backends flush after each
    # task.
    path = tmp_path / "r.sqlite3"
    script = (
        "import os, signal\n"
        "from pathlib import Path\n"
        "from omnilab.models import ModelOutput, ResponseCache\n"
        "from omnilab.models.cache import flush_pending\n"
        f"cache = ResponseCache(Path({str(path)!r}))\n"
        "for i in range(5):\n"
        "    cache.put(f'k{i}', 'm', ModelOutput.from_text(str(i)))\n"
        "flush_pending()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert proc.returncode == -9
    assert len(_rows(path)) == 5


def _look_until(reader: ResponseCache, done: threading.Event, failures: list[Exception]) -> None:
    while not done.is_set():
        try:
            reader.get("absent")
        except Exception as e:  # any failure is the finding
            failures.append(e)
            return


def test_a_lookup_while_the_file_is_being_made_neither_fails_nor_costs_the_stores(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A new run's first commit makes the file while tasks look up replies: a reader that opened
    # the file half made got "database is locked", and so did the commit (its replies dropped).
    for trial in range(100):
        path = tmp_path / str(trial) / "responses.sqlite3"
        writer, reader = ResponseCache(path), ResponseCache(path)
        for i in range(30):
            writer.put(f"k{i}", "m", ModelOutput.from_text(str(i)))
        failures: list[Exception] = []
        done = threading.Event()
        looking = threading.Thread(target=_look_until, args=(reader, done, failures))
        looking.start()
        writer.flush()
        done.set()
        looking.join()
        assert failures == [] and len(_rows(path)) == 30
        # Nothing left of the file made under another name.
        assert {p.name for p in path.parent.iterdir()} <= {
            "responses.sqlite3",
            "responses.sqlite3-wal",
            "responses.sqlite3-shm",
        }
        reader.close()
        writer.close()
    assert "not stored" not in caplog.text


def test_a_damaged_cache_file_means_asking_the_model_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "responses.sqlite3"
    path.write_bytes(b"this is not a database\n" * 100)
    cache = ResponseCache(path)
    with caplog.at_level(logging.WARNING, logger="omnilab.models.cache"):
        assert [cache.get(f"k{i}") for i in range(3)] == [None, None, None]
    assert caplog.text.count("cannot be read") == 1 and "asking the model" in caplog.text
    # Its stores fail on every batch: said once too.
    with caplog.at_level(logging.WARNING, logger="omnilab.models.cache"):
        for i in range(3):
            cache.put(f"k{i}", "m", ModelOutput.from_text("reply"))
            cache.flush()
    assert caplog.text.count("not stored") == 1
