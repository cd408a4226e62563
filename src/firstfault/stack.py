"""Which software stack the logs show (launcher, framework, scheduler), and which fixes fit it.

Detection is fed by what the engine already read: a few context signatures (`stack-*`, matched in
the same single pass as every failure signature, each kept once per file: launcher banners,
framework frames and logger names, scheduler messages), the files' paths (`slurm-123.out`, torchrun's
`attempt_N/<local_rank>/` folders) and the launcher prefixes the scanner counted (`[default3]:`).

    detect_stack(scans, matches) -> (StackSeen("torchrun", "torchrun", "logs/console.log", 3), ...)
    select_fixes(entry_fixes, ("torchrun",)) -> (fixes to show, stack names of the fixes left out)

A fix is shown when its `stack` is universal (general, pytorch, nccl) or belongs to a detected
stack; the detected stack's own fixes come first. Fixes for stacks the logs do not show are named,
not shown, so a plain torchrun job does not get DeepSpeed, Kubernetes or vLLM advice.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from .model import Signature, StackSeen

SIGNATURE_PREFIX = "stack-cue-"  # the context signatures' names: stack-cue-torchrun, ...


@dataclass(frozen=True)
class Stack:
    id: str
    name: str  # as people write it
    fix_stacks: tuple[str, ...]  # the knowledge base's fix `stack` values it makes relevant
    pattern: str  # a line that shows it (kept to rare lines: each hit costs a little)
    path: str = ""  # a file path that shows it


STACKS: tuple[Stack, ...] = (
    Stack("torchrun", "torchrun", ("pytorch",),
          r"torch[/.]distributed[/.](?:run|launch|elastic)\b|\btorchrun\b", r"(?:^|/)attempt_\d+/\d+/(?:stdout|stderr)\.log$"),
    Stack("deepspeed", "DeepSpeed", ("deepspeed",),
          r"(?i)\bdeepspeed\b|\[launch\.py:\d+:main\] (?:WORLD INFO|process \d+ spawned)|\bds_accelerator\b"),
    Stack("hf-trainer", "HF Trainer", ("hf-trainer",),
          r"transformers/trainer\.py|\*{5} Running training \*{5}|\{'train_runtime': "),
    Stack("accelerate", "HF Accelerate", ("hf-accelerate",),
          r"(?:site|dist)-packages/accelerate/|\baccelerate launch\b|\baccelerate\.(?:utils|state|accelerator)\b"),
    Stack("lightning", "Lightning", ("lightning",),
          r"(?:pytorch_lightning|lightning/(?:pytorch|fabric))/|\blightning\.(?:pytorch|fabric)\b"
          r"|LOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES|[Ii]nitializing (?:ddp|distributed): GLOBAL_RANK"),
    # (spelled out, not `megatron[/.](?:core|...)`: a logger name on every line of a Megatron log
    # hits the cue at every line, and whole words cost Hyperscan a fifth less than a class between them)
    Stack("megatron", "Megatron-LM", ("megatron-lm",),
          r"\b(?:megatron/core|megatron\.core|megatron/training|megatron\.training|megatron/legacy|megatron\.legacy"
          r"|Megatron-LM)\b"),
    Stack("vllm", "vLLM", ("vllm",), r"\bvllm/|\bvLLM\b|\(VllmWorker\w*[ )]|\bvllm serve\b"),
    Stack("ray", "Ray", ("ray",),
          r"\(Ray\w*Worker pid=|\(raylet\)|\bray\.exceptions\.|\bray/(?:train|_private)/|Started a local Ray instance"),
    Stack("kubernetes", "Kubernetes", ("kubernetes",),
          r"(?i)\bkubelet\b|\bkubectl\b|\bkubernetes\b|\bOOMKilled\b|\bKUBERNETES_SERVICE_HOST\b"),
    Stack("slurm", "Slurm", ("slurm",),
          r"\bslurmstepd\b|\bslurmd\b|\bsrun(?::| --?\w)|\bsbatch\b|\bSLURM_(?:JOB_ID|PROCID|NTASKS)\b",
          r"(?:^|/)slurm-\d+(?:_\d+)?\.(?:out|err|log)$"),
    Stack("docker", "Docker", ("docker",), r"\bdocker: Error response from daemon\b|--shm-size\b|/\.dockerenv\b"),
)

UNIVERSAL_FIX_STACKS = ("general", "pytorch", "nccl")
_CUE_NAMES = frozenset(SIGNATURE_PREFIX + stack.id for stack in STACKS)
_BY_ID = {stack.id: stack for stack in STACKS}

STACK_SIGNATURES: tuple[Signature, ...] = tuple(
    Signature(entry_id="", name=SIGNATURE_PREFIX + stack.id, role="context", weight=0.0, pattern=stack.pattern,
              first_only=True)  # a Megatron log names `megatron.training` on every line: one hit per file is enough
    for stack in STACKS
)


def is_stack_cue(match) -> bool:
    return match.role == "context" and match.signature.name in _CUE_NAMES


def detect_stack(scans, matches) -> tuple[StackSeen, ...]:
    """Every stack the logs show, each with the first line (or file) that showed it, in table order."""
    seen: dict[str, StackSeen] = {}
    for match in sorted(matches, key=lambda item: item.order):
        if is_stack_cue(match):
            stack_id = match.signature.name[len(SIGNATURE_PREFIX):]
            if stack_id in _BY_ID and stack_id not in seen:
                origin = match.line.origin
                seen[stack_id] = StackSeen(stack_id, _BY_ID[stack_id].name, origin.source, origin.line)
    for scan in scans:
        display = scan.input.display
        relative = PurePath(scan.input.relative or display).as_posix()
        for stack in STACKS:
            if stack.id not in seen and stack.path and re.search(stack.path, relative):
                seen[stack.id] = StackSeen(stack.id, stack.name, display, None)
        # torchrun --tee's `[default3]:` prefixes (role + local rank) are torchelastic's own
        if "torchrun" not in seen and scan.local_to_global:
            seen["torchrun"] = StackSeen("torchrun", "torchrun", display, None)
    return tuple(seen[stack.id] for stack in STACKS if stack.id in seen)


def select_fixes(fixes: Sequence, stack_ids: Sequence[str], limit: int | None = None,
                 evidence: Sequence[str] = ()) -> tuple[list, list[str]]:
    """(the fixes to show, why the others are left out). `fixes` are knowledge-base fix items
    (dicts with `stack` and an optional `when`) or objects with those attributes.

    A fix whose `when` (a regex over the evidence lines) matches fits this failure best: the
    fixes that fit come first, whatever their stack, and a fix whose `when` does not match is
    left out while another one fits (it is for another form of the failure). Then the fixes for
    the stack the logs show, then the universal ones; their order is kept within a group."""
    wanted = [fix_stack for stack_id in stack_ids for fix_stack in _BY_ID[stack_id].fix_stacks if stack_id in _BY_ID]

    def stack_of(item) -> str:
        return item["stack"] if isinstance(item, dict) else item.stack

    def when_of(item) -> str:
        return (item.get("when") if isinstance(item, dict) else getattr(item, "when", "")) or ""

    text = "\n".join(evidence)
    fitting = [item for item in fixes if text and when_of(item) and re.search(when_of(item), text)]
    others = [item for item in fixes if item not in fitting and not (fitting and when_of(item))]
    specific = [item for item in others if stack_of(item) in wanted and stack_of(item) not in UNIVERSAL_FIX_STACKS]
    universal = [item for item in others if stack_of(item) in UNIVERSAL_FIX_STACKS]
    shown = fitting + specific + universal
    if not shown:
        shown = list(fixes)  # nothing fits what the logs show: every fix, rather than none
    if limit is not None:
        shown = shown[:limit]
    left_out = list(dict.fromkeys(
        ("another form of this failure" if fitting and when_of(item) else stack_of(item))
        for item in fixes if item not in shown))
    return shown, left_out


def stack_names(stack_ids: Sequence[str]) -> list[str]:
    return [_BY_ID[stack_id].name for stack_id in stack_ids if stack_id in _BY_ID]


def describe(stack: Sequence[StackSeen]) -> str:
    """`torchrun, Slurm` or `not recognised`, for the reports."""
    return ", ".join(item.name for item in stack) if stack else "not recognised"
