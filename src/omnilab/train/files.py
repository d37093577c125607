"""Writing export files, and checking them the way their trainer will read them.

:func:`write_rows` writes JSON Lines, or parquet (verl's format) when the name ends in
``.parquet`` and pyarrow is installed. :func:`check_file` reads the file back three ways: as
plain rows (they must equal what was written: the round trip), against the target format's
rules (masks, turn order, media markers; :func:`format_problems`), and, when the ``datasets``
library is installed (it needs no torch), with the loader TRL, LLaMA-Factory and verl use
(``datasets.load_dataset("json" | "parquet", ...)``).
"""

from __future__ import annotations

import glob
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omnilab.bench.errors import BenchError

__all__ = ["check_file", "format_problems", "read_rows", "write_rows"]

JsonDict = dict[str, Any]


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() == ".parquet"


def write_rows(rows: list[JsonDict], path: Path) -> None:
    """Write ``rows`` atomically (a crash leaves the old file or the new one)."""
    from omnilab.bench.run_dir import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not _is_parquet(path):
            write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            return
        try:
            import pyarrow  # noqa: F401  (only: is it installed)
            import pyarrow.parquet as pq
        except ImportError:
            raise BenchError(
                f"{path.name}: writing parquet needs pyarrow (pip install pyarrow); "
                "or name the file .jsonl"
            ) from None
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        try:
            pq.write_table(_table(rows), tmp)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as e:
        raise BenchError(f"cannot write {path}: {e.strerror or e}") from None


def _table(rows: list[JsonDict]) -> Any:
    """A pyarrow table whose columns are every row's keys (``from_pylist`` alone keeps only the
    first row's: a video row after an image row lost its ``videos``); a row without a column holds
    null there, as parquet has no absent cells."""
    import pyarrow as pa

    columns = list(dict.fromkeys(k for row in rows for k in row))
    return pa.Table.from_pydict({k: [row.get(k) for row in rows] for k in columns})


def _present(value: Any) -> Any:
    """``value`` without null entries in its mappings (recursively): parquet gives a key a row
    did not have back as null, in columns and in struct fields alike."""
    if isinstance(value, dict):
        return {k: _present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_present(v) for v in value]
    return value


def _first_difference(back: list[JsonDict], written: list[JsonDict], parquet: bool) -> str | None:
    if len(back) != len(written):
        return f"{len(back)} rows read back, {len(written)} written"
    for i, (got, meant) in enumerate(zip(back, written, strict=True)):
        if parquet:
            got, meant = _present(got), _present(meant)
        if got != meant:
            keys = sorted(k for k in {*got, *meant} if got.get(k) != meant.get(k))
            return f"row {i + 1} differs from what was written ({', '.join(keys)})"
    return None


def read_rows(path: Path) -> list[JsonDict]:
    """The rows of a file :func:`write_rows` wrote."""
    if _is_parquet(path):
        import pyarrow.parquet as pq

        rows: list[JsonDict] = pq.read_table(path).to_pylist()
        return rows
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --- format rules --------------------------------------------------------------------------------


def _openai(row: JsonDict) -> list[str]:
    problems = []
    weights = []
    for m in row.get("messages", []):
        if "weight" in m:
            if m["role"] != "assistant" or m["weight"] not in (0, 1):
                problems.append(f"weight {m['weight']!r} on a {m['role']} message")
            weights.append(m["weight"])
    if not weights or max(weights) != 1:
        problems.append("no assistant message has weight 1")
    return problems


_PROMPT = {"human", "observation"}
_REPLY = {"gpt", "function_call"}


def _sharegpt(row: JsonDict) -> list[str]:
    turns = row.get("conversations", [])
    problems = []
    for i, turn in enumerate(turns):
        allowed = _PROMPT if i % 2 == 0 else _REPLY
        if turn["from"] not in allowed:
            problems.append(f"turn {i + 1} is {turn['from']!r}; turns must alternate")
            break
    if not turns or turns[-1]["from"] not in _REPLY:
        problems.append("the last turn is not the model's")
    text = "".join(t["value"] for t in turns) + row.get("system", "")
    for kind in ("image", "video", "audio"):
        if text.count(f"<{kind}>") != len(row.get(f"{kind}s", [])):
            problems.append(f"<{kind}> markers and {kind}s entries differ in number")
    return problems


def _trl(row: JsonDict) -> list[str]:
    if "messages" in row:
        chat = row["messages"]
    else:
        chat = [*row.get("prompt", []), *row.get("completion", [])]
        if [m["role"] for m in row.get("completion", [])] != ["assistant"]:
            return ["completion is not one assistant message"]
    if not any(m["role"] == "assistant" for m in chat):
        return ["no assistant message"]
    if _image_parts(chat) != len(row.get("images", [])):
        return ["image parts and images entries differ in number"]
    return []


def _image_parts(chat: list[JsonDict]) -> int:
    return sum(
        1
        for m in chat
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image"
    )


