"""The facts of one diagnosis, built once from the matches: what every verdict rule reads.

Rules never look at matches directly for anything these facts already say (which lines are
roots, symptoms, timeouts, launcher reports, frames), so each rule can be unit-tested by building
Facts by hand.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..match.context import FRAME_SIGNATURES, LAUNCHER_FAILED
from ..model import InputSummary, Match
from .activity import StreamActivity
from .events import Incident, incidents, line_winners, time_key
from .hang_stacks import HangStack, hang_stacks
from .identity import IdentityMap
from .hangs import is_disconnect
from .ids import PEER_CRASH
from .nonfatal import without_nonfatal
from .raised_in import where_raised
from .relations import Relations

SIGTERM_CODES = ("-15", "15", "143")  # a launcher's own SIGTERM to the others, not a failure


@dataclass(frozen=True)
class Facts:
    matches: tuple[Match, ...]  # every hit, non-fatal tracebacks removed
    winners: tuple[Match, ...]  # the strongest failure signature of each line
    roots: tuple[Incident, ...]  # root lines grouped per rank stream, earliest first
    inputs: InputSummary = field(default_factory=InputSummary)
    single_process: bool = False
    source_lines: dict = field(default_factory=dict)  # source -> the number of its last line
    relations: Relations = field(default_factory=Relations)
    activity: tuple[StreamActivity, ...] = ()  # what each rank stream last printed
    identity: IdentityMap = field(default_factory=IdentityMap)  # who is who: ranks, pids, GPUs, hosts

    @cached_property
    def symptoms(self) -> tuple[Match, ...]:
        return tuple(match for match in self.winners if match.role == "symptom")

    @cached_property
    def collateral(self) -> tuple[Match, ...]:
        return tuple(match for match in self.winners if match.role == "collateral")

    @cached_property
    def timeouts(self) -> tuple[Match, ...]:
        """Collective timeouts (not mere disconnects) printed by ranks waiting for a peer."""
        return tuple(match for match in self.collateral if match.entry_id == PEER_CRASH and not is_disconnect(match))

    @cached_property
    def frames(self) -> tuple[Match, ...]:
        return tuple(match for match in self.matches if match.signature.name in FRAME_SIGNATURES)

    @cached_property
    def hang_stacks(self) -> tuple[HangStack, ...]:
        """Stacks of hung processes the logs show (Ctrl-C tracebacks, faulthandler dumps)."""
        return hang_stacks(self.matches)

    @cached_property
    def launcher_failures(self) -> tuple[Match, ...]:
        """The launcher's reports of a worker exiting with an error (not its own SIGTERM)."""
        return tuple(match for match in self.matches if match.signature.name in LAUNCHER_FAILED
                     and match.captures.get("code") not in SIGTERM_CODES)

    @cached_property
    def failure_tables(self) -> tuple:
        """torchrun's failure tables in the logs, read once (correlate/failure_table.py)."""
        from .failure_table import read_tables

        return read_tables(self.matches)

    @cached_property
    def hosts(self) -> frozenset:
        """Every host the logs name: seen by the scan, or tied to a rank (one means one node)."""
        return frozenset(host for host in (*self.inputs.hosts, *self.identity.named) if host)

    @cached_property
    def rows(self) -> dict:
        """What each rank did last (correlate/rank_table.py), by rank."""
        from .rank_table import build_rows

        return build_rows(self)

    def first_time_of(self, matches) -> tuple | None:
        timed = [time_key(match) for match in matches if match.line.origin.time is not None]
        return min(timed) if timed else None


def build_facts(matches: list[Match], inputs: InputSummary, single_process: bool = False,
                source_lines: dict | None = None, relations: Relations | None = None, activity=(),
                identity: IdentityMap | None = None) -> Facts:
    kept = where_raised(without_nonfatal(matches))
    winners = line_winners(kept)
    return Facts(tuple(kept), tuple(winners), tuple(incidents(winners, ("root",))), inputs, single_process,
                 dict(source_lines or {}), relations or Relations(), tuple(activity), identity or IdentityMap())
