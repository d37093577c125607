"""``omnilab config``: the effective settings (secrets masked) or the reference of every setting."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from rich.markup import escape
from rich.table import Table

from omnilab._config_files import describe_config
from omnilab._docstrings import field_doc
from omnilab.cli._console import inert_console
from omnilab.config import Settings, get_settings

__all__ = ["SettingRow", "config", "reference_markdown", "setting_rows"]


@dataclass(frozen=True)
class SettingRow:
    """One leaf setting: its dotted name, env var, default, current value and description."""

    name: str
    env: str
    default: str
    value: Any
    description: str


def _section(annotation: object) -> type[BaseModel] | None:
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        made = field.default_factory()  # type: ignore[call-arg]
        return (
            "(platform cache dir)"
            if field.default_factory.__name__ == "_default_cache_dir"
            else repr(made)
        )
    return repr(field.default)


def _masked(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return "***" if value.get_secret_value() else ""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, BaseModel):  # a table of tables ([remote.buckets."s3://b"]): its set keys
        return _masked(value.model_dump(mode="json", exclude_defaults=True))
    return value


def setting_rows(settings: Settings | None = None) -> Iterator[SettingRow]:
    """Every leaf setting, depth first, with secrets masked in ``value``."""
    current: BaseModel = settings if settings is not None else get_settings()

    def walk(
        model: type[BaseModel], obj: BaseModel | None, path: list[str]
    ) -> Iterator[SettingRow]:
        for name, field in model.model_fields.items():
            value = getattr(obj, name) if obj is not None else None
            sub = _section(field.annotation)
            if sub is not None:
                yield from walk(sub, value, [*path, name])
                continue
            yield SettingRow(
                name=".".join([*path, name]),
                env="OMNILAB_" + "__".join([*path, name]).upper(),
                default=_default(field),
                value=_masked(value),
                description=field_doc(model, name, field.description),
            )

    yield from walk(type(current), current, [])


def reference_markdown() -> str:
    """The settings reference as a Markdown table (docs/configuration.md embeds it)."""
    lines = ["| setting | env var | default | meaning |", "|---|---|---|---|"]
    for row in setting_rows(Settings.model_construct()):
        # Field docstrings use reST literals; Markdown wants single backticks.
        text = row.description.replace("``", "`").replace("|", "\\|")
        lines.append(f"| `{row.name}` | `{row.env}` | `{row.default}` | {text} |")
    return "\n".join(lines)


def config(
    json_out: Annotated[bool, typer.Option("--json", help="Print the settings as JSON.")] = False,
    reference: Annotated[
        bool,
        typer.Option(
            "--reference",
            help="Print every setting with its env var, default and meaning (Markdown).",
        ),
    ] = False,
) -> None:
    """Show the settings in effect (secrets masked) and where each comes from (the source
    column: default, file or env).

    Precedence: defaults < your own ~/.config/omnilab/omnilab.toml < the project's ./omnilab.toml
    (or $OMNILAB_CONFIG alone) < OMNILAB_* environment variables < command-line flags. A project
    file is not trusted until `omnilab trust`: it may set ordinary options only.
    """
    if reference:
        typer.echo(reference_markdown())
        return
    rows = list(setting_rows())
    if json_out:
        typer.echo(json.dumps({r.name: r.value for r in rows}, indent=2, default=str))
        return
    console = inert_console(highlight=False, emoji=False)
    sources = [item for item in describe_config() if item["role"] != "env"]
    from_file: set[str] = set()
    for item in sources:
        state = item["trust"] if item["exists"] else "not found"
        console.print(f"config file: {escape(item['source'])} ({item['role']}, {state})")
        if item.get("note"):
            console.print(f"  {escape(item['note'])}", soft_wrap=True)
        from_file.update(_with_tables(item.get("sets", [])))
    table = Table("setting", "value", "source", "env var", box=None, padding=(0, 2))
    for r in rows:
        table.add_row(r.name, escape(str(r.value)), setting_source(r, from_file), r.env)
    console.print(table)


def _with_tables(keys: list[str]) -> set[str]:
    """The dotted names ``keys`` set, with the tables that hold them."""
    found: set[str] = set()
    for key in keys:
        parts = key.split(".")
        found.update(".".join(parts[: n + 1]) for n in range(len(parts)))
    return found


def setting_source(row: SettingRow, file_keys: set[str]) -> str:
    """Where ``row``'s value comes from: ``env`` (its variable is set), ``file`` (a TOML
    file sets it), else ``default``."""
    if any(k.upper() == row.env for k in os.environ):
        return "env"
    return "file" if row.name in file_keys else "default"
