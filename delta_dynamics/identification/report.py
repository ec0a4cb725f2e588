"""PNG plots and a markdown summary of an identification run (``delta-identify --report``).

Files written into the report directory:

* ``torque_fit.png``: measured and predicted torque per joint on the fitting data
  (Kim et al. Fig. 6);
* ``torque_validation.png``: the same on the validation data, every method overlaid
  (Kim et al. Fig. 10);
* ``residuals.png``: the torque error over time and its histogram per joint;
* ``parameters.png``: each estimate relative to the robot file's value with its 95 %
  confidence interval (+-1.96 sigma);
* ``pso_convergence.png``: the best objective (eq. 33) per iteration, when PSO ran;
* ``summary.md``: data and preprocessing, the fitness table (Kim et al. Table 2 layout),
  the parameter table, the base parameters, and the images.

Matplotlib is used without pyplot (its Agg canvas), so no display or global state is touched.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from delta_core.atomic_file import atomic_write_text

_MAX_POINTS = 4000
_COLORS = ("C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8")
#: Joint units of a rotary Delta; pass ``units=delta_dynamics.kinds.joint_units(model)`` for a
#: linear one (forces f_i in N).
ROTARY_UNITS = {"effort": "N m", "effort_column": "tau"}


def _figure(rows, cols, size):
    # matplotlib is optional and heavy: only what draws loads it
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _thin(n):
    step = max(1, int(math.ceil(n / _MAX_POINTS)))
    return slice(None, None, step)


def plot_torques(path, problem, predictions: dict, title: str, units=None):
    """Measured vs predicted torque (force) per joint; ``predictions``: {label: (N, 3) array}."""
    u = units or ROTARY_UNITS
    fig, ax = _figure(3, 1, (10, 7.5))
    s = _thin(len(problem.t))
    t = problem.t[s]
    joint = u.get("joint", "joint")
    what = u.get("effort_name", "torque" if u["effort"] == "N m" else "force")
    for j in range(3):
        a = ax[j, 0]
        a.plot(t, problem.tau[s, j], color="0.2", lw=1.2, label="measured")
        for c, (label, pred) in zip(_COLORS, predictions.items()):
            a.plot(t, pred[s, j], color=c, lw=0.9, ls="--", label=f"{label} (model)")
        a.set_ylabel(f"{u['effort_column']}_{j + 1} [{u['effort']}]")
        a.set_title(f"{joint} {j + 1}: {what} {u['effort_column']}_{j + 1} [{u['effort']}], measured and "
                    "predicted", fontsize=9)
        a.grid(alpha=0.3)
    ax[0, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0.0)
    fig.suptitle(title)
    ax[2, 0].set_xlabel("t [s]")
    fig.savefig(path, dpi=110)


def plot_residuals(path, problem, prediction, title: str, units=None):
    """Write the torque residuals per joint over time and their histograms to ``path`` (PNG)."""
    u = units or ROTARY_UNITS
    fig, ax = _figure(3, 2, (11, 7.5))
    r = problem.tau - prediction
    s = _thin(len(problem.t))
    joint = u.get("joint", "joint")
    for j in range(3):
        name = f"{u['effort_column']}_{j + 1}"
        ax[j, 0].plot(problem.t[s], r[s, j], color="C0", lw=0.7)
        ax[j, 0].set_ylabel(f"error {j + 1} [{u['effort']}]")
        ax[j, 0].set_title(f"{joint} {j + 1}: measured - predicted {name} [{u['effort']}]", fontsize=9)
        ax[j, 0].grid(alpha=0.3)
        ax[j, 1].hist(r[:, j], bins=60, color="C0", alpha=0.8)
        ax[j, 1].set_title(f"{joint} {j + 1}: histogram of the {name} error", fontsize=9)
        ax[j, 1].set_ylabel("samples")
        ax[j, 1].set_xlabel(f"{name} error [{u['effort']}] "
                            f"(RMS {np.sqrt(np.mean(r[:, j] ** 2)):.3g})")
    ax[2, 0].set_xlabel("t [s]")
    fig.suptitle(title)
    fig.savefig(path, dpi=110)


def plot_parameters(path, result):
    """Write the estimates relative to the robot file's values, with 95 % intervals, to ``path`` (PNG)."""
    names, v, nom, sd = result.names, result.values, result.nominal, result.estimate.std
    ref = np.where(np.abs(nom) > 1e-12, np.abs(nom), np.maximum(np.abs(v), 1e-12))
    ratio = v / ref
    ci = 1.96 * np.nan_to_num(sd) / ref
    fig, ax = _figure(1, 1, (9, 0.35 * len(names) + 1.5))
    a = ax[0, 0]
    y = np.arange(len(names))[::-1]
    held = set(result.held)
    colors = ["0.6" if n in held else "C0" for n in names]
    a.barh(y, ratio, xerr=ci, color=colors, alpha=0.85, ecolor="k", capsize=3)
    a.axvline(1.0, color="k", lw=0.8, ls=":")
    a.set_yticks(y, names)
    a.set_xlabel("estimate / robot file value  (95 % confidence interval; grey: held fixed)")
    a.set_title(f"{result.method}: identified parameters")
    a.grid(axis="x", alpha=0.3)
    fig.savefig(path, dpi=110)


