"""Action rule: what an on-call engineer should do with the job, from the entry's `action`."""
from __future__ import annotations

from ..facts import Facts
from . import Decision, rule

EXCLUDE = "exclude-host-and-restart"
WHY = {
    "restart": "a transient failure: restarting the job (from its last checkpoint) is the remedy",
    EXCLUDE: "a hardware fault of the host: keep the job off that host, then restart it",
    "fix-and-rerun": "a code, data or configuration problem: a restart would fail the same way; fix it, then rerun",
}


def exclusion_commands(hosts: list[str], reason: str) -> list[str]:
    """The Slurm and Kubernetes commands that keep the next run off the given hosts."""
    joined = ",".join(hosts)
    commands = [f'scontrol update NodeName={joined} State=DRAIN Reason="firstfault: {reason}"',
                f"sbatch --exclude={joined} job.sh"]
    for host in hosts:
        commands += [f"kubectl cordon {host}", f"kubectl taint nodes {host} firstfault/{reason}=true:NoSchedule"]
    return commands


def failing_hosts(decision: Decision) -> list[str]:
    origin = decision.initiating.line.origin if decision.initiating is not None else None
    host = decision.host or (origin.host if origin else None)
    return [host] if host else []


@rule("action-from-entry")
def action_from_entry(facts: Facts, decision: Decision) -> Decision | None:
    """The first fault's entry says whether to restart, exclude the host and restart, or fix."""
    if decision.status != "failure":
        return None
    action = facts.relations.action(decision.primary)
    detail: tuple = ()
    text = f"{decision.primary} is {WHY[action]}"
    if action == EXCLUDE:
        hosts = failing_hosts(decision)
        detail = (("hosts", tuple(hosts)), ("commands", tuple(exclusion_commands(hosts, facts.relations.core(decision.primary))) if hosts else ()))
        text += f" (host {', '.join(hosts)})" if hosts else " (the logs do not name the host: find it from the job's node list)"
    return decision.with_because("action-from-entry", text, action=action, action_detail=detail)
