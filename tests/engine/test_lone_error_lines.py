"""A final error line pasted alone, as people paste them: a line that states an error is never
answered "healthy" (unrecognised, it is a failure the knowledge base cannot name yet), and the
known ones get their class. The lines are the kinds issue 24 names, in the formats the tools
print (first sight and after: docs/first-sight.md, "Error lines pasted alone")."""
from __future__ import annotations

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_texts

KB = load_knowledge_base()
UNNAMED = None  # a failure no entry names yet: status `unknown`, never `healthy`
LINES = [
    ("safetensors-enospc", "disk-full",
     "safetensors_rust.SafetensorError: Error while serializing: I/O error: No space left on device (os error 28)"),
    ("hip-invalid-device-function", "cuda-no-kernel-image", "torch.AcceleratorError: HIP error: invalid device function"),
    ("xla-cudnn-version", "cuda-version-mismatch",
     "E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] Loaded runtime CuDNN library: 8.5.0 but source was "
     "compiled with: 8.6.0.  CuDNN library needs to have matching major version and equal or higher minor version."),
    ("kernel-fallen-off-bus", "gpu-fallen-off-bus", "[ 8123.456789] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."),
    ("nvlink-xid", "nvlink-error",
     "[ 9811.120034] NVRM: Xid (PCI:0000:b7:00): 74, pid=20931, name=python, NVLink: fatal error detected on link 3"
     "(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"),
    ("tf-allocator", "cuda-oom",
     "2026-03-01 10:00:00.123456: W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out "
     "of memory trying to allocate 4.00GiB (rounded to 4294967296)requested by op MatMul"),
    ("nccl-socket-recv", UNNAMED,
     "gpu-node-07:2211:2290 [3] NCCL WARN NET/Socket : peer 10.0.0.12<53211> failed to receive: Connection reset by peer"),
    ("tensorrt-oom", UNNAMED,
     "[12/04/2026-10:00:00] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory "
     "(no further information)"),
    ("cudnn-not-loaded", "missing-shared-library",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: "
     "No such file or directory"),
    ("nccl-unhandled-system-error", "nccl-system-error",
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
     "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3"),
    ("hip-oom", "cuda-oom",
     "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 63.98 GiB "
     "of which 1.02 GiB is free."),
    ("go-enospc", "disk-full", "Error: write /var/lib/docker/overlay2/abc/merged/ckpt.bin: no space left on device"),
    ("errno-28", "disk-full", "OSError: [Errno 28] No space left on device: '/ckpt/step_1000/model.safetensors'"),
    ("error-word", UNNAMED, "ERROR: job step 42.0 aborted: unrecognised frobnicator state 0x7"),
    ("fatal-word", UNNAMED, "FATAL: quux daemon lost its lease on shard 12"),
    # a shell in a zh_CN locale (glibc's and bash's Simplified Chinese messages)
    ("zh-segfault", "native-crash", "段错误 (核心已转储)"),
    ("zh-bus-error-job", "native-crash", "./train.sh: 行 12: 40312 总线错误               (核心已转储) python train.py"),
    ("zh-killed-job", "host-oom-killed", "./launch_rank.sh: 行 10: 14874 已杀死                  python train.py"),
]


@pytest.mark.parametrize("name,expected,line", LINES, ids=[item[0] for item in LINES])
def test_a_lone_error_line_is_never_healthy_and_known_ones_are_named(name, expected, line):
    diagnosis = diagnose_texts([("pasted.log", line + "\n")], kb=KB)
    assert diagnosis.status != "healthy"
    if expected is UNNAMED:
        assert diagnosis.status == "unknown"
    else:
        assert diagnosis.status == "failure" and diagnosis.primary.failure_id == expected


def test_a_recurring_error_the_run_went_on_past_is_not_a_failure_at_the_end():
    """The same statement, numbers aside, outlived before: the log ending on it is no failure."""
    lines = []
    for step in range(1, 200):
        lines.append(f"Epoch 0:   {step * 100 // 4943}%|▋          | {step}/4943 [00:{step % 60:02d}<21:31,  3.79it/s, "
                     f"loss={7 - step / 100:.2f}, v_num=z34s]")
        if step % 40 == 0:
            lines.append(f"wandb: ERROR Error while calling W&B API: internal database error (<Response [500]>) #{step}")
    lines.append("wandb: ERROR Error while calling W&B API: internal database error (<Response [500]>) #200")
    assert diagnose_texts([("console.log", "\n".join(lines) + "\n")], kb=KB).status == "healthy"
    once = [line for line in lines if "wandb" not in line] + [lines[-1]]
    assert diagnose_texts([("console.log", "\n".join(once) + "\n")], kb=KB).status != "healthy"
