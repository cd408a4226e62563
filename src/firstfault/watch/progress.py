"""Hang detection from progress lines: which ranks stopped making progress, and which stopped first.

A *progress line* names a step ("step 41", "iter 41", "Epoch 2 | batch 17"); it is attributed to
a rank stream as the engine attributes lines (the `[rankN]:` / `[defaultN]:` / `srun --label`
prefixes of a combined console, else the file's path), and the numbers it carries order ranks by
how far they got. A rank takes part once it has printed `min_progress_lines` of them, or one of the
same kind (`step N`) as ranks that take part print: a job where only rank 0 logs its steps is
judged by rank 0 alone, while a rank that printed one step and stopped is still judged.

Lines already in the files when watching began (the backlog) count too: they say how far each rank
got and that it takes part, as of the moment watching began. They cannot raise a hang on their
own (an old finished run is not hung): a hang needs some rank to have progressed since. A hang is
raised when some ranks print no progress for `after_seconds` while others go on, or when all fall
silent; then the ranks named are the ones that stopped first: the lowest step, else the earliest
last progress line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ingest.attribution import PathHints, parse_prefix

DEFAULT_PROGRESS = r"(?i)\b(?:global[_ ]step|step|iter(?:ation)?|batch|epoch)\b\s*[:=#]?\s*\[?(\d+)"
SIMULTANEOUS_SECONDS = 0.5  # ranks whose last progress lines are closer than this stopped "together"


@dataclass
class RankProgress:
    label: str  # "rank 3", or the file's name when no rank is known
    rank: int | None
    last_progress_at: float = 0.0
    progress_lines: int = 0
    position: tuple = ()  # the step numbers of the last progress line
    last_text: str = ""
    source: str = ""
    live_lines: int = 0  # progress lines read after watching began (not from the backlog)
    kinds: set = field(default_factory=set)  # what its progress lines count: {"step"}, {"epoch", "batch"}


@dataclass(frozen=True)
class HangVerdict:
    kind: str  # partial (some ranks stopped while others go on) | all (every rank fell silent)
    stopped_first: tuple[RankProgress, ...]
    silent: tuple[RankProgress, ...]
    active: tuple[RankProgress, ...]
    silent_for: float  # seconds since the first-named rank's last progress line

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(item.rank for item in self.stopped_first if item.rank is not None)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(item.label for item in self.stopped_first)


@dataclass
class ProgressTracker:
    after_seconds: float = 300.0
    pattern: str = DEFAULT_PROGRESS
    min_progress_lines: int = 2
    ranks: dict = field(default_factory=dict)  # label -> RankProgress

    def __post_init__(self) -> None:
        self._progress = re.compile(self.pattern)

    def observe(self, data: bytes, display: str, hints: PathHints, now: float, local_offset: int | None = None,
                backlog: bool = False) -> None:
        """Note the progress lines in one chunk of new complete lines of one file. `backlog`: the
        lines were there before watching began; `now` is then when watching began."""
        text = data.decode("utf-8", errors="replace")
        if not self._progress.search(text):
            return
        for line in text.split("\n"):
            found = list(self._progress.finditer(line))
            if not found:
                continue  # only progress lines are attributed: the regex is cheap, prefixes are not
            steps = [match.group(1) if match.groups() else match.group(0) for match in found]
            label, rank = self._who(line, display, hints, local_offset)
            entry = self.ranks.get(label)
            if entry is None:
                entry = self.ranks[label] = RankProgress(label, rank, source=display)
            entry.progress_lines += 1
            entry.live_lines += 0 if backlog else 1
            entry.kinds.add(_kind(found))
            entry.position = tuple(_number(value) for value in steps)
            entry.last_progress_at = now
            entry.last_text = line[-300:]
            entry.source = display

    def _who(self, line: str, display: str, hints: PathHints, local_offset: int | None) -> tuple[str, int | None]:
        rank = None
        if line[:1] in "[0123456789 (" or ": " in line[:40]:
            prefix = parse_prefix(line)
            rank = prefix.rank
            if rank is None and prefix.local_rank is not None:
                rank = prefix.local_rank + (local_offset or 0)
        if rank is None and hints.local_rank is not None:
            rank = hints.local_rank + (local_offset or 0)
        if rank is None:
            rank = hints.rank
        return (f"rank {rank}", rank) if rank is not None else (display, None)

    def taking_part(self) -> list[RankProgress]:
        """Streams with a cadence of their own, and streams that printed the same kind of progress
        line as those (however few: a rank may stop after its first step)."""
        regular = [entry for entry in self.ranks.values() if entry.progress_lines >= self.min_progress_lines]
        kinds = set().union(*(entry.kinds for entry in regular)) if regular else set()
        return [entry for entry in self.ranks.values()
                if entry.progress_lines >= self.min_progress_lines or (entry.kinds & kinds and entry.progress_lines)]

    def check(self, now: float) -> HangVerdict | None:
        taking_part = self.taking_part()
        if not any(entry.live_lines for entry in taking_part):
            return None  # nothing progressed since watching began: no evidence of a hang now
        silent = [entry for entry in taking_part if now - entry.last_progress_at >= self.after_seconds]
        if not silent:
            return None
        active = [entry for entry in taking_part if entry not in silent]
        first = _stopped_first(silent)
        kind = "partial" if active else "all"
        silent_for = now - min(entry.last_progress_at for entry in first)
        order = sorted(silent, key=lambda entry: (entry.rank is None, entry.rank, entry.label))
        return HangVerdict(kind, tuple(first), tuple(order), tuple(active), silent_for)

    def seconds_since_progress(self, now: float) -> dict[str, float]:
        return {label: now - entry.last_progress_at for label, entry in self.ranks.items() if entry.progress_lines}


def _kind(found: list) -> str:
    """What a progress line counts, its numbers left out: `step`, `epoch|batch`."""
    return "|".join(re.sub(r"[\d\W_]+", " ", match.group(0)).strip().lower() for match in found)


def _number(value: str) -> int:
    digits = re.sub(r"\D", "", value)
    return int(digits) if digits else 0


def _stopped_first(silent: list[RankProgress]) -> list[RankProgress]:
    """The lowest step when steps differ, else the earliest last progress line."""
    comparable = len({len(entry.position) for entry in silent}) == 1
    if comparable:
        lowest = min(entry.position for entry in silent)
        if lowest < max(entry.position for entry in silent):
            behind = [entry for entry in silent if entry.position == lowest]
            return sorted(behind, key=lambda entry: (entry.rank is None, entry.rank, entry.label))
    earliest = min(entry.last_progress_at for entry in silent)
    together = [entry for entry in silent if entry.last_progress_at - earliest < SIMULTANEOUS_SECONDS]
    return sorted(together, key=lambda entry: (entry.rank is None, entry.rank, entry.label))
