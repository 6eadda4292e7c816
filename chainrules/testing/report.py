"""What the checkers report: ``CheckFailure`` (with the op, the argument
shapes and dtypes, the direction, both numbers and the relative error),
``CheckReport`` (the tally of a passing check) and ``Context``, which runs
one comparison against its tolerance and records it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from chainrules.registry import op_name
from chainrules.tracing import untraced

from .numerics import adjoint_rtol, as64, default_rtol, diff_norm, eps, inexact, norm, usable


class CheckFailure(AssertionError):
    """A rule failed a property check."""


class FiniteDifferenceUnreliable(CheckFailure):
    """Finite differences cannot resolve the derivative at this point (a kink,
    a jump or a singularity nearby), so the rule cannot be judged there."""


def _fmt_value(a):
    if isinstance(a, (float, np.floating)):
        return f"{float(a):.17g}"
    return repr(a)


def summary(leaves):
    parts = []
    for leaf in leaves:
        if not usable(leaf):
            continue
        a = np.asarray(leaf)
        if a.size <= 6:
            parts.append(np.array2string(a, precision=4, separator=", "))
        else:
            parts.append(f"<{a.dtype} array {a.shape}, norm {np.linalg.norm(a):.4g}>")
    return "; ".join(parts) or "-"


def _describe_value(a, depth=0):
    if isinstance(a, np.ndarray):
        return f"{a.dtype}{list(a.shape)}"
    if isinstance(a, np.generic):
        return f"{a.dtype}({a!r})"
    if isinstance(a, (list, tuple)) and depth < 2:
        inner = ", ".join(_describe_value(b, depth + 1) for b in a[:6])
        more = ", ..." if len(a) > 6 else ""
        return f"[{inner}{more}]" if isinstance(a, list) else f"({inner}{more})"
    if isinstance(a, dict) and depth < 2:
        return "{" + ", ".join(f"{k!r}: {_describe_value(v, depth + 1)}"
                               for k, v in list(a.items())[:6]) + "}"
    r = repr(a)
    return r if len(r) <= 40 else r[:37] + "..."


def op_label(op):
    if op is None:
        return "f"
    name = getattr(op, "__name__", "")
    if name == "<lambda>":
        return "lambda"
    return op_name(op).replace("numpy.", "np.")


def describe(op, args, kwargs):
    """``np.sin(float64[2, 3], axis=0)``: the op and its arguments' kinds."""
    parts = [_describe_value(a) for a in args]
    parts += [f"{k}={_describe_value(v)}" for k, v in kwargs.items()]
    return f"{op_label(op)}({', '.join(parts)})"


def lowest_precision(leaves):
    best = None
    for leaf in leaves:
        if inexact(leaf):
            dt = np.asarray(untraced(leaf)).dtype
            if best is None or eps(dt) > eps(best):
                best = dt
    return best if best is not None else np.dtype(np.float64)


# -- the report ---------------------------------------------------------------------
@dataclasses.dataclass
class CheckReport:
    """What a checker verified. Truthy, so ``assert check_rrule(...)`` works.

    name:     the op (or function) checked
    modes:    the modes checked, e.g. ["rrule", "frule", "hvp"]
    checks:   number of numerical comparisons made
    worst:    worst relative error seen (error / size of the compared values)
    worst_at: which comparison gave it
    """

    name: str
    modes: list[str] = dataclasses.field(default_factory=list)
    checks: int = 0
    worst: float = 0.0
    worst_at: str = ""

    def __bool__(self) -> bool:
        return True

    def record(self, what: str, rel: float) -> None:
        self.checks += 1
        if rel > self.worst or not self.worst_at:
            self.worst = max(rel, self.worst)
            self.worst_at = what

    def add_mode(self, mode: str) -> None:
        if mode not in self.modes:
            self.modes.append(mode)

    def merge(self, other: CheckReport) -> CheckReport:
        for m in other.modes:
            self.add_mode(m)
        self.checks += other.checks
        if other.worst > self.worst:
            self.worst, self.worst_at = other.worst, other.worst_at
        return self

    def __repr__(self) -> str:
        return (f"CheckReport({self.name}: {'+'.join(self.modes)}, {self.checks} checks, "
                f"worst relative error {self.worst:.2g})")


