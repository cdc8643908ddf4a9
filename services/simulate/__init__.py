"""Closed-loop what-if simulation (issue 6): a simulated cluster on simulated time that feeds a
trace to the scheduler and applies its decisions (``cluster``, ``loop``), the FCFS and EASY
baselines (``baselines``), the numbers operators care about (``metrics``) and a self-contained
HTML report (``report``). ``run.simulate`` ties them together for ``schedstream simulate``."""