def _trl_dpo(row: JsonDict) -> list[str]:
    # TRL's conversational preference rows: a prompt, one assistant message on each side.
    problems = [] if row.get("prompt") else ["no prompt"]
    for side in ("chosen", "rejected"):
        if [m["role"] for m in row.get(side, [])] != ["assistant"]:
            problems.append(f"{side} is not one assistant message")
    chat = [*row.get("prompt", []), *row.get("chosen", []), *row.get("rejected", [])]
    if _image_parts(chat) != len(row.get("images", [])):
        problems.append("image parts and images entries differ in number")
    return problems


_STEP_KEYS = {
    "question_id", "traj_id", "step", "raw_input", "output", "step_reward", "done",
    "extra_info", "episode_reward",
}  # fmt: skip


def _steps(row: JsonDict) -> list[str]:
    problems = []
    if set(row) != _STEP_KEYS:
        problems.append(f"fields {sorted(set(row) ^ _STEP_KEYS)} differ from OmniAgent's")
    if row.get("done") not in ("True", "False"):
        problems.append("done is not 'True' or 'False'")
    return problems


_RL_KEYS = {
    "prompt", "question_type", "question", "answer", "options", "video", "fps",
    "duration_seconds", "has_audio", "data_source", "ability", "extra_info",
}  # fmt: skip


def _omniagent_rl(row: JsonDict) -> list[str]:
    return [] if set(row) == _RL_KEYS else [f"fields {sorted(set(row) ^ _RL_KEYS)} differ"]


def _verl(row: JsonDict) -> list[str]:
    problems = [
        f"no {k}" for k in ("data_source", "prompt", "ability", "reward_model") if k not in row
    ]
    if (row.get("reward_model") or {}).get("style") != "rule":
        problems.append("reward_model.style is not 'rule'")
    text = "".join(str(m.get("content") or "") for m in row.get("prompt") or [])
    for kind in ("image", "video", "audio"):
        if text.count(f"<{kind}>") != len(row.get(f"{kind}s") or []):
            problems.append(f"<{kind}> markers and {kind}s entries differ in number")
    return problems


def _rl_groups(row: JsonDict) -> list[str]:
    problems = [f"no {k}" for k in ("task_id", "sample", "reward", "advantage") if k not in row]
    numbers = (row.get(k) for k in ("reward", "advantage", "group_mean", "group_std"))
    if any(not isinstance(v, int | float) or math.isnan(v) for v in numbers):
        problems.append("reward, advantage or a group statistic is not a number")
    return problems


_RULES: dict[str, Callable[[JsonDict], list[str]]] = {
    "rl-groups": _rl_groups,
    "openai": _openai,
    "sharegpt": _sharegpt,
    "trl": _trl,
    "trl-dpo": _trl_dpo,
    "omniagent-steps": _steps,
    "omniagent": _omniagent_rl,
    "verl": _verl,
}


def format_problems(rows: list[JsonDict], fmt: str) -> list[str]:
    """What breaks ``fmt``'s rules, one entry per bad row (``row 3: ...``)."""
    rule = _RULES[fmt]
    return [f"row {i + 1}: {'; '.join(p)}" for i, row in enumerate(rows) if (p := rule(row))]


def check_file(path: Path, fmt: str, written: list[JsonDict]) -> list[str]:
    """Read ``path`` back; what was checked, one line each. :class:`BenchError` on a problem."""
    done = []
    back = read_rows(path)
    # every row, every value: parquet's nulls for keys a row did not have are the one allowance
    differs = _first_difference(back, written, _is_parquet(path))
    if differs:
        raise BenchError(f"{path}: {differs}")
    done.append(f"round trip: {len(back)} rows read back unchanged")
    problems = format_problems(back, fmt)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BenchError(f"{path}: {problems[0]}{more}")
    done.append(f"{fmt} rules: every row passes")
    if not back:
        # the loaders cannot read a file without rows (datasets raises StopIteration)
        done.append("0 rows: the file is empty, nothing for a trainer to load")
        return done
    try:
        import datasets
    except ImportError:
        done.append("datasets is not installed: pip install datasets to check with its loader")
        return done
    kind = "parquet" if _is_parquet(path) else "json"
    datasets.disable_progress_bars()  # the CLI prints its own one-line results
    try:
        # data_files are glob patterns to datasets: a name with [ or * must be escaped
        pattern = glob.escape(str(path))
        loaded = datasets.load_dataset(kind, data_files=pattern, split="train")
    except Exception as e:  # the loader's own errors are many types; report its first line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BenchError(f"{path}: datasets.load_dataset({kind!r}) fails: {first}") from None
    if len(loaded) != len(written):
        raise BenchError(f"{path}: datasets read {len(loaded)} rows, {len(written)} were written")
    done.append(
        f"datasets.load_dataset({kind!r}): {len(loaded)} rows, columns {', '.join(loaded.column_names)}"
    )
    return done