class Context:
    """Tolerances and reporting shared by the comparisons of one check."""

    def __init__(self, desc, dtype, rtol, atol, report):
        self.desc = desc
        self.dtype = np.dtype(dtype)
        base = default_rtol(self.dtype)
        self.rtol = base if rtol is None else float(rtol)
        self.adj = adjoint_rtol(self.dtype) * max(1.0, self.rtol / base)
        self.atol = 0.0 if atol is None else float(atol)
        self.report = report

    def fail(self, msg):
        raise CheckFailure(f"{msg}\n  in {self.desc}")

    def scalar(self, what, a, b, scale, tol, where, labels=("rule", "finite differences"),
               slack=None):
        """``slack``: a callable giving extra tolerance, computed only where
        the comparison fails without it (a costly or rarely needed bound)."""
        err = abs(a - b)
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        self.report.record(what, rel)
        if not err <= tol and slack is not None:
            tol += slack()
        if not err <= tol:
            where = where() if callable(where) else where
            self.fail(
                f"{what} failed\n  {where}\n"
                f"  {labels[0]}: {_fmt_value(a)}\n  {labels[1]}: {_fmt_value(b)}\n"
                f"  abs err {err:.3g}, relative error {rel:.3g} (of scale {scale:.3g}), "
                f"tolerance {tol:.3g} (rtol {self.rtol:.2g}, dtype {self.dtype})")

    def vector(self, what, a_leaves, b_leaves, tol_extra, where,
               labels=("rule", "finite differences"), rtol=None, slack=None):
        """``slack`` as for ``scalar``."""
        rtol = self.rtol if rtol is None else rtol
        na, nb = norm(a_leaves), norm(b_leaves)
        err = diff_norm(a_leaves, b_leaves)
        scale = max(na, nb)
        tol = rtol * scale + tol_extra
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        self.report.record(what, rel)
        if not err <= tol and slack is not None:
            tol += slack()
        if not err <= tol:
            where = where() if callable(where) else where
            worst = ""
            for a, b in zip(a_leaves, b_leaves):
                if usable(a) and usable(b):
                    d = np.abs(as64(a) - as64(b))
                    if d.size:
                        i = np.unravel_index(int(np.argmax(d)), d.shape)
                        worst = (f"\n  worst entry {tuple(int(j) for j in i)}: "
                                 f"{labels[0]} {_fmt_value(np.asarray(a)[i])}, "
                                 f"{labels[1]} {_fmt_value(np.asarray(b)[i])}")
                        break
            self.fail(
                f"{what} failed\n  {where}\n"
                f"  {labels[0]}: {summary(a_leaves)}\n  {labels[1]}: {summary(b_leaves)}"
                f"{worst}\n  |difference| {err:.3g}, relative error {rel:.3g} "
                f"(norms {na:.3g} vs {nb:.3g}), tolerance {tol:.3g} "
                f"(rtol {rtol:.2g}, dtype {self.dtype})")

    def fd_reliable(self, fd, fd_leaves, where):
        size = norm(fd_leaves)
        if not math.isfinite(size + fd.truncation):
            where = where() if callable(where) else where
            raise FiniteDifferenceUnreliable(
                f"finite differences are not finite {where}, at every step tried: "
                "the stencil reached points outside the function's "
                "domain (past the support of a density, across a pole). Sample inputs "
                "further inside the domain (see the domains of "
                f"chainrules.testing.strategies).\n  in {self.desc}")
        if fd.truncation > 1e-6 * size + 100.0 * fd.roundoff:
            where = where() if callable(where) else where
            raise FiniteDifferenceUnreliable(
                f"finite differences cannot resolve the derivative {where}: the "
                f"estimated truncation error {fd.truncation:.3g} is large against a "
                f"derivative of norm {size:.3g} (step {fd.step:.3g}); the input is "
                "probably at or near a kink, jump or singularity. Sample inputs away "
                "from non-differentiable points (see the domains of "
                f"chainrules.testing.strategies).\n  in {self.desc}")


# -- recording a function on a private tape, with raw sweeps --------------------------
