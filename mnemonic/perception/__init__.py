"""Deciding what watcher events become memories: the heuristic filter, runtime exclusions
and project resolution. Pure logic (plus cached ``.git`` lookups); the perception agent
runs it, redacts what passes and writes it."""

from mnemonic.config import FilterConfig, ProjectSpec
from mnemonic.perception.exclusions import Exclusion, RuntimeExclusions
from mnemonic.perception.filter import (
    Accept,
    Decision,
    Drop,
    DropReason,
    HeuristicFilter,
    LlmGate,
)
from mnemonic.perception.projects import ProjectResolver

__all__ = [
    "Accept",
    "Decision",
    "Drop",
    "DropReason",
    "Exclusion",
    "FilterConfig",
    "HeuristicFilter",
    "LlmGate",
    "ProjectResolver",
    "ProjectSpec",
    "RuntimeExclusions",
]
