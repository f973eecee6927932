"""Experiment 5's report: dense FFN vs mixtures of experts at the same
active FFN weights per token, from the grid's log.csv (loss, held-out loss,
tokens/s) and expert_counts.csv (tokens per layer and expert at each logged
step). Usage: report.py OUT MODE."""

import csv
import math
import os
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import runs  # noqa: E402

SEED = """seed 002: "the FFN holds about 2/3 of a layer's parameters; that is why MoE splits this FFN
          into several experts and activates only some of them per token: with most parameters
          in the FFN, splitting it is the most efficient way to scale" """


def ffn_weights(spec):
    """(active per token, total) FFN weights of one layer: SwiGLU's three
    matrices per expert (no biases), the router's d_model x experts."""
    d, f = spec["model"]["d_model"], spec["model"]["d_ff"]
    ffn = spec.get("ffn", {})
    experts = ffn.get("experts", 0)
    one = 3 * d * f
    if experts == 0:
        return one, one
    router = d * experts
    return ffn.get("top_k", 2) * one + router, experts * one + router


def balanced_aux(spec):
    """The load-balancing losses inside a MoE model's loss when its routing
    is balanced: aux_loss x top_k per layer (docs/abi.md); 0 for dense."""
    ffn = spec.get("ffn", {})
    if not ffn.get("experts", 0):
        return 0.0
    return spec["model"]["depth"] * ffn.get("aux_loss", 0.01) * ffn.get("top_k", 2)


def balance(run):
    """{step: [max/mean tokens over the experts, per layer]} from the run's
    expert_counts.csv; {} for the dense model."""
    path = os.path.join(run.folder, "expert_counts.csv")
    if not os.path.exists(path):
        return {}
    counts = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            counts.setdefault(int(row["step"]), {}).setdefault(
                int(row["layer"]), []).append(int(row["tokens"]))
    return {step: [max(c) / (sum(c) / len(c)) for _, c in sorted(layers.items())]
            for step, layers in counts.items()}


def last_eval(run):
    return next((v for v in reversed(run.eval_loss) if not math.isnan(v)), math.nan)


def mean_tail(values, fraction=0.1):
    """The mean of the last `fraction` of a run's logged values (the train
    loss is one batch's: its tail's mean is steadier than its last)."""
    tail = values[-max(1, int(len(values) * fraction)):]
    return sum(tail) / len(tail)


