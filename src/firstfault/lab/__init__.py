"""`firstfault lab`: small real training jobs (PyTorch, CPU, gloo) with injected faults.

scenarios.py  the scenarios as data: injection flags and the truth that follows from them
train.py      the toy DDP job torchrun runs (a script; knows nothing of firstfault)
layouts.py    how a run's logs are captured: tee, logdir, twonode, plain
runner.py     runs a scenario with hard time limits and keeps it as a labelled case
"""
