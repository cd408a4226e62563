"""Run framework jobs with planted faults; write each as a labelled case (id/logs, case.yaml)."""
import os, signal, subprocess, sys, time, shutil
from pathlib import Path
import yaml

# the virtualenv with torch, lightning, transformers and accelerate (see README.md)
BIN = os.path.join(os.environ.get("FRAMEWORK_VENV", "/tmp/fw"), "bin"); PY = os.path.join(BIN, "python")
LAB = os.path.dirname(os.path.abspath(__file__))
OUT = Path(sys.argv[1]); OUT.mkdir(parents=True, exist_ok=True)
PEER = ["collective-timeout-peer-crash"]
# the releases in the venv, as each case records them
VERSIONS = subprocess.run([PY, "-c", "import importlib.metadata as m\nnames = []\nfor p in ('torch', 'lightning', 'transformers', "
                           "'accelerate', 'deepspeed', 'ray'):\n    try: names.append(p + ' ' + m.version(p))\n    except m.PackageNotFoundError: pass\n"
                           "print(', '.join(names))"], capture_output=True, text=True).stdout.strip()
TRUTH = {  # fault: class, also_acceptable, has initiating rank, what was done
    "index": ("user-code-exception", PEER, True, "At global step {step} rank {rank}'s training step mapped its label ids through a label list with an offset past its end and raised 'IndexError: list index out of range'."),
    "target": ("user-code-exception", PEER, True, "At global step {step} rank {rank}'s batch had a label id 9 for a 4-class head; F.cross_entropy raised 'IndexError: Target 9 is out of bounds'."),
    "dskey": ("user-code-exception", PEER, True, "Rank {rank}'s dataset had records without their label (every index 7 mod 50); the record's lookup raised KeyError when the DataLoader reached it."),
    "keyerror": ("user-code-exception", PEER, True, "At global step {step} rank {rank}'s step looked up a record's 'label', which its exporter had not written (KeyError)."),
    "sigkill": ("host-oom-killed", PEER, True, "At global step {step} rank {rank} was killed with SIGKILL (what the kernel OOM killer sends), leaving no traceback."),
    "segv": ("collective-timeout-peer-crash", ["native-crash"], True, "At global step {step} rank {rank} read through a NULL pointer (ctypes.string_at(0)) and died of SIGSEGV."),
    "diskfull": ("disk-full", PEER, True, "At global step {step} rank {rank} saved a state file to /dev/full (ENOSPC)."),
    "import": ("python-import-error", PEER, True, "At global step {step} rank {rank} imported flash_attn_interface, which is not installed (ModuleNotFoundError)."),
    "inplace": ("autograd-inplace", PEER, True, "Rank {rank}'s forward multiplies the sigmoid output in place (g.mul_(0.5)), which sigmoid's backward needs; its first backward raised 'one of the variables needed for gradient computation has been modified by an inplace operation'."),
    "unused": ("ddp-unused-parameters", [], False, "The model has an auxiliary head that never reaches the loss and DDP was built without find_unused_parameters; every rank raised 'Expected to have finished reduction' at the second step."),
    "barrier": ("collective-mismatch", [], True, "After epoch 0 rank {rank} alone called torch.distributed.barrier() 'waiting for the metrics writer' inside `if rank == ...`; from then on its collectives no longer matched the others'."),
    "nan": ("loss-nan", [], False, "At global step {step} rank {rank}'s logits were multiplied by inf, so its loss was NaN; the logged train_loss is synced over ranks, and EarlyStopping(check_finite=True) stopped the run at the end of the epoch. The logs cannot tell which rank's loss was NaN."),
    "resume": ("state-dict-mismatch", PEER, False, "The job resumed (ckpt_path=) from a checkpoint written by a model with hidden size 48, where the model has 64; every rank loads it and raised 'Error(s) in loading state_dict ... size mismatch'."),
    "sigterm": ("preempted-sigterm", [], False, "The driver sent SIGTERM {target} 7 s (Ray: 25 s) after start, in the middle of training, as a scheduler preempting the job does. No rank started it."),
    "none": ("healthy", [], False, "No fault was injected; the run finished."),
    "transient": ("healthy", [], False, "At global step {step} of the first attempt only, rank {rank} was killed with SIGKILL; torchrun (--max-restarts 2) restarted the worker group, and the second attempt trained to the end: the job succeeded."),
    "hub": ("hub-unreachable", [], False, "Every rank loaded the config of the model the run starts from (AutoConfig.from_pretrained('bert-base-uncased')) on a machine with no route to huggingface.co and nothing in its cache."),
    "padtoken": ("hf-tokenizer-missing-pad-token", PEER, False, "The collator pads each batch's captions with a tokenizer saved without a pad token; every rank raised 'Asking to pad but the tokenizer does not have a padding token' at its first batch."),
    "safetensors": ("safetensors-header-error", ["checkpoint-corrupt", *PEER], False, "The job resumed (resume_from_checkpoint=) from a checkpoint folder whose model.safetensors an interrupted copy had cut to 60 %; every rank's load raised SafetensorError 'Error while deserializing header'."),
    "batchsize": ("deepspeed-batch-size-mismatch", [], False, "The DeepSpeed config's train_batch_size (32) was written for 4 ranks; with {ws} ranks, 8 per rank and no accumulation, every rank's deepspeed.initialize raised 'Check batch related parameters'."),
    "nanloss": ("loss-nan", [], False, "At global step {step} rank {rank}'s logits were multiplied by inf; its NaN gradients were averaged into every rank's weights, so every rank logged loss nan from then on, and the run went on to its end."),
    "straggle": ("collective-timeout-straggler", [], True, "At global step {step} rank {rank} logged 'uploading checkpoint shard {rank} to remote storage' and then took 40 s, longer than the 15 s process-group timeout; the other ranks timed out waiting for it."),
}
FLAGS = {"inplace": ["--inplace"], "unused": ["--unused"], "barrier": ["--barrier"], "nan": ["--finite-check"],
         "dskey": ["--workers", "1"]}  # (lit.py's and hf.py's options)
