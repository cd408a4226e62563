"""Score the engine on labelled cases (the format of docs/cases.md).

A case folder holds `case.yaml` (what is expected) and `logs/`. A case that cannot be scored (its
case.yaml is not a mapping, names a class no knowledge-base entry has, has no logs) is reported as
invalid with the reason, never counted as a miss and never a traceback.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import FirstfaultError, InputError
from .pipeline import diagnose_paths

HEALTHY = "healthy"


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    expected_class: str
    acceptable: tuple[str, ...]
    expected_rank: int | None
    got_class: str
    got_rank: int | None
    error: str = ""

    @property
    def class_ok(self) -> bool:
        if self.expected_class == HEALTHY:
            return self.got_class == HEALTHY
        return self.got_class in (self.expected_class, *self.acceptable)

    @property
    def rank_scored(self) -> bool:
        return self.expected_class != HEALTHY and self.expected_rank is not None

    @property
    def rank_ok(self) -> bool:
        return self.got_rank == self.expected_rank

    @property
    def correct(self) -> bool:
        return self.class_ok and (not self.rank_scored or self.rank_ok)


@dataclass(frozen=True)
class InvalidCase:
    """A case that cannot be scored, and why (file:line-free: case.yaml is small)."""

    case_id: str
    path: str
    reason: str


def find_cases(roots: list[str]) -> list[Path]:
    cases = []
    for root in roots:
        path = Path(root)
        if (path / "case.yaml").is_file():
            cases.append(path)
        elif path.is_dir():
            cases.extend(sorted(parent for parent in (p.parent for p in path.glob("*/case.yaml"))))
        else:
            raise InputError(f"{root}: not a case folder or a folder of cases", "a case folder holds case.yaml and logs/ (docs/cases.md)")
    if not cases:
        raise InputError(f"no cases under {', '.join(roots)}", "a case folder holds case.yaml and logs/ (docs/cases.md)")
    return cases


def read_case(case_dir: Path, known_classes: set[str]) -> tuple[dict, str]:
    """(expect, problem): the case's expectations, or why the case cannot be scored."""
    path = case_dir / "case.yaml"
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot read case.yaml: {exc}"
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return {}, f"case.yaml is not valid YAML{f' (line {mark.line + 1})' if mark else ''}"
    if not isinstance(spec, dict):
        return {}, f"case.yaml must be a mapping with `id` and `expect`, not {type(spec).__name__} {str(spec)[:40]!r}"
    expect = spec.get("expect")
    if not isinstance(expect, dict) or not expect.get("class"):
        return {}, "case.yaml has no `expect:` mapping with a `class`"
    for name in [expect["class"], *(expect.get("also_acceptable") or ())]:
        if name not in known_classes:
            close = difflib.get_close_matches(str(name), sorted(known_classes), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return {}, f"{name!r} is not a known class{hint}: use a knowledge-base id or `healthy`"
    rank = expect.get("initiating_rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
        return {}, f"initiating_rank must be a whole number or null, not {rank!r}"
    if not (case_dir / "logs").exists():
        return {}, "the case has no logs/ folder"
    return {"id": str(spec.get("id") or case_dir.name), **expect}, ""


def evaluate_case(case_dir: Path, expect: dict, kb=None) -> CaseResult:
    try:
        diagnosis = diagnose_paths([str(case_dir / "logs")], kb=kb)
        got_class = diagnosis.primary.class_id if diagnosis.primary else diagnosis.status
        got_rank = diagnosis.initiating.rank if diagnosis.initiating else None
        error = ""
    except FirstfaultError as exc:
        got_class, got_rank, error = "error", None, exc.message
    return CaseResult(expect["id"], expect["class"], tuple(expect.get("also_acceptable") or ()),
                      expect.get("initiating_rank"), got_class, got_rank, error)


@dataclass(frozen=True)
class Score:
    results: tuple[CaseResult, ...]
    invalid: tuple[InvalidCase, ...] = ()

    def _ratio(self, hits: int, total: int) -> float:
        return hits / total if total else 1.0

    @property
    def class_accuracy(self) -> float:
        return self._ratio(sum(r.class_ok for r in self.results), len(self.results))

    @property
    def rank_accuracy(self) -> float:
        scored = [r for r in self.results if r.rank_scored]
        return self._ratio(sum(r.rank_ok for r in scored), len(scored))

    @property
    def healthy_false_alarms(self) -> int:
        return sum(1 for r in self.results if r.expected_class == HEALTHY and r.got_class != HEALTHY)

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not r.correct]


def evaluate(roots: list[str], kb=None) -> Score:
    from .kb import load_knowledge_base

    kb = kb or load_knowledge_base()
    known = {entry.id for entry in kb.entries} | {old for entry in kb.entries for old in entry.get("redirect_from") or ()}
    known |= {HEALTHY, "unknown"}
    results, invalid = [], []
    for case in find_cases(roots):
        expect, problem = read_case(case, known)
        if problem:
            invalid.append(InvalidCase(case.name, str(case / "case.yaml"), problem))
        else:
            results.append(evaluate_case(case, expect, kb))
    return Score(tuple(results), tuple(invalid))
