"""The rule table: every verdict rule, in the order it runs. `firstfault rules` lists it."""
from __future__ import annotations

from ..facts import Facts
from . import Decision, Stage, run_stage
from .action import action_from_entry
from .consequences import consequences, crash_took_down_peers
from .host import host_of_rank, host_of_tied_ranks, named_on_its_line, needs_host, only_host
from .ending import finished_after_it, job_finished, restarted_and_went_on
from .hang import (aborted_together, after_the_end, all_timed_out, alone_in_barrier, back_too_late, different_collectives, first_collective, late_arrival,
                   never_joined, p2p_redirected, sequence_behind, stacks_differ, step_behind)
from .outcome import failed_unexplained, nothing_failed, peer_lost_elsewhere, peer_vanished, survived_errors
from .primary import earliest_root, specific_symptom, strongest_symptom
from .progress import hang_unattributed, hung, launcher_went_on, outlived_by_progress, silent_first, stop_after_fault, stop_ended_hang
from .rank import (complement, every_rank_alike, first_second_alike, launcher_first, one_host_alike, launcher_tie, mismatch_no_odd_one, needs_rank, odd_one_out, only_process, raised_by_the_launcher, rank_from_bus, rank_from_device_event,
                   rank_from_device_index, rank_from_pid, rank_from_table_record, same_fault_nearby, waited_for)
from .teardown import (after_first_timeout, after_launcher_report, after_own_failure, explained_by_another, loopback_across_hosts,
                       sigterm_from_the_launcher, waiting_for_failed_rank)


def _undecided(facts: Facts, decision: Decision) -> bool:
    return not decision.status


def _failure(facts: Facts, decision: Decision) -> bool:
    return decision.status == "failure"


STAGES: tuple[Stage, ...] = (
    Stage("ending", (job_finished,), first_only=True),
    Stage("healthy", (survived_errors,), first_only=True, when=_undecided),
    Stage("filter", (restarted_and_went_on, finished_after_it, loopback_across_hosts, after_first_timeout, after_own_failure,
                     sigterm_from_the_launcher, after_launcher_report, outlived_by_progress, launcher_went_on,
                     stop_after_fault, stop_ended_hang, waiting_for_failed_rank, explained_by_another),
          when=_undecided),
    Stage("primary", (aborted_together, specific_symptom, earliest_root, strongest_symptom), first_only=True, when=_undecided),
    Stage("hang", (sequence_behind, different_collectives, stacks_differ, alone_in_barrier, late_arrival, never_joined, back_too_late,
                   step_behind, silent_first, first_collective, p2p_redirected, after_the_end,
                   all_timed_out, hang_unattributed), first_only=True, when=hung),
    # (a lone rank that lost its peers after the end hung on nothing: its peers had left, so it
    # is decided here, where failures no other stage explained are)
    Stage("outcome", (after_the_end, nothing_failed, peer_vanished, peer_lost_elsewhere, failed_unexplained), first_only=True, when=_undecided),
    Stage("initiating", (odd_one_out, mismatch_no_odd_one, every_rank_alike, one_host_alike, first_second_alike, waited_for),
          when=_failure),
    Stage("rank", (rank_from_table_record, rank_from_pid, rank_from_bus, rank_from_device_index, same_fault_nearby, complement,
                   rank_from_device_event, raised_by_the_launcher, only_process, launcher_first, launcher_tie),
          first_only=True, when=needs_rank),
    Stage("host", (named_on_its_line, host_of_rank, only_host, host_of_tied_ranks), first_only=True, when=needs_host),
    Stage("consequences", (consequences, crash_took_down_peers), when=_failure),
    Stage("action", (action_from_entry,), when=_failure),
)


def decide(facts: Facts) -> Decision:
    decision = Decision(roots=facts.roots, symptoms=facts.symptoms)
    for stage in STAGES:
        decision = run_stage(stage, facts, decision)
    return decision


def all_rules():
    """(stage, rule) pairs in the order they run."""
    return [(stage.name, item) for stage in STAGES for item in stage.rules]
