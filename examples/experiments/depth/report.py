"""Experiment 2's report: post-LN, pre-LN and DeepNorm at depth 100 and
1000; compile time and object size. Usage: report.py OUT MODE."""

import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import runs  # noqa: E402

LEARNED = 1.0  # as experiment 1: well below ln 64 means the model copies
POSITIONS = ("post", "pre", "deepnorm")

SEED = """seed 000: "DeepNorm (Wang 2022) y = LN(alpha x + f(x)) ... made training 1000+ layers possible"
seed 001: post-LN needs warm-up (its gradient norm grows O(L) toward the output); pre-LN does not"""


def main():
    out, mode = sys.argv[1], sys.argv[2]
    all_runs = runs.load(out)
    rows, curves = [], []
    for r in all_runs:
        depth, pos, warmup, seed = (int(r.get("spec.model.depth")),
                                    r.get("spec.norm.position"),
                                    int(r.get("optimizer.warmup")), int(r.get("seed")))
        rows.append([depth, pos, warmup, seed, r.steps[-1], r.loss_at(50), r.last_loss(),
                     max(r.grad_norm), int(r.last_loss() < LEARNED)])
        curves += [[depth, pos, warmup, seed, s, v] for s, v in zip(r.steps, r.loss)]
    rows.sort(key=lambda row: (row[0], POSITIONS.index(row[1]), row[2], row[3]))
    runs.write_csv(os.path.join(out, "results.csv"),
                   ["depth", "position", "warmup", "seed", "steps", "loss_50", "loss_last",
                    "max_grad_norm", "learned"], rows)
    runs.write_csv(os.path.join(out, "curves.csv"),
                   ["depth", "position", "warmup", "seed", "step", "loss"], curves)

    lines = [f"copy task, width 32, Adam 1e-3 ({mode}); "
             f"learned = last loss < {LEARNED} (ln 64 = {runs.LN64:.3f})",
             f"{'depth':>5}  {'position':>8}  {'warm-up':>7}  {'steps':>5}  "
             f"{'loss @50':>26}  {'last loss':>26}  learned"]
    for depth in sorted({row[0] for row in rows}):
        for pos in POSITIONS:
            for warmup in sorted({row[2] for row in rows}):
                group = [row for row in rows
                         if row[0] == depth and row[1] == pos and row[2] == warmup]
                if group:
                    lines.append(f"{depth:>5}  {pos:>8}  {warmup:>7}  {group[0][4]:>5}  "
                                 f"{runs.spread([g[5] for g in group]):>26}  "
                                 f"{runs.spread([g[6] for g in group]):>26}  "
                                 f"{sum(g[8] for g in group)}/{len(group)}")
    with open(os.path.join(out, "compile.csv")) as f:
        compiled = list(csv.DictReader(f))
    lines += ["", "compile time and object size (tfc spec -o model.o, this machine):",
              f"{'depth':>5}  {'compile s':>9}  {'object bytes':>12}  {'parameters':>10}"]
    lines += [f"{c['depth']:>5}  {c['compile_s']:>9}  {c['object_bytes']:>12}  "
              f"{c['params']:>10}" for c in compiled]
    table = "\n".join(lines)
    runs.publish(out, table, SEED)

    png = os.path.join(out, "results.png")
    depths = sorted({row[0] for row in rows})
    plots = []
    for depth in depths:
        plots.append(f'set title "depth {depth}"\n'
                     f'plot for [p in "{" ".join(POSITIONS)}"] for [w in "0 400"] '
                     f"\"< awk -F, -v p=\".p.\" -v w=\".w.\" -v d={depth} "
                     f"'$1==d && $2==p && $3==w && $4==1' "
                     f'{out}/curves.csv" using 5:6 with lines title p." warm-up ".w, '
                     f'{runs.LN64} with lines dt 2 lc rgb "gray" title "ln 64"')
    if runs.gnuplot(f"""
set terminal pngcairo size 1200,500 noenhanced
set output "{png}"
set datafile separator ","
set multiplot layout 1,{len(depths)} title "Copy task, width 32 ({mode}, seed 1)"
set xlabel "step"; set ylabel "loss"; set yrange [0:*]; set key top right
{chr(10).join(plots)}
unset multiplot
"""):
        print(f"plot: {png}")


if __name__ == "__main__":
    main()
