"""Follow-up questions on corpus cases, the answers checked against the cases' labels: "why not
rank C" on a collateral rank C names the rule and cites the line where the labelled first rank
failed; "what did rank N do last" cites rank N's own last line; "why not <the collateral class>"
calls it collateral. Only cases the engine gets right count (an answer explains the diagnosis)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from firstfault.ask import answer, intent_of
from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_paths
from firstfault.render.contract import to_contract

KB = load_knowledge_base()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def labelled_cases() -> list[tuple[Path, dict]]:
    cases = []
    for corpus in ("dev", "real"):
        for case in sorted((FIXTURES / corpus).iterdir()):
            if not (case / "case.yaml").is_file():
                continue
            expect = yaml.safe_load((case / "case.yaml").read_text())["expect"]
            if expect.get("initiating_rank") is not None and expect.get("collateral_ranks"):
                cases.append((case, expect))
    return cases


@pytest.fixture(scope="module")
def answered(corpus_diagnosis) -> list[tuple[str, dict, dict]]:
    """(case, labels, contract) of the cases whose first rank the engine finds (the knowledge base
    the cases were diagnosed with is the one `KB` loads: the package's own)."""
    kept = []
    for case, expect in labelled_cases():
        contract = to_contract(corpus_diagnosis(case / "logs"))
        where = (contract.get("primary") or {}).get("initiating") or {}
        if where.get("rank") == expect["initiating_rank"]:
            kept.append((case.name, expect, contract))
    return kept


def test_enough_cases(answered):
    assert len(answered) >= 15


def test_why_not_a_collateral_rank_cites_the_first_fault(answered):
    for name, expect, contract in answered:
        first = contract["primary"]["initiating"]
        for rank in expect["collateral_ranks"][:2]:
            if rank == expect["initiating_rank"]:
                continue
            reply = answer(intent_of(f"why not rank {rank}?"), contract, KB)
            text = " ".join(reply.lines)
            assert f"rank {expect['initiating_rank']}" in text, (name, text)
            assert (first["source"], first["line"]) in {(item["source"], item["line"]) for item in reply.evidence}, name
            assert "rule `" in text, (name, text)  # which rule decided


def test_what_a_rank_did_last_cites_its_own_line(answered):
    checked = 0
    for name, expect, contract in answered:
        for row in contract.get("ranks") or []:
            if row.get("ended_line") is None:
                continue
            reply = answer(intent_of(f"what did rank {row['rank']} do last"), contract, KB)
            assert reply.lines[0].startswith(f"Rank {row['rank']}"), (name, reply.lines)
            assert (row["ended_line"]["source"], row["ended_line"]["line"]) in {
                (item["source"], item["line"]) for item in reply.evidence}, name
            checked += 1
            break
    assert checked >= 10


def test_why_not_the_loud_collateral_calls_it_a_consequence(answered):
    checked = 0
    for name, _, contract in answered:
        for item in contract.get("collateral") or []:
            words = item["failure_id"].replace("-", " ")
            reply = answer(intent_of(f"why not the {words}?"), contract, KB)
            assert "collateral" in reply.lines[0] and "after the first fault" in reply.lines[1], (name, reply.lines)
            checked += 1
            break
    assert checked >= 10


def test_a_rank_the_logs_do_not_show_is_said_so(answered):
    _, _, contract = answered[0]
    reply = answer(intent_of("what did rank 4096 do last"), contract, KB)
    assert "nothing of rank 4096" in reply.lines[0]


def test_why_not_a_rank_when_every_rank_raised_it_alike():
    """Every rank refused the nccl backend (a real run): asked why not rank 0, the answer says rank 0
    raised it too, as its own first error, cites that line, and names the rule that decided no
    single rank started it; it does not call rank 0's errors collateral."""
    case = FIXTURES / "real" / "nccl-on-cpu-build-twonode-ws4-r1"
    contract = to_contract(diagnose_paths([str(case / "logs")], kb=KB))
    assert contract["primary"]["initiating"]["rank"] is None
    row = next(row for row in contract["ranks"] if row["rank"] == 0)
    reply = answer(intent_of("why not rank 0?"), contract, KB)
    text = " ".join(reply.lines)
    assert "Rank 0 raised the first fault too" in text and "collateral" not in text
    assert "rule `every-rank-alike`" in text and "every rank alike" in text
    cited = row["first_error_line"]
    assert (cited["source"], cited["line"]) in {(item["source"], item["line"]) for item in reply.evidence}


def test_why_not_an_error_the_launcher_got_past_names_the_rule_not_a_consequence():
    """A second torchrun agent logged that the store's port was taken, then joined and started its
    workers; the job was preempted later (a real torch 2.1 run). Asked why not port-in-use, the
    answer says the rule that set it aside, not that it came after the first fault."""
    case = FIXTURES / "real" / "preempted-slurm-twonode-ws4-r2-torch21"
    contract = to_contract(diagnose_paths([str(case / "logs")], kb=KB))
    assert contract["primary"]["failure_id"] == "preempted-sigterm"
    reply = answer(intent_of("why not port-in-use?"), contract, KB)
    text = " ".join(reply.lines)
    assert "rule `launcher-went-on`" in text and "after the first fault" not in text
    assert ("node1.log", 6) in {(Path(item["source"]).name, item["line"]) for item in reply.evidence}
