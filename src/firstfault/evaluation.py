"""Score the engine on labelled cases (the format of shared/corpus/README.md)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import FirstfaultError, InputError
from .pipeline import diagnose_paths


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
        if self.expected_class == "healthy":
            return self.got_class == "healthy"
        return self.got_class in (self.expected_class, *self.acceptable)

    @property
    def rank_scored(self) -> bool:
        return self.expected_class != "healthy" and self.expected_rank is not None

    @property
    def rank_ok(self) -> bool:
        return self.got_rank == self.expected_rank

    @property
    def correct(self) -> bool:
        return self.class_ok and (not self.rank_scored or self.rank_ok)


def find_cases(roots: list[str]) -> list[Path]:
    cases = []
    for root in roots:
        path = Path(root)
        if (path / "case.yaml").is_file():
            cases.append(path)
        elif path.is_dir():
            cases.extend(sorted(parent for parent in (p.parent for p in path.glob("*/case.yaml"))))
        else:
            raise InputError(f"{root}: not a case folder or a folder of cases", "a case folder holds case.yaml and logs/")
    if not cases:
        raise InputError(f"no cases under {', '.join(roots)}", "a case folder holds case.yaml and logs/")
    return cases


def evaluate_case(case_dir: Path) -> CaseResult:
    spec = yaml.safe_load((case_dir / "case.yaml").read_text(encoding="utf-8"))
    expect = spec.get("expect") or {}
    expected = expect.get("class", "healthy")
    try:
        diagnosis = diagnose_paths([str(case_dir / "logs")])
        got_class = diagnosis.primary.class_id if diagnosis.primary else diagnosis.status
        got_rank = diagnosis.initiating.rank if diagnosis.initiating else None
        error = ""
    except FirstfaultError as exc:
        got_class, got_rank, error = "error", None, exc.message
    return CaseResult(spec.get("id", case_dir.name), expected, tuple(expect.get("also_acceptable") or ()),
                      expect.get("initiating_rank"), got_class, got_rank, error)


@dataclass(frozen=True)
class Score:
    results: tuple[CaseResult, ...]

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
        return sum(1 for r in self.results if r.expected_class == "healthy" and r.got_class != "healthy")

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not r.correct]


def evaluate(roots: list[str]) -> Score:
    return Score(tuple(evaluate_case(case) for case in find_cases(roots)))