def plot_pso(path, history, units=None):
    """Write the PSO's best cost per iteration to ``path`` (PNG)."""
    u = units or ROTARY_UNITS
    fig, ax = _figure(1, 1, (7, 4))
    a = ax[0, 0]
    a.semilogy(np.arange(1, len(history) + 1), history, color="C0")
    a.set_xlabel("iteration")
    a.set_ylabel(f"best F (eq. 33) [{u['effort']}]")
    a.set_title("PSO convergence")
    a.grid(alpha=0.3, which="both")
    fig.savefig(path, dpi=110)


def _fmt(v, digits=4):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}g}"


def fitness_table(results, which: str = "validation", units=None) -> str:
    """Markdown table: methods in columns, joints in rows (Kim et al. Table 2), plus time."""
    u = units or ROTARY_UNITS
    rows = ["| | " + " | ".join(r.method for r in results) + " |",
            "|---|" + "---|" * len(results)]
    for j in range(3):
        cells = []
        for r in results:
            m = r.validation if (which == "validation" and r.validation) else r.fit
            cells.append(f"{m['fitness'][j]:.4f}")
        rows.append(f"| Model fitness for {u['effort_column']}_{j + 1} | " + " | ".join(cells) + " |")
    rows.append(f"| RMS error (mean over joints) [{u['effort']}] | " + " | ".join(
        f"{np.mean((r.validation if which == 'validation' and r.validation else r.fit)['rms_error']):.4g}"
        for r in results) + " |")
    rows.append("| time [s] | " + " | ".join(f"{r.seconds:.3f}" for r in results) + " |")
    return "\n".join(rows)


def parameter_table(result) -> str:
    """The estimates as a Markdown table: unit, robot-file value, estimate, std, rel. std, 95 % interval."""
    rows = ["| parameter | unit | robot file | estimate | std | rel. std | 95 % interval |",
            "|---|---|---|---|---|---|---|"]
    sd = result.estimate.std
    held = set(result.held)
    for n, u, nom, v, s in zip(result.names, result.pset.units, result.nominal, result.values, sd):
        if n in held:
            rows.append(f"| {n} | {u} | {_fmt(nom)} | {_fmt(v)} (held) | - | - | - |")
            continue
        rel = s / abs(v) if (math.isfinite(s) and v != 0) else float("nan")
        iv = f"[{_fmt(v - 1.96 * s)}, {_fmt(v + 1.96 * s)}]" if math.isfinite(s) else "-"
        rows.append(f"| {n} | {u} | {_fmt(nom)} | {_fmt(v)} | {_fmt(s, 3)} | "
                    f"{_fmt(100 * rel, 3)} % | {iv} |")
    return "\n".join(rows)