SCRIPT_FAULTS = {"nanloss": "nan", "transient": "sigkill"}  # the truth's name -> the script's fault


def command(layout, ws, port, fault, rank, step, work):
    fault_arg = "none" if fault in ("inplace", "unused", "barrier", "resume", "sigterm", "safetensors", "batchsize") else fault
    fault_arg = SCRIPT_FAULTS.get(fault_arg, fault_arg)
    common = ["--fault", fault_arg, "--rank", str(rank), "--step", str(step)]
    if layout.startswith(("lit-", "hf-")):
        common += FLAGS.get(fault, [])
    if fault == "batchsize":
        common += ["--train-batch-size", "32"]
    if fault == "transient":
        common += ["--once"]
    if fault == "sigterm":
        common += ["--steps", "1000000"] if layout.startswith(("ds", "ray")) else ["--epochs", "200"]
    if fault == "resume":
        common += ["--resume", f"{work}/last.ckpt"]
    if fault == "safetensors":
        common += ["--resume", f"{work}/checkpoint-8"]
    if fault == "straggle":
        common += ["--timeout", "15", "--sleep", "40"]
    tr = [f"{BIN}/torchrun", "--nproc-per-node", str(ws), "--master-addr", "127.0.0.1", "--master-port", str(port)]
    if layout == "lit-sub":
        return [PY, f"{LAB}/lit.py", "--devices", str(ws), *common], {"MASTER_PORT": str(port)}
    if layout == "lit-tqdm":
        return [PY, f"{LAB}/lit.py", "--devices", str(ws), "--bar", "tqdm", *common], {"MASTER_PORT": str(port)}
    if layout == "lit-spawn":
        return [PY, f"{LAB}/lit.py", "--devices", str(ws), "--strategy", "ddp_spawn", *common], {"MASTER_PORT": str(port)}
    if layout == "lit-torchrun":
        return [*tr, "--tee", "3", f"{LAB}/lit.py", "--devices", str(ws), *common], {}
    if layout == "hf-torchrun":
        return [*tr, "--tee", "3", f"{LAB}/hf.py", *common], {}
    if layout == "hf-restarts":  # torchrun restarts the worker group up to twice
        return [*tr, "--max-restarts", "2", "--tee", "3", f"{LAB}/hf.py", *common], {}
    if layout == "lit-restarts":
        return [*tr, "--max-restarts", "2", "--tee", "3", f"{LAB}/lit.py", "--devices", str(ws), *common], {}
    if layout == "ds":  # DeepSpeed's launcher on one node (--num_gpus: processes, here on the CPU accelerator)
        return [f"{BIN}/deepspeed", "--num_gpus", str(ws), "--master_port", str(port), f"{LAB}/ds.py", *common], {}
    if layout == "ds-torchrun":
        return [*tr, "--tee", "3", f"{LAB}/ds.py", *common], {}
    if layout == "ray":  # Ray Train's TorchTrainer: the driver's console holds every worker's lines
        return [PY, f"{LAB}/raytrain.py", "--workers", str(ws), *common], {}
    if layout == "hf-logdir":  # per-rank files under <log-dir>/<run id>/attempt_0/<local rank>/, the agent's console
        return [*tr, "--log-dir", str(work / "torchrun"), "--redirects", "3", f"{LAB}/hf.py", *common], {}
    if layout == "hf-accelerate":
        return [f"{BIN}/accelerate", "launch", "--multi_gpu", "--num_processes", str(ws), "--num_machines", "1",
                "--main_process_port", str(port), "--mixed_precision", "no", "--dynamo_backend", "no",
                f"{LAB}/hf.py", *common], {}
    raise SystemExit(layout)


