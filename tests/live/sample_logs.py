"""Small canned rank logs for the live unit tests (a real run's shape, shortened)."""
from __future__ import annotations

RANK0 = """\
2026-12-02 17:57:30,100 INFO train: rank 0 of 2 started
2026-12-02 17:57:31,100 INFO train: step 0 loss 1.3861
2026-12-02 17:57:31,400 INFO train: step 1 loss 1.3712
2026-12-02 17:57:31,700 INFO train: step 2 loss 1.3519
[rank0]: Traceback (most recent call last):
[rank0]:   File "/job/train.py", line 68, in main
[rank0]:     dist.all_reduce(parameter.grad)
[rank0]:   File "/venv/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
[rank0]:     work.wait()
[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:38284. This is typically caused by a remote worker crashing.
"""

RANK1 = """\
2026-12-02 17:57:30,120 INFO train: rank 1 of 2 started
2026-12-02 17:57:31,110 INFO train: step 0 loss 1.3790
2026-12-02 17:57:31,410 INFO train: step 1 loss 1.3655
[rank1]: Traceback (most recent call last):
[rank1]:   File "/job/train.py", line 58, in main
[rank1]:     names.append(LABELS[len(LABELS)])
[rank1]: IndexError: list index out of range
"""

LOGS = {"rank0.log": RANK0, "rank1.log": RANK1}