def main():
    out, mode = sys.argv[1], sys.argv[2]
    by_model = {}
    for run in runs.load(out):
        by_model.setdefault(run.get("model.spec"), []).append(run)
    order = [m for m in ("dense", "moe_e4_top2", "moe_e4_top2_noaux", "moe_e8_top1")
             if m in by_model] + sorted(set(by_model) - {"dense", "moe_e4_top2",
                                                         "moe_e4_top2_noaux", "moe_e8_top1"})

    curves, balance_rows, lines = [], [], []
    steps = by_model[order[0]][0].steps[-1]
    seeds = len(by_model[order[0]])
    lines.append(f"byte-level fortunes, d_model 128, 4 layers, batch 16 x 128 bytes, "
                 f"{steps} steps, {seeds} seed{'s' if seeds > 1 else ''} ({mode}); "
                 f"mean (min-max) over seeds")
    lines.append(f"{'model':<18} {'FFN weights/layer':>19} {'train loss':>22} "
                 f"{'held-out loss':>22} {'held-out CE*':>13} {'tokens/s':>9} "
                 f"{'max/mean load':>22}")
    for model in order:
        group = by_model[model]
        with open(os.path.join(group[0].folder, "spec.toml"), "rb") as f:
            spec = tomllib.load(f)
        active, total = ffn_weights(spec)
        aux = balanced_aux(spec)
        for run in group:
            for s, l, e in zip(run.steps, run.loss, run.eval_loss):
                curves.append([model, run.get("seed"), s, l, "" if math.isnan(e) else e])
        loads = []
        for run in group:
            per_step = balance(run)
            for s in sorted(per_step):
                balance_rows.append([model, run.get("seed"), s]
                                    + [f"{v:.4f}" for v in per_step[s]]
                                    + [f"{sum(per_step[s]) / len(per_step[s]):.4f}"])
            if per_step:
                final = per_step[max(per_step)]
                loads.append(sum(final) / len(final))
        tps = [sum(r.tokens_per_s[1:]) / max(1, len(r.tokens_per_s) - 1) for r in group]
        lines.append(f"{model:<18} {active:>8,} / {total:<9,} "
                     f"{runs.spread([mean_tail(r.loss) for r in group]):>22} "
                     f"{runs.spread([last_eval(r) for r in group]):>22} "
                     f"{sum(last_eval(r) for r in group) / len(group) - aux:>13.4f} "
                     f"{sum(tps) / len(tps):>9.0f} "
                     f"{runs.spread(loads) if loads else '-':>22}")
    lines.append("")
    lines.append("FFN weights/layer: active per token / total (the router's counted in both). "
                 "Train loss: the mean of the")
    lines.append("last 10% of the logged steps. A model with aux_loss > 0 has its load-"
                 "balancing losses in both losses;")
    lines.append("CE* subtracts their balanced value, aux_loss x top_k per layer (0.08 for "
                 "top 2, 0.04 for top 1 here): an")
    lines.append("estimate of the held-out cross-entropy (exact for dense and "
                 "moe_e4_top2_noaux).")
    lines.append("max/mean load: the most-loaded expert's tokens over the mean, at the last "
                 "step, averaged over the layers (1 = balanced).")
    runs.publish(out, "\n".join(lines), SEED)

    runs.write_csv(os.path.join(out, "curves.csv"),
                   ["model", "seed", "step", "loss", "eval_loss"], curves)
    width = max((len(r) for r in balance_rows), default=4) - 4
    runs.write_csv(os.path.join(out, "balance.csv"),
                   ["model", "seed", "step"] + [f"layer{l}" for l in range(width)] + ["mean"],
                   balance_rows)
    plot(out, mode, order, by_model)


def plot(out, mode, order, by_model):
    """results.png: every model's train loss (seed 1, the mean of 5 logged
    steps around each) and held-out loss; the MoE runs' max/mean load over
    training."""
    png = os.path.join(out, "results.png")
    data = {}
    for model in order:
        run = by_model[model][0]
        path = os.path.join(out, f"curve_{model}.dat")
        with open(path, "w") as f:
            for i, (s, e) in enumerate(zip(run.steps, run.eval_loss)):
                window = run.loss[max(0, i - 2):i + 3]
                f.write(f"{s} {sum(window) / len(window)} {'nan' if math.isnan(e) else e}\n")
        per_step = balance(run)
        bal = os.path.join(out, f"balance_{model}.dat")
        with open(bal, "w") as f:
            for s in sorted(per_step):
                f.write(f"{s} {sum(per_step[s]) / len(per_step[s])}\n")
        data[model] = (path, bal if per_step else None)
    loss_plots = ", ".join(
        f'"{p}" using 1:2 with lines lw 2 lc {i + 1} title "{m} (train)", '
        f'"{p}" using 1:3 with linespoints pt 7 lc {i + 1} title "{m} (held-out)"'
        for i, (m, (p, _)) in enumerate(data.items()))
    balance_plots = ", ".join(f'"{b}" using 1:2 with lines lw 2 lc {i + 1} title "{m}"'
                              for i, (m, (_, b)) in enumerate(data.items()) if b)
    if runs.gnuplot(f"""
set terminal pngcairo size 1300,500 noenhanced
set output "{png}"
set multiplot layout 1,2 title "MoE vs dense at the same active FFN weights, byte-level fortunes ({mode}, seed 1)"
set title "loss"
set xlabel "step"; set ylabel "loss (nats/byte)"; set key top right; set yrange [*:4]
plot {loss_plots}
set title "load balance: max/mean tokens per expert (mean over layers)"
set ylabel "max / mean"; set yrange [1:*]; set key top right
plot {balance_plots}
unset multiplot
"""):
        print(f"plot: {png}")


if __name__ == "__main__":
    main()