def run(layout, fault, ws, rank, step, port):
    cid = f"{layout}-{fault}-ws{ws}-r{rank}" if TRUTH[fault][2] else f"{layout}-{fault}-ws{ws}"
    case = OUT / cid
    if case.exists():
        shutil.rmtree(case)
    logs = case / "logs"; logs.mkdir(parents=True)
    work = Path(f"/tmp/fwwork/{cid}"); shutil.rmtree(work, ignore_errors=True); work.mkdir(parents=True)
    if fault == "resume":
        subprocess.run([PY, f"{LAB}/lit.py", "--hidden", "48", "--save", f"{work}/last.ckpt", "--devices", "1"],
                       check=True, capture_output=True, cwd=work)
    if fault == "safetensors":
        subprocess.run([PY, f"{LAB}/hf.py", "--save-truncated", f"{work}/checkpoint-8"], check=True, capture_output=True, cwd=work)
    if layout == "lit-twonode":  # two torchrun agents as two nodes, one process each
        runs = []
        for node in range(2):
            argv = [f"{BIN}/torchrun", "--nnodes", "2", "--nproc-per-node", str(ws // 2), "--node-rank", str(node),
                    "--master-addr", "127.0.0.1", "--master-port", str(port), f"{LAB}/lit.py", "--devices", str(ws // 2),
                    "--nodes", "2", *command("lit-sub", ws, port, fault, rank, step, work)[0][4:]]
            runs.append((argv, f"node{node}.log"))
        env_extra = {}
    else:
        argv, env_extra = command(layout, ws, port, fault, rank, step, work)
        runs = [(argv, "console.log")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRSTFAULT", "OMP"))}
    env.update(env_extra, HOME="/tmp/fwhome", PYTHONDONTWRITEBYTECODE="1")
    start = time.time()
    procs, target = [], ""
    for argv, name in runs:
        with open(logs / name, "wb") as out:
            procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=work, env=env,
                                          start_new_session=True))
    try:
        if fault == "sigterm":
            time.sleep(25 if layout == "ray" else 7)  # (Ray takes 10-15 s to start its workers)
            if layout.startswith("lit-sub") or layout in ("lit-tqdm", "ray", "ds"):
                os.killpg(procs[0].pid, signal.SIGTERM); target = "to every process of the job (its process group)"
            else:
                procs[0].send_signal(signal.SIGTERM); target = "to the launcher"
        codes = [proc.wait(timeout=150) for proc in procs]
        rc = codes[0] if len(codes) == 1 else codes
    except subprocess.TimeoutExpired:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGKILL)
        rc = "killed after 150 s by the driver"
    if layout == "hf-logdir":
        shutil.copytree(work / "torchrun", logs / "torchrun")
    cls, also, has_rank, what = TRUTH[fault]
    what = what.format(step=step, rank=rank, target=target, ws=ws)
    where = {"lit-twonode": "each agent's console in logs/node<K>.log",
             "hf-logdir": "the agent's console in logs/console.log, each rank's output under logs/torchrun/"}
    launch = "; ".join(" ".join(a.replace(LAB + "/", "") for a in argv) for argv, _name in runs)
    spec = {
        "id": cid, "provenance": "real-run",
        "source": f"tools/framework-lab/drive.py, {time.strftime('%Y-%m-%d')}: {layout}, {ws} ranks ({VERSIONS}; CPU, gloo)",
        "expect": {"class": cls, "also_acceptable": also,
                   "initiating_rank": rank if has_rank else None, "initiating_host": None,
                   "collateral_ranks": [r for r in range(ws) if r != rank] if has_rank else []},
        "notes": f"Injected: {what} Launch: {launch}; {where.get(layout, 'the combined console in logs/console.log')}. Observed exit "
                 f"code: {rc}; {time.time() - start:.0f} s. Real run; log contents are unedited.",
    }
    (case / "case.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=110))
    size = sum(p.stat().st_size for p in case.rglob("*") if p.is_file())
    print(f"{cid} rc={rc} {time.time() - start:.0f}s {size // 1024} kB", flush=True)


if __name__ == "__main__":
    port = 29700
    for line in Path(sys.argv[2]).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            layout, fault, ws, rank, step = line.split()
            port += 3
            run(layout, fault, int(ws), int(rank), int(step), port)
