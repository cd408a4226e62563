"""Faults planted in framework training jobs (the framework lab of 2026-12-06, twelfth session)."""
import ctypes, logging, os, signal, time
import torch

log = logging.getLogger("train")
LABELS = ["cat", "dog", "bird", "fish"]


def at(args, rank, step):
    if getattr(args, "once", False) and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        return False  # a transient fault: only the first attempt meets it
    return args.fault != "none" and rank == args.rank and step == args.step


def in_step(args, rank, step, logits, y):
    """Faults that fire inside a training step; returns (logits, y) possibly altered."""
    if not at(args, rank, step):
        return logits, y
    kind = args.fault
    if kind == "index":
        _names = [LABELS[int(i) + len(LABELS) // 2 + 2] for i in y.tolist()]  # ids offset past the label map
    elif kind == "target":
        y = y.clone(); y[0] = 9  # a label id the head does not have
    elif kind == "sigkill":
        log.info("prefetching shard cache (%d MB)", 4096)
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "segv":
        ctypes.string_at(0)
    elif kind == "nan":
        logits = logits * float("inf")
    elif kind == "diskfull":
        torch.save({"step": step}, "/dev/full")
    elif kind == "import":
        import flash_attn_interface  # noqa: F401  (this node's image lacks it)
    elif kind == "keyerror":
        record = {"x": 1}
        record["label"]
    elif kind == "straggle":
        log.info("uploading checkpoint shard %d to remote storage", rank)
        time.sleep(args.sleep)
    return logits, y
