"""Score the engine on labelled cases (`case.yaml` + `logs/`, see docs/corpus.md).

A diagnosis is right for a case when its primary failure (the core class or the specific entry)
is the expected class or one of `also_acceptable`, and, where the case names them, the
initiating rank and host are the ones it names. Every case also has a verdict line
(`id class rank host`) so a committed file of them works as a ratchet: a change shows exactly
which cases moved.

A case that cannot be scored (its case.yaml is not a mapping, names a class no knowledge-base
entry has, has no logs/) is reported as invalid with the reason: never counted as a miss, never
a traceback.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import FirstfaultError, InputError
from .pipeline import diagnose_paths


def class_accepted(got_class: str, got_entry: str, accepted) -> bool:
    """A diagnosis names an accepted class by its failure class or by the knowledge-base entry behind it
    (an entry that specialises a core class, e.g. `host-memory-enomem` of `host-oom-killed`)."""
    return got_class in accepted or (bool(got_entry) and got_entry in accepted)


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    expected_class: str
    acceptable: tuple[str, ...]
    expected_rank: int | None
    got_class: str
    got_rank: int | None
    error: str = ""
    got_entry: str = ""
    expected_host: str | None = None
    got_host: str | None = None
    known_miss: str = ""  # why the case is knowingly missed (its case.yaml says so)

    @property
    def class_ok(self) -> bool:
        if self.expected_class == "healthy":
            return self.got_class == "healthy"
        return class_accepted(self.got_class, self.got_entry, (self.expected_class, *self.acceptable))

    @property
    def rank_scored(self) -> bool:
        return self.expected_class != "healthy" and self.expected_rank is not None

    @property
    def rank_ok(self) -> bool:
        return self.got_rank == self.expected_rank

    @property
    def host_scored(self) -> bool:
        return self.expected_class != "healthy" and bool(self.expected_host)

    @property
    def host_ok(self) -> bool:
        return self.got_host == self.expected_host

    @property
    def correct(self) -> bool:
        return (self.class_ok and (not self.rank_scored or self.rank_ok)
                and (not self.host_scored or self.host_ok))

    @property
    def verdict_line(self) -> str:
        """`id class rank host`: what the engine said, `-` for none."""
        shown_class = self.got_entry if self.got_entry and self.got_entry != self.got_class else ""
        klass = f"{self.got_class}/{shown_class}" if shown_class else self.got_class
        rank = "-" if self.got_rank is None else str(self.got_rank)
        return f"{self.case_id} {klass} {rank} {self.got_host or '-'}"


@dataclass(frozen=True)
class InvalidCase:
    """A case that cannot be scored, and why."""

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
            raise InputError(f"{root}: not a case folder or a folder of cases", "a case folder holds case.yaml and logs/ (docs/corpus.md)")
    if not cases:
        raise InputError(f"no cases under {', '.join(roots)}", "a case folder holds case.yaml and logs/ (docs/corpus.md)")
    return cases


def read_case(case_dir: Path, known_classes: set[str]) -> tuple[dict, str]:
    """(the case.yaml mapping, "") or ({}, why the case cannot be scored)."""
    try:
        spec = yaml.safe_load((case_dir / "case.yaml").read_text(encoding="utf-8"))
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
    return spec, ""


def evaluate_case(case_dir: Path, spec: dict, kb=None, diagnose=None) -> CaseResult:
    """The case's result; `diagnose(logs_dir)` gives the diagnosis of its logs (the pipeline's by default)."""
    expect = spec.get("expect") or {}
    expected = expect.get("class", "healthy")
    got_entry, got_host = "", None
    try:
        logs = case_dir / "logs"
        diagnosis = diagnose(logs) if diagnose is not None else diagnose_paths([str(logs)], kb=kb)
        got_class = diagnosis.primary.class_id if diagnosis.primary else diagnosis.status
        got_entry = diagnosis.primary.failure_id if diagnosis.primary else ""
        got_rank = diagnosis.initiating.rank if diagnosis.initiating else None
        got_host = diagnosis.initiating.host if diagnosis.initiating else None
        error = ""
    except FirstfaultError as exc:
        got_class, got_rank, error = "error", None, exc.message
    except Exception as exc:  # a bug of ours on this case: said on its line; the other cases are still scored
        got_class, got_rank, error = "error", None, f"internal error {type(exc).__name__}: {exc}"
    return CaseResult(spec.get("id", case_dir.name), expected, tuple(expect.get("also_acceptable") or ()),
                      expect.get("initiating_rank"), got_class, got_rank, error, got_entry,
                      expect.get("initiating_host"), got_host, str(spec.get("known_miss") or ""))


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
    def host_accuracy(self) -> float:
        scored = [r for r in self.results if r.host_scored]
        return self._ratio(sum(r.host_ok for r in scored), len(scored))

    @property
    def healthy_false_alarms(self) -> int:
        return sum(1 for r in self.results if r.expected_class == "healthy" and r.got_class != "healthy")

    @property
    def failures_called_healthy(self) -> int:
        """Failed runs the engine called healthy: the worst miss (an on-call engineer stops looking)."""
        return sum(1 for r in self.results if r.expected_class != "healthy" and r.got_class == "healthy")

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not r.correct]

    @property
    def unexpected_misses(self) -> list[CaseResult]:
        """Misses whose case does not say it is knowingly missed."""
        return [r for r in self.misses if not r.known_miss]

    def verdict_lines(self) -> list[str]:
        return [result.verdict_line for result in self.results]


def evaluate(roots: list[str], kb=None, diagnose=None) -> Score:
    """Every case under `roots` scored. `diagnose(logs_dir)`, when given, diagnoses a case's logs
    in the pipeline's place (the test suite's cache, which other tests of the same cases share)."""
    from .kb import load_knowledge_base

    kb = kb or load_knowledge_base()
    known = {entry.id for entry in kb.entries} | {old for entry in kb.entries for old in entry.get("redirect_from") or ()}
    known |= {"healthy", "unknown"}
    results, invalid = [], []
    for case in find_cases(roots):
        spec, problem = read_case(case, known)
        if problem:
            invalid.append(InvalidCase(case.name, str(case / "case.yaml"), problem))
        else:
            results.append(evaluate_case(case, spec, kb, diagnose))
    return Score(tuple(results), tuple(invalid))


def verdict_changes(expected_lines: list[str], actual_lines: list[str]) -> list[str]:
    """The differences between a committed verdict file and today's verdicts, one per case."""
    expected = {line.split(" ", 1)[0]: line for line in expected_lines if line.strip() and not line.startswith("#")}
    actual = {line.split(" ", 1)[0]: line for line in actual_lines}
    changes = []
    for case_id in sorted(expected.keys() | actual.keys()):
        before, after = expected.get(case_id), actual.get(case_id)
        if before != after:
            changes.append(f"{case_id}: was '{before or '(no line)'}', now '{after or '(no case)'}'")
    return changes
