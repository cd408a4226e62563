"""A console several worker processes share, each line after the process's prefix (Ray's
`(RayTrainWorker pid=N, ip=A)`, vLLM's `(VllmWorkerProcess pid=N)`), which names no rank: each
process is a stream of its own, and takes the rank its own lines say (Ray Train's set-up line,
`[rankN]:` before a traceback, a message that starts with `rank N`)."""
from __future__ import annotations

from firstfault.pipeline import diagnose_texts

HOSTS = {0: "10.0.0.5", 1: "10.0.0.6", 2: "10.0.0.7"}


def _worker(rank: int, text: str) -> str:
    return f"(RayTrainWorker pid={4100 + rank}, ip={HOSTS[rank]}) {text}"


def _console(setup) -> str:
    """Three workers train, rank 2 goes off to write its checkpoint shard and never returns; the
    others print two more steps, then their collective times out."""
    lines = [_worker(rank, setup(rank)) for rank in range(3)]
    for step in (100, 101):
        lines += [_worker(rank, f"2026-12-05 10:0{step - 100}:0{rank},000 INFO train: step {step} loss 2.1")
                  for rank in range(3)]
    lines.append(_worker(2, "2026-12-05 10:01:05,000 INFO train: saving checkpoint shard to /mnt/ckpt/step101"))
    for step in (102, 103):
        lines += [_worker(rank, f"2026-12-05 10:0{step - 100}:0{rank},000 INFO train: step {step} loss 2.0")
                  for rank in range(2)]
    for rank in range(2):
        lines.append(_worker(rank, f"[rank{rank}]:[E1205 10:14:00.000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog "
                                   "caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, "
                                   "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."))
    return "\n".join(lines) + "\n"


def _diagnose(setup):
    return diagnose_texts([("ray-driver.log", _console(setup))])


def test_the_worker_that_went_silent_is_named_by_its_set_up_line():
    diagnosis = _diagnose(lambda rank: f"Setting up process group for: env:// [rank={rank}, world_size=3]")
    assert diagnosis.primary.failure_id == "collective-timeout-straggler"
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, HOSTS[2])


def test_the_worker_that_went_silent_is_named_by_its_own_messages():
    diagnosis = _diagnose(lambda rank: f"2026-12-05 09:59:0{rank},000 INFO train: rank {rank}: loaded shard {rank} of 3")
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, HOSTS[2])


def test_a_worker_whose_lines_name_no_rank_is_not_given_one():
    """Nothing ties the silent process to a rank: its host is known, its rank is not said."""
    diagnosis = _diagnose(lambda rank: "2026-12-05 09:59:00,000 INFO train: worker started")
    assert diagnosis.primary.failure_id == "collective-timeout-straggler"
    assert diagnosis.initiating.rank is None


def test_ray_train_v2s_list_of_its_workers_names_their_ranks():
    """Ray Train v2's controller lists the workers it started (`(ip=A, pid=P) world_rank=R, ...`):
    that names each worker process's rank, though the workers print no set-up line."""
    listed = "\n".join(f"(TrainController pid=3900) - (ip={HOSTS[rank]}, pid={4100 + rank}) world_rank={rank}, "
                       f"local_rank={rank}, node_rank=0" for rank in range(3))
    diagnosis = diagnose_texts([("ray-driver.log", listed + "\n" + _console(lambda rank: "worker started"))])
    assert (diagnosis.initiating.rank, diagnosis.initiating.host) == (2, HOSTS[2])


def test_the_controllers_quote_of_a_workers_error_is_not_its_own_rank():
    """`(TrainController pid=P) [Rank 0 Error Snippet]:` quotes rank 0's error: the controller's
    process is not rank 0, while a worker whose messages start with its rank is."""
    from firstfault import pipeline
    from firstfault.ingest.sources import in_memory_inputs
    from firstfault.kb import load_knowledge_base

    quote = "\n".join(["(TrainController pid=3900) [Rank 0 Error Snippet]:",
                       "(TrainController pid=3900) The actor is dead because its worker process has died.",
                       "(TrainController pid=3900) [Rank 0 Error Snippet]:",
                       "(RayTrainWorker pid=4101) rank 1: loaded shard 1 of 3"])
    scan = pipeline.scanner_for(load_knowledge_base()).scan(in_memory_inputs([("ray-driver.log", quote + "\n")])[0])
    assert 3900 not in scan.worker_pids
    assert scan.worker_pids.get(4101) == 1
