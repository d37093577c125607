"""The ``SKILL.md`` folder format, selection of the skills a task needs, and injection."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from omnilab.errors import OmnilabError
from omnilab.sandbox import place_file

__all__ = [
    "Skill",
    "SkillError",
    "load_skills",
    "render_skills",
    "select_skills",
    "stage_skills",
    "starter_dir",
    "starter_skills",
]

SKILL_FILE = "SKILL.md"
SKILLS_DIR = ".skills"
"""Where a skill's scripts are placed in the workspace: ``.skills/<name>/``."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n?(.*)\Z", re.DOTALL)
_MODALITIES = frozenset({"video", "audio", "image", "text", "document", "any"})
_WORD = re.compile(r"[a-z0-9]+")


class SkillError(OmnilabError):
    """A skills folder or ``SKILL.md`` that cannot be read (the message says which and why)."""


@dataclass(frozen=True)
class Skill:
    """One skill: what it is for, when it applies, its guide, and the files shipped with it."""

    name: str
    description: str
    body: str
    folder: Path
    modalities: tuple[str, ...] = ("any",)
    """Input kinds it helps with; ``any`` applies to every task."""
    keywords: tuple[str, ...] = ()
    """Words of a question that make it relevant (``count``, ``transcribe``, ...)."""
    files: tuple[str, ...] = ()
    """Other files of the folder (scripts), relative to it."""

    def markdown(self) -> str:
        """The skill as written back to a folder: front matter and body."""
        head = {"name": self.name, "description": self.description}
        if self.modalities != ("any",):
            head["modalities"] = list(self.modalities)  # type: ignore[assignment]
        if self.keywords:
            head["keywords"] = list(self.keywords)  # type: ignore[assignment]
        front = yaml.safe_dump(head, sort_keys=False, allow_unicode=True).strip()
        return f"---\n{front}\n---\n{self.body.strip()}\n"


def _strings(value: object, field: str, where: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SkillError(f"{where}: {field} must be a list of strings")
    return tuple(v.strip().lower() for v in value if v.strip())


def read_skill(folder: Path) -> Skill:
    """The skill in ``folder`` (its ``SKILL.md`` and other files)."""
    path = folder / SKILL_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SkillError(f"{path}: cannot read ({e.strerror})") from None
    found = _FRONT.match(text.replace("\r\n", "\n"))
    if found is None:
        raise SkillError(f"{path}: must start with a '---' front matter block (name, description)")
    try:
        meta = yaml.safe_load(found.group(1)) or {}
    except yaml.YAMLError as e:
        raise SkillError(f"{path}: front matter is not valid YAML ({e})") from None
    if not isinstance(meta, dict):
        raise SkillError(f"{path}: front matter must be a mapping of name, description, ...")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not _NAME.match(name):
        raise SkillError(f"{path}: name must be lower-case letters, digits and '-' (got {name!r})")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{path}: description is missing")
    body = found.group(2).strip()
    if not body:
        raise SkillError(f"{path}: the skill has no body")
    modalities = _strings(meta.get("modalities"), "modalities", path) or ("any",)
    unknown = set(modalities) - _MODALITIES
    if unknown:
        raise SkillError(f"{path}: unknown modalities {sorted(unknown)}; use {sorted(_MODALITIES)}")
    files = tuple(
        str(p.relative_to(folder))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and not p.is_symlink()
        and p.name != SKILL_FILE
        and "__pycache__" not in p.parts
    )
    return Skill(
        name=name,
        description=description.strip(),
        body=body,
        folder=folder,
        modalities=modalities,
        keywords=_strings(meta.get("keywords"), "keywords", path),
        files=files,
    )


def load_skills(folder: Path | str) -> list[Skill]:
    """Every skill of a skills folder (one sub-folder with a ``SKILL.md`` each), by name.

    A folder that is itself one skill (holds a ``SKILL.md``) gives that skill.
    """
    root = Path(folder)
    if not root.is_dir():
        raise SkillError(f"skills folder {root} does not exist")
    if (root / SKILL_FILE).is_file():
        return [read_skill(root)]
    skills = [read_skill(p) for p in sorted(root.iterdir()) if (p / SKILL_FILE).is_file()]
    if not skills:
        raise SkillError(f"{root} holds no skill (no <name>/{SKILL_FILE})")
    names = [s.name for s in skills]
    repeated = {n for n in names if names.count(n) > 1}
    if repeated:
        raise SkillError(f"{root}: skill names used twice: {', '.join(sorted(repeated))}")
    return skills


def starter_dir() -> Path:
    """The folder of the human-written starter skills shipped with omnilab."""
    return Path(str(resources.files("omnilab.skills").joinpath("starter")))


def starter_skills() -> list[Skill]:
    """The shipped human-written media skills."""
    return load_skills(starter_dir())


def select_skills(
    skills: Sequence[Skill], question: str, kinds: Collection[str], *, limit: int | None = None
) -> list[Skill]:
    """The skills that fit a task: those for one of its input ``kinds`` (or for ``any``),
    ranked by how many of their keywords the question holds, then by name; at most ``limit``.

    A skill for ``any`` modality always fits; a modality skill needs a matching input.
    """
    words = set(_WORD.findall(question.lower()))
    fitting = [s for s in skills if "any" in s.modalities or set(s.modalities) & set(kinds)]

    def rank(skill: Skill) -> tuple[int, str]:
        hits = sum(1 for k in skill.keywords if k in words or (" " in k and k in question.lower()))
        return (-hits, skill.name)

    ranked = sorted(fitting, key=rank)
    return ranked if limit is None else ranked[:limit]


def render_skills(skills: Sequence[Skill]) -> str:
    """The skills section injected into the system prompt ("" when there are none)."""
    if not skills:
        return ""
    blocks = [
        "",
        "Skills (procedural guides; their scripts are in .skills/<name>/ of the workspace):",
    ]
    for skill in skills:
        files = (
            f"\nFiles: {', '.join(f'.skills/{skill.name}/{f}' for f in skill.files)}"
            if skill.files
            else ""
        )
        blocks.append(f"\n## Skill: {skill.name}\n{skill.description}{files}\n\n{skill.body}")
    return "\n".join(blocks)


def stage_skills(skills: Sequence[Skill], workspace: Path) -> None:
    """Copies each skill's files into ``workspace/.skills/<name>/`` (never through a link)."""
    for skill in skills:
        for rel in skill.files:
            parts = Path(rel).parts
            place_file(
                workspace, (SKILLS_DIR, skill.name, *parts[:-1]), parts[-1], skill.folder / rel
            )
