"""When only timeouts are printed: name the rank that never arrived, or say why no one can be named."""
from __future__ import annotations

from firstfault.pipeline import diagnose_texts


def _watchdog(rank: int, seq: int, enqueued: int, completed: int, op: str = "ALLREDUCE") -> str:
    return "\n".join([
        f"[rank{rank}]:[E0301 10:12:43.400000 7{rank} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.",
        f"[rank{rank}]:[E0301 10:12:43.401000 7{rank} ProcessGroupNCCL.cpp:1767] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception (either an error or timeout) "
        f"detected by watchdog at work: {seq}, last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.",
    ])


def _gloo_timeout(rank: int, frame_op: str) -> str:
    return "\n".join([
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4000, in {frame_op}',
        f"[rank{rank}]:     work.wait()",
        f"[rank{rank}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 30000ms for recv operation to complete",
    ])


def _answer(texts):
    diagnosis = diagnose_texts(texts)
    return diagnosis.primary.failure_id, diagnosis.initiating.rank


def test_silent_rank_from_nccl_sequence_numbers():
    # rank 2 never enqueued collective 9141: its last work is 9140
    texts = [(f"rank{r}.log", _watchdog(r, 9141, 9141, 9140)) for r in (0, 1, 3)]
    texts.append(("rank2.log", "[rank2]:[E0301 10:12:44.000000 72 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
                               "Received a dump signal due to a collective timeout from rank 0 and we will try our best to dump the debug info. "
                               "Last enqueued NCCL work: 9140, last completed NCCL work: 9140."))
    assert _answer(texts) == ("collective-timeout-straggler", 2)


def test_silent_rank_is_the_one_that_printed_nothing():
    texts = [(f"rank{r}.log", _gloo_timeout(r, "all_reduce")) for r in (0, 1, 3)]
    texts.append(("rank2.log", "2026-03-01 10:00:00,000 INFO rank 2: saving checkpoint to /ckpt/step_1000\n"))
    assert _answer(texts) == ("collective-timeout-straggler", 2)


def test_ranks_in_different_collectives_are_a_mismatch():
    texts = [(f"rank{r}.log", _gloo_timeout(r, "barrier" if r in (0, 3) else "all_reduce")) for r in range(4)]
    failure_id, _rank = _answer(texts)
    assert failure_id == "collective-mismatch"


def test_one_rank_alone_in_the_end_of_epoch_barrier_is_uneven_batches():
    backward = "\n".join([
        "[rank{r}]: Traceback (most recent call last):",
        '[rank{r}]:   File "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 829, in _engine_run_backward',
        "[rank{r}]:     return Variable._execution_engine.run_backward(  # Calls into the C++ engine",
        "[rank{r}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4242",
    ])
    texts = [(f"rank{r}.log", backward.format(r=r)) for r in (0, 1, 3)]
    texts.append(("rank2.log", _gloo_timeout(2, "barrier")))
    assert _answer(texts) == ("uneven-batches-hang", 2)


_BACKWARD_FRAMES = "\n".join([
    "[rank{r}]: Traceback (most recent call last):",
    '[rank{r}]:   File "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 829, in _engine_run_backward',
    "[rank{r}]:     return Variable._execution_engine.run_backward(  # Calls into the C++ engine",
])
_BACKWARD_TIMEOUT = _BACKWARD_FRAMES + "\n[rank{r}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 4000ms for recv operation to complete"
_BACKWARD_DISCONNECT = _BACKWARD_FRAMES + "\n[rank{r}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4242"
_BARRIER_DISCONNECT = _gloo_timeout(2, "barrier").replace(
    "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 30000ms for recv operation to complete",
    "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:4243")


def test_uneven_batches_whoever_timed_out_first():
    """Which ranks time out and which only lose their peer is a race; the rank whose data ran out
    (alone at the epoch-end barrier) is named either way."""
    # the barrier rank timed out; one backward rank timed out too, the other only lost its peer (1:1 tie)
    tie = [("rank0.log", _BACKWARD_DISCONNECT.format(r=0)), ("rank1.log", _BACKWARD_TIMEOUT.format(r=1)),
           ("rank2.log", _gloo_timeout(2, "barrier"))]
    assert _answer(tie) == ("uneven-batches-hang", 2)
    # the backward ranks timed out first; the barrier rank only saw them leave
    late = [("rank0.log", _BACKWARD_TIMEOUT.format(r=0)), ("rank1.log", _BACKWARD_TIMEOUT.format(r=1)),
            ("rank2.log", _BARRIER_DISCONNECT)]
    assert _answer(late) == ("uneven-batches-hang", 2)


