"""Skills: reusable procedural guides injected into an agent's prompt (Code-X §2.3).

A skills folder holds one folder per skill, each with a ``SKILL.md``: a front matter block
(``name``, ``description``, optional ``modalities`` and ``keywords``) and a Markdown body; any
other files of the folder (scripts) are copied into the workspace under ``.skills/<name>/`` so
the agent can run them. :func:`starter_skills` are the human-written media skills shipped with
omnilab.
"""

from omnilab.skills._skill import (
    Skill,
    SkillError,
    load_skills,
    render_skills,
    select_skills,
    stage_skills,
    starter_dir,
    starter_skills,
)

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