def write_report(outdir, results, problem, validation=None, chosen=None, robot_name: str = "",
                 data_source: str = "", validation_source: str | None = None, out_file: str | None = None,
                 extra_notes=(), units=None) -> list:
    """Write the plots and ``summary.md`` into ``outdir``; returns the paths written. ``units``:
    :func:`delta_dynamics.kinds.joint_units` of the model (default: a rotary Delta's)."""
    u = units or ROTARY_UNITS
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    chosen = chosen or results[0]
    written = []
    fit_pred = {r.method: problem.predict(r.values) for r in results}
    plot_torques(out / "torque_fit.png", problem, fit_pred, f"{robot_name}: fitting data ({data_source})", u)
    written.append(out / "torque_fit.png")
    if validation is not None:
        vpred = {r.method: validation.predict(r.values) for r in results}
        plot_torques(out / "torque_validation.png", validation, vpred,
                     f"{robot_name}: validation data ({validation_source})", u)
        written.append(out / "torque_validation.png")
        res_prob = validation
    else:
        res_prob = problem
    plot_residuals(out / "residuals.png", res_prob, res_prob.predict(chosen.values),
                   f"{chosen.method}: {'torque' if u['effort'] == 'N m' else 'force'} error on the "
                   f"{'validation' if validation is not None else 'fitting'} data", u)
    written.append(out / "residuals.png")
    plot_parameters(out / "parameters.png", chosen)
    written.append(out / "parameters.png")
    pso = next((r for r in results if r.method == "pso"), None)
    if pso is not None and "history" in pso.estimate.info:
        plot_pso(out / "pso_convergence.png", pso.estimate.info["history"], u)
        written.append(out / "pso_convergence.png")

    md = [f"# Identification of {robot_name}", ""]
    md += [f"- data: `{data_source}` ({len(problem)} samples used)"]
    if validation is not None:
        md += [f"- validation: `{validation_source}` ({len(validation)} samples)"]
    md += [f"- parameter set: {chosen.pset.key}{' + Stribeck' if chosen.pset.stribeck else ''} "
           f"({len(chosen.names)} parameters)",
           f"- condition number of the column-normalised regressor: {chosen.condition:.4g}"]
    if out_file:
        md += [f"- robot file written: `{out_file}` (method {chosen.method})"]
    md += ["", "## Preprocessing", ""] + [f"- {n}" for n in (*problem.notes, *extra_notes)]
    which = "validation" if validation is not None else "fit"
    md += ["", f"## Model fitness (Kim et al. eq. 41) on the {'validation' if which == 'validation' else 'fitting'} data", "",
           fitness_table(results, which, u), ""]
    if validation is not None:
        md += ["On the fitting data:", "", fitness_table(results, "fit", u), ""]
    md += [f"## Parameters ({chosen.method})", "", parameter_table(chosen), ""]
    if chosen.estimate.info.get("autocorrelation_factor"):
        md += [f"Standard deviations include a factor {chosen.estimate.info['autocorrelation_factor']:.3g} "
               "on the variance for the residuals' correlation in time.", ""]
    md += ["## Base parameters", ""]
    base = chosen.base
    md += [f"Regressor rank {base.rank} of {len(base.names)} (QR with column pivoting, tolerance {base.tol:g}).", ""]
    md += [f"- `{c}`" for c in base.combinations()]
    if base.dependent:
        md += ["", "Not identifiable from these data (held at the robot file's values):", ""]
        md += [f"- {x}" for x in base.explain_dependent()]
    md += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in written]
    atomic_write_text(out / "summary.md", "\n".join(md) + "\n")
    written.append(out / "summary.md")
    return written