def _epoch_lines(rank: int, epochs) -> str:
    return "".join(f"2026-03-01 10:00:0{epoch},000 INFO train: epoch {epoch}: rank {rank} shard has 128 samples -> 8 steps\n"
                   for epoch in epochs)


def test_a_barrier_against_a_later_epochs_all_reduce_is_an_extra_barrier_not_uneven_data():
    """What each rank did last tells the two apart: uneven data leaves the others in the same
    epoch; an extra barrier on one rank pairs with their epoch-end barrier, and they go on into
    the next epoch (its traceback's frames do not hide the epoch it was in)."""
    extra = [(f"rank{r}.log", _epoch_lines(r, (0, 1)) + _BACKWARD_TIMEOUT.format(r=r) + "\n") for r in (1, 2)]
    extra.append(("rank0.log", _epoch_lines(0, (0,)) + _gloo_timeout(0, "barrier") + "\n"))
    assert _answer(extra) == ("collective-mismatch", 0)
    uneven = [(f"rank{r}.log", _epoch_lines(r, (0, 1)) + _BACKWARD_TIMEOUT.format(r=r) + "\n") for r in (1, 2)]
    uneven.append(("rank0.log", _epoch_lines(0, (0, 1)) + _gloo_timeout(0, "barrier") + "\n"))
    assert _answer(uneven) == ("uneven-batches-hang", 0)


def _lone_watchdog(hh_mm_ss: str) -> str:
    return (f"[rank0]:[E0520 {hh_mm_ss}.310000777 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=124377, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 milliseconds before timing out.\n")


def test_a_lone_timeout_in_a_collective_begun_after_training_ended_is_one_only_that_rank_called():
    head = ("[rank0]: initializing (rank 0/4 on gpu-l40s-04, local_rank 0)\n[rank1]: ready\n[rank2]: ready\n[rank3]: ready\n"
            "[2026-05-20 15:41:35,000][train][INFO] - Training complete; artefacts in outputs/run\n")
    after = diagnose_texts([("slurm.out", head + _lone_watchdog("16:11:35"))])  # began 15:41:35, as training ended
    assert (after.primary.failure_id, after.initiating.rank) == ("collective-mismatch", 0)
    during = diagnose_texts([("slurm.out", head + _lone_watchdog("15:51:35"))])  # began 15:21:35, during training
    assert during.primary.failure_id == "collective-timeout-straggler"


def test_acs_redirect_alone_is_a_setting_not_a_failure():
    acs = "00:03.1 PCI bridge: AMD GPP Bridge\n\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
    healthy = ("[2026-03-30 10:00:00,000] step 100 loss 2.1\n[2026-03-30 10:10:00,000] step 200 loss 1.9\n"
               "{'train_runtime': 1200.5, 'train_samples_per_second': 29.9, 'train_steps_per_second': 0.9, 'train_loss': 1.9, 'epoch': 1.0}\n")
    assert diagnose_texts([("lspci.txt", acs), ("train.log", healthy)]).status == "healthy"


def test_ctrl_c_is_never_the_failure_it_answers():
    """Node 1's workers failed (their errors cut from what was pasted); on node 0 someone pressed
    Ctrl-C. The interrupt is not a preemption to restart from: the class cannot be told, and the
    failed ranks are shown where they failed."""
    node0 = ("[2024-03-01 10:00:00,000] INFO step 120 loss 1.93\n"
             "^CWARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 188101 got signal: 2\n")
    node1 = "".join(f"[{index}]:\n  time      : 2024-03-01_10:00:05\n  host      : a100-node-02\n"
                    f"  rank      : {8 + index} (local_rank: {index})\n  exitcode  : 1 (pid: {210400 + index})\n"
                    "  error_file: <N/A>\n" for index in range(3))
    diagnosis = diagnose_texts([("node0-a100-node-01.log", node0), ("node1-a100-node-02.log", node1)])
    assert (diagnosis.status, diagnosis.primary) == ("unknown", None)
    assert diagnosis.action != "restart"
    assert {(row.rank, row.host, row.ended) for row in diagnosis.ranks if row.rank >= 8} == {
        (8, "a100-node-02", "failed"), (9, "a100-node-02", "failed"), (10, "a100-node-02", "failed")}
    alone = diagnose_texts([("node0.log", node0)])
    assert alone.primary is None or "preempted-sigterm" not in (alone.primary.failure_id, alone.primary.failure_class)
