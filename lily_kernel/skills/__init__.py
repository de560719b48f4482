"""Skills: parse SKILL.md files, load them from ordered roots, snapshot the result."""

from lily_kernel.skills.eligibility import Host, check_eligibility
from lily_kernel.skills.fields import Frontmatter, shown_fields
from lily_kernel.skills.frontmatter import MAX_SKILL_BYTES, SkillFormatError, parse_skill_document
from lily_kernel.skills.invocation import expand_skill_body, split_arguments
from lily_kernel.skills.loader import (
    LoadRules,
    check_skill_directory,
    discover_candidates,
    drop_shared_aliases,
    load_snapshot,
)
from lily_kernel.skills.models import (
    Diagnostic,
    DiagnosticKind,
    Eligibility,
    Skill,
    SkillRoot,
    SkillSnapshot,
    SnapshotDiff,
    diff_snapshots,
)
from lily_kernel.skills.ranker import (
    RELEVANT_SCORE,
    Ranked,
    SkillIndex,
    SkillRanker,
    query_words,
)
from lily_kernel.skills.roots import (
    ARRIVING_SOURCES,
    bundled_dir,
    lily_home,
    resolve_skill_roots,
)

__all__ = [
    "ARRIVING_SOURCES",
    "MAX_SKILL_BYTES",
    "RELEVANT_SCORE",
    "Diagnostic",
    "DiagnosticKind",
    "Eligibility",
    "Frontmatter",
    "Host",
    "LoadRules",
    "Ranked",
    "Skill",
    "SkillFormatError",
    "SkillIndex",
    "SkillRanker",
    "SkillRoot",
    "SkillSnapshot",
    "SnapshotDiff",
    "bundled_dir",
    "check_eligibility",
    "check_skill_directory",
    "diff_snapshots",
    "discover_candidates",
    "drop_shared_aliases",
    "expand_skill_body",
    "lily_home",
    "load_snapshot",
    "parse_skill_document",
    "query_words",
    "resolve_skill_roots",
    "shown_fields",
    "split_arguments",
]
