"""`firstfault lab`: small real training jobs (PyTorch, CPU, gloo) with injected faults.

scenarios.py     the scenarios as data: injection flags and the truth that follows from them
train.py         the toy DDP job torchrun runs (a script; knows nothing of firstfault)
train_faults.py  what train.py plants that takes more than a line: native crashes, hangs, retries
layouts.py       how a run's logs are captured: tee, logdir, twonode, plain, srun, spawn
runner.py        runs a scenario with hard time limits and keeps it as a labelled case
processes.py     starting, signalling and killing process trees
drivers.py       the parts played outside the job: stale store, flaky mirror, OOM killer, time limit
slurm.py         what srun and slurmstepd print, in their formats
"""
