"""Consequence rule: what the first fault explains among the other failures (collateral)."""
from __future__ import annotations

from collections import defaultdict

from ..facts import Facts
from . import Decision, rule

SHOWN_GROUPS = 3


def _ranks(ranks: set) -> str:
    from ...render.diagnosis_text import ranks_text

    return ranks_text(sorted(ranks))


@rule("consequences")
def consequences(facts: Facts, decision: Decision) -> Decision | None:
    """The other failures that came after the first fault are its consequences (the knowledge
    base says which failures each one explains)."""
    groups: dict[str, set] = defaultdict(set)
    first = {}
    for match in facts.winners:
        if match is decision.initiating or match.entry_id == decision.primary or match in decision.went_past:
            continue  # (what the run went past did not follow from the fault)
        groups[match.entry_id].add(match.line.origin.rank)
        first.setdefault(match.entry_id, match)
    if not groups:
        return None
    explained = [entry for entry in groups if facts.relations.explained_by(decision.primary, entry)]
    ordered = sorted(groups, key=lambda entry: (entry not in explained, -len(groups[entry])))[:SHOWN_GROUPS]
    parts = []
    for entry in ordered:
        ranks = {rank for rank in groups[entry] if rank is not None}
        parts.append(f"{entry} on rank{'s' if len(ranks) != 1 else ''} {_ranks(ranks)}" if ranks else entry)
    text = "then " + "; ".join(parts) + (f" (and {len(groups) - SHOWN_GROUPS} more)" if len(groups) > SHOWN_GROUPS else "")
    text += f": consequences of {decision.primary}" if explained else ": they followed it"
    return decision.with_because("consequences", text, [first[entry] for entry in ordered])


@rule("crash-took-down-peers")
def crash_took_down_peers(facts: Facts, decision: Decision) -> Decision | None:
    """A native crash that other ranks failed waiting for: the job failed as a peer crash (the
    entry that explains it stays native-crash)."""
    from ..ids import NATIVE_CRASH, PEER_CRASH

    if facts.relations.core(decision.primary) != NATIVE_CRASH:
        return None
    crashed = decision.rank if decision.rank is not None else decision.initiating.line.origin.rank
    peers = {m.line.origin.rank for m in facts.collateral if m.line.origin.rank not in (None, crashed)}
    if not peers:
        return None
    return decision.with_because(
        "crash-took-down-peers",
        f"rank {crashed if crashed is not None else '?'} died of a signal and {len(peers)} other rank(s) failed "
        "waiting for it: the job failed as a peer crash", failure_class=PEER_CRASH)
