"""Reads a tfc-train grid's output folder for the experiment reports.

tfc-train names each run of a grid by its values
(`spec.model.depth=6,spec.residual.enabled=false,seed=2`) and writes
`OUT/<run>/log.csv` (step,lr,loss,grad_norm,...). The experiments' reports
group those runs by their values; this module is the one place that parses
the names and logs, and draws the plots with gnuplot.
"""

import csv
import math
import os
import shutil
import subprocess
import sys


class Run:
    def __init__(self, folder):
        self.folder = folder
        self.name = os.path.basename(folder)
        # Values never hold commas in these grids (no list-valued axes); a
        # run without a grid is named "run" and has none.
        self.values = dict(part.split("=", 1) for part in self.name.split(",")
                           if "=" in part)
        with open(os.path.join(folder, "log.csv")) as f:
            rows = list(csv.DictReader(f))
        self.steps = [int(r["step"]) for r in rows]
        self.loss = [float(r["loss"]) for r in rows]
        self.grad_norm = [float(r["grad_norm"]) for r in rows]
        # Held-out loss at the evaluation steps (nan at the others).
        self.eval_loss = [float(r["eval_loss"]) if r.get("eval_loss") else math.nan
                          for r in rows]
        self.tokens_per_s = [float(r["tokens_per_s"]) for r in rows]

    def get(self, key):
        return self.values[key]

    def loss_at(self, step):
        """The loss logged at `step` (nan past the run's end)."""
        for s, v in zip(self.steps, self.loss):
            if s == step:
                return v
        return math.nan

    def last_loss(self):
        return self.loss[-1]


def load(out):
    runs = []
    for entry in sorted(os.listdir(out)):
        folder = os.path.join(out, entry)
        if os.path.isfile(os.path.join(folder, "log.csv")):
            runs.append(Run(folder))
    if not runs:
        sys.exit(f"runs.py: no run folders with a log.csv in {out}")
    return runs


def spread(values):
    """'mean (min-max)' of finite values, 'mean' for one."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.4f}"
    return f"{mean:.4f} ({min(values):.4f}-{max(values):.4f})"


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def publish(out, table, seed_words):
    """Writes table.txt (the table, then the seed's words) and prints both."""
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(table + "\n\n" + seed_words + "\n")
    print(table)
    print()
    print(seed_words)


def gnuplot(script):
    """Runs a gnuplot script; a machine without gnuplot gets a note."""
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot (scripts/install-deps.sh installs it)")
        return False
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    return True


LN64 = math.log(64)  # the copy task's loss when nothing is learned
