"""Run the benchmark workloads (benchmarks/README.md) side by side: chainrules, HIPS autograd,
PyTorch eager, JAX eager, jax.jit, and the plain NumPy forward as the floor.

    python benchmarks/run.py [--quick] [--out DIR]

Every (framework, workload) pair runs in a fresh process with the same
thread count and the same glibc allocator settings; times are medians of
several repeats after a warm-up; ratios are to the NumPy forward measured in
the same run. Every framework's value/gradient/HVP is compared with
chainrules' on the same seeded inputs and mismatches are reported. Output:
``DIR/results.json``, ``DIR/results.md``, ``DIR/ratios.png``, and (on a full
run) the table in ``benchmarks/README.md``.
"""

import argparse
import datetime
import json
import os
import select
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402
from common import CHAIN_OPS, FRAMEWORKS, MALLOC_ENV, WORKLOADS  # noqa: E402

README = os.path.join(HERE, "README.md")
#: the plot of a full run, kept in the repository (the manual shows it too)
PLOT = "docs/img/benchmark-ratios.png"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
RTOL = 1e-8  # relative (max-norm) agreement required with chainrules, float64
#: frameworks that compile on their first call: compile time gets its own table
COMPILED = ("jax.jit", "torch.compile")
#: a compiled form and the eager form of the same framework, compared output by output
EAGER_TWIN = {"chainrules.jit": "chainrules", "jax.jit": "jax", "torch.compile": "torch"}

PROBE_MAX = """
import numpy as np, chainrules as cr
z = np.array([[0.3, 2.0, -1.0], [1.5, 0.2, 0.1]])
g = cr.grad(lambda z: np.sum(np.max(z, axis=1, keepdims=True) * np.array([[2.0], [3.0]])))(z)
assert np.allclose(g, [[0, 2, 0], [3, 0, 0]]), g
"""


def _readline(p, timeout):
    r, _, _ = select.select([p.stdout], [], [], timeout)
    if not r:
        raise TimeoutError(f"no answer within {timeout} s")
    line = p.stdout.readline()
    if not line:
        raise EOFError("worker exited")
    return json.loads(line)


def run_workload(py, env, frameworks, workload, data, outdir, timing, shift, timeout,
                 log):
    """Benchmark ``workload`` for every framework, each in its own fresh
    process; the timed repeats are interleaved round-robin (in a rotating
    order) so that a change in machine load affects every framework alike.
    Only one worker computes at any time; the others wait on their stdin."""
    procs, results, started = {}, {}, {}
    for fw in frameworks:
        prefix = os.path.join(outdir, f"{fw}_{workload}")
        for ext in (".json", ".npz"):
            if os.path.exists(prefix + ext):
                os.remove(prefix + ext)
        cmd = [py, os.path.join(HERE, "common.py"), "--worker", "--serve",
               "--framework", fw, "--workload", workload, "--data", data,
               "--out", prefix, "--threads", str(timing["threads"]),
               "--min-time", str(timing["min_time"]), "--warmup", str(timing["warmup"])]
        if not shift:
            cmd.append("--no-shift")
        started[fw] = time.perf_counter()
        errf = open(prefix + ".stderr", "w+")
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=errf, text=True, bufsize=1)
        p.errf = errf
        try:
            msg = _readline(p, timeout)
        except (TimeoutError, EOFError, ValueError) as e:
            msg = {"failed": str(e)}
        if "ready" in msg:
            procs[fw] = p
        else:
            results[fw] = _finish(p, fw, workload, prefix, msg.get("failed"))
    for r in range(timing["repeats"]):
        order = list(procs)
        k = r % max(len(order), 1)
        for fw in order[k:] + order[:k]:
            p = procs[fw]
            if p is None:
                continue
            try:
                p.stdin.write("run\n")
                p.stdin.flush()
                _readline(p, timeout)
            except (TimeoutError, EOFError, ValueError, BrokenPipeError) as e:
                prefix = os.path.join(outdir, f"{fw}_{workload}")
                p.kill()
                results[fw] = _finish(p, fw, workload, prefix, f"{type(e).__name__}: {e}")
                procs[fw] = None
    for fw, p in procs.items():
        if p is None:
            continue
        prefix = os.path.join(outdir, f"{fw}_{workload}")
        try:
            p.stdin.write("quit\n")
            p.stdin.flush()
            _readline(p, timeout)
            results[fw] = _finish(p, fw, workload, prefix, None)
        except (TimeoutError, EOFError, ValueError, BrokenPipeError) as e:
            p.kill()
            results[fw] = _finish(p, fw, workload, prefix, f"{type(e).__name__}: {e}")
    out = {}
    for fw in frameworks:
        r = results[fw]
        out[fw] = r
        if r["status"] == "ok":
            msg = f"median {_fmt_time(r['time']['median'])}"
        else:
            msg = r["status"] + ": " + (r.get("error", "").splitlines() or [""])[0][:120]
        log(f"  {workload:10s} {fw:13s} {msg}")
    return out


def _finish(p, fw, workload, prefix, failure):
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    p.errf.seek(0)
    stderr = p.errf.read().strip()
    p.errf.close()
    os.remove(p.errf.name)
    try:
        with open(prefix + ".json") as f:
            res = json.load(f)
    except (OSError, ValueError):
        res = {"framework": fw, "workload": workload, "status": "error",
               "error": f"worker failed ({failure or 'exit ' + str(p.returncode)}): "
                        f"{stderr[-500:]}"}
    else:
        if failure and res.get("status") == "ok":
            res.update(status="error", error=failure)
    if stderr:
        res["stderr"] = stderr[-2000:]
    return res


def load_outputs(prefix):
    try:
        with np.load(prefix + ".npz") as z:
            return {k: z[k] for k in z.files}
    except OSError:
        return None


def compare(outs, ref):
    """Largest relative (max-norm) difference over the keys both have."""
    worst, keys = 0.0, []
    for k, r in ref.items():
        if k not in outs:
            continue
        a = outs[k]
        if a.shape != r.shape:
            return float("inf"), [k]
        scale = max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-300)
        err = float(np.max(np.abs(a - r))) / scale if r.size else 0.0
        if not np.isfinite(err):
            err = float("inf")
        if err > worst:
            worst = err
        keys.append(k)
    return worst, keys


def derive(results):
    """Add ratios, per-op overheads and correctness to the raw results."""
    for wl, per_fw in results["workloads"].items():
        base = per_fw.get("numpy", {})
        t_np = base.get("time", {}).get("median") if base.get("status") == "ok" else None
        for fw, r in per_fw.items():
            if r.get("status") != "ok":
                continue
            t = r["time"]["median"]
            if t_np:
                r["ratio"] = t / t_np
                if wl == "chain":
                    r["us_per_op"] = (t - t_np) / CHAIN_OPS * 1e6
                    r["us_per_op_total"] = t / CHAIN_OPS * 1e6
                    c, c_np = r["time"].get("cpu_median"), base["time"].get("cpu_median")
                    if c is not None and c_np is not None:
                        r["us_per_op_cpu"] = (c - c_np) / CHAIN_OPS * 1e6


def correctness(results, outdir):
    for wl, per_fw in results["workloads"].items():
        for c, e in EAGER_TWIN.items():
            if (per_fw.get(c, {}).get("status") == "ok"
                    and per_fw.get(e, {}).get("status") == "ok"):
                per_fw[c]["check_eager"] = _check_pair(outdir, wl, c, e)
        ref_fw = None
        # the AD frameworks first; the hand-written derivatives only as a last resort
        for cand in ("chainrules", "autograd", "torch", "jax", "jax.jit", "numpy.hand"):
            if per_fw.get(cand, {}).get("status") == "ok":
                ref_fw = cand
                break
        results["reference"][wl] = ref_fw
        if ref_fw is None:
            continue
        ref = load_outputs(os.path.join(outdir, f"{ref_fw}_{wl}"))
        for fw, r in per_fw.items():
            if r.get("status") != "ok" or fw == ref_fw:
                continue
            outs = load_outputs(os.path.join(outdir, f"{fw}_{wl}"))
            if outs is None:
                r["check"] = {"error": "no outputs"}
                continue
            err, keys = compare(outs, ref)
            if not keys:
                r["check"] = {"against": ref_fw, "keys": [], "ok": True,
                              "note": "nothing comparable (forward value only)"}
                continue
            r["check"] = {"against": ref_fw, "max_rel_err": err, "keys": keys,
                          "ok": bool(err <= RTOL)}


def _check_pair(outdir, wl, fw, other):
    """``fw``'s outputs against ``other``'s: every key, not only the reference's."""
    outs = load_outputs(os.path.join(outdir, f"{fw}_{wl}"))
    ref = load_outputs(os.path.join(outdir, f"{other}_{wl}"))
    if outs is None or ref is None:
        return {"against": other, "error": "no outputs"}
    err, keys = compare(outs, ref)
    return {"against": other, "max_rel_err": err, "keys": keys,
            "ok": bool(keys) and bool(err <= RTOL)}


def run_memory(py, env, outdir, quick, timeout):
    script = os.path.join(HERE, "memory_chain.py")
    if not os.path.exists(script):
        return {"status": "skipped", "error": "benchmarks/memory_chain.py not present"}
    try:
        helptext = subprocess.run([py, script, "--help"], env=env, capture_output=True,
                                  text=True, timeout=120).stdout
    except subprocess.TimeoutExpired:
        helptext = ""
    cmd = [py, script]
    jpath = os.path.join(outdir, "memory.json")
    if quick and "--quick" in helptext:
        cmd.append("--quick")
    elif quick and "--n" in helptext:
        cmd += ["--n", "100000"]
    if "--json" in helptext:
        cmd += ["--json", jpath]
    elif "--out" in helptext:
        cmd += ["--out", outdir]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"timed out after {timeout} s"}
    res = {"status": "ok" if p.returncode == 0 else "error", "command": " ".join(
        os.path.relpath(c, os.getcwd()) if os.path.isabs(c) and c != py else c
        for c in cmd[1:]), "stdout": p.stdout.strip()}
    if p.returncode != 0:
        res["error"] = p.stderr.strip()[-1500:]
    if os.path.exists(jpath):
        try:
            with open(jpath) as f:
                res["json"] = json.load(f)
        except ValueError:
            pass
    return res


# ------------------------------------------------------------------ markdown
def _fmt_time(t):
    if t < 1e-3:
        return f"{t * 1e6:.0f} µs"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def _cell(wl, r):
    st = r.get("status")
    if st == "skipped":
        return "skipped"
    if st != "ok":
        return "error"
    t = r["time"]["median"]
    if r["framework"] == "numpy":
        return f"{_fmt_time(t)} (floor)"
    if wl == "chain" and "us_per_op" in r:
        s = f"**{r['us_per_op']:.1f} µs/op** ({_fmt_time(t)}"
        if "us_per_op_cpu" in r:
            s += f"; CPU time: {r['us_per_op_cpu']:.1f} µs/op"
        s += ")"
    elif "ratio" in r:
        s = f"**{r['ratio']:.1f}×** ({_fmt_time(t)})"
    else:
        s = _fmt_time(t)
    chk = r.get("check")
    if chk and not chk.get("ok", True):
        s += f" ⚠ MISMATCH {chk.get('max_rel_err', float('nan')):.1e}"
    twin = r.get("check_eager")
    if twin and not twin.get("ok", True):
        s += f" ⚠ MISMATCH with {twin['against']} {twin.get('max_rel_err', float('nan')):.1e}"
    return s


def _figure(results, w, fw):
    r = results["workloads"][w].get(fw, {})
    key = WORKLOADS[w]["metric"]
    if r.get("status") != "ok" or key not in r:
        return None
    if key == "us_per_op" and "us_per_op_cpu" in r and results["meta"]["loadavg_before"][0] > 1.0:
        return r["us_per_op_cpu"]      # a busy machine: CPU time is the steadier figure
    return r[key]


def goal_rows(results, wls):
    """(workload, reference, chainrules ÷ reference, goal) for every goal:
    the workload's own and being ahead of each of GOAL_PEERS."""
    rows = []
    for w in wls:
        goals = list(WORKLOADS[w]["goals"])
        goals += [(p, 1.0) for p in common.GOAL_PEERS if all(g[0] != p for g in goals)]
        mine = _figure(results, w, "chainrules")
        for ref, goal in goals:
            if ref == "numpy":
                v = mine
            else:
                other = _figure(results, w, ref)
                v = mine / other if mine is not None and other else None
            rows.append((w, ref, v, goal))
    return rows


def markdown(results):
    L = []
    m = results["meta"]
    wls = [w for w in WORKLOADS if w in results["workloads"]]
    fws = [f for f in FRAMEWORKS if any(f in results["workloads"][w] for w in wls)]
    cmd = "python benchmarks/run.py" + (" --quick" if m["quick"] else "") + (
        "" if m.get("malloc", MALLOC_ENV) else " --allocator default")
    L.append(f"Run of {m['date']} ({'quick' if m['quick'] else 'full'}), "
             f"`{cmd}`; "
             f"{m['machine'].get('cpu', '?')}, {m['machine']['cpus']} CPUs, "
             f"load average before the run {', '.join(f'{x:.1f}' for x in m['loadavg_before'])} (after: {', '.join(f'{x:.1f}' for x in m.get('loadavg_after', []))}).")
    L.append("")
    L.append(f"BLAS threads: {m['threads']} for every framework (OMP/OpenBLAS/MKL variables, "
             "`torch.set_num_threads`). " + (
                 "glibc allocator fixed identically in every process: " +
                 ", ".join(f"`{k}={v}`" for k, v in m["malloc"].items())
                 if m.get("malloc", MALLOC_ENV) else
                 "glibc's default allocator settings (`--allocator default`: a user's "
                 "process; freed memory goes back to the system)") +
             ". Every (framework, workload) pair in its own fresh process; median of "
             f"{m['repeats']} repeats (each ≥ {m['min_time']} s), interleaved "
             "round-robin across the frameworks of a workload, after "
             f"{m['warmup']} s of warm-up; float64 everywhere (JAX x64).")
    L.append("")
    L.append("Cells: per-op overhead = (time − NumPy forward) / "
             f"{CHAIN_OPS} ops (also from the process CPU time, which a busy machine "
             "disturbs less); otherwise time ÷ NumPy forward of the same function, "
             "with the median wall-clock time in parentheses. Lower is better.")
    L.append("")
    head = ["framework"] + [WORKLOADS[w]["short"] for w in wls]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for fw in fws:
        row = [fw + (f" {results['versions'].get(fw)}" if results["versions"].get(fw) else "")]
        for w in wls:
            r = results["workloads"][w].get(fw)
            row.append(_cell(w, r) if r else "–")
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append("chainrules against the goals (chainrules' figure ÷ the other's, "
             "same run; ≤ the goal is met):")
    L.append("")
    L.append("| workload | against | chainrules ÷ it | goal | status |")
    L.append("|---|---|---|---|---|")
    for w, ref, v, goal in goal_rows(results, wls):
        short = WORKLOADS[w]["short"]
        name = "NumPy forward" if ref == "numpy" else ref
        if v is None:
            L.append(f"| {short} | {name} | not measured | ≤ {goal:g} | – |")
            continue
        status = "met" if v <= goal else f"missed ({v / goal:.2f}× the goal)"
        L.append(f"| {short} | {name} | {v:.2f} | ≤ {goal:g} | {status} |")
    L.append("")
    # correctness
    L.append(f"Correctness: largest relative difference (max-norm) from the reference "
             f"(chainrules where it ran) on the same inputs; tolerance {RTOL:g}.")
    L.append("")
    L.append("| framework | " + " | ".join(WORKLOADS[w]["short"] for w in wls) + " |")
    L.append("|" + "---|" * (len(wls) + 1))
    for fw in fws:
        row = [fw]
        for w in wls:
            r = results["workloads"][w].get(fw, {})
            chk = r.get("check")
            if r.get("status") != "ok":
                row.append(r.get("status", "–"))
            elif fw == results["reference"].get(w):
                row.append("reference")
            elif not chk:
                row.append("–")
            elif "error" in chk:
                row.append(chk["error"])
            elif not chk.get("keys"):
                row.append("n/a")
            else:
                row.append(("ok " if chk["ok"] else "**MISMATCH** ") +
                           f"{chk['max_rel_err']:.1e} ({', '.join(chk['keys'])})")
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    # compile times
    for cfw in COMPILED:
        if cfw not in fws:
            continue
        L.append(f"{cfw} compile time (first call minus a steady-state call), reported "
                 "separately and not included above:")
        L.append("")
        L.append("| " + " | ".join(WORKLOADS[w]["short"] for w in wls) + " |")
        L.append("|" + "---|" * len(wls))
        cells = []
        for w in wls:
            r = results["workloads"][w].get(cfw, {})
            cells.append(_fmt_time(r["compile_s"]) if r.get("status") == "ok" else
                         r.get("status", "–"))
        L.append("| " + " | ".join(cells) + " |")
        L.append("")
    # compiled against eager
    twins = [(c, e) for c, e in EAGER_TWIN.items() if c in fws and e in fws]
    if twins:
        L.append("Compiled against eager: largest relative difference (max-norm) of each "
                 "compiled form from its own eager form, same inputs, every output; "
                 f"tolerance {RTOL:g}.")
        L.append("")
        L.append("| compiled | eager | " + " | ".join(WORKLOADS[w]["short"] for w in wls)
                 + " |")
        L.append("|" + "---|" * (len(wls) + 2))
        for c, e in twins:
            row = [c, e]
            for w in wls:
                chk = results["workloads"][w].get(c, {}).get("check_eager")
                if not chk:
                    row.append("–")
                elif "error" in chk:
                    row.append(chk["error"])
                else:
                    row.append(("ok " if chk["ok"] else "**MISMATCH** ") +
                               f"{chk['max_rel_err']:.1e}")
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    # methods, problems
    for kind, is_kind in (("Gradient", lambda w: "hvp" not in w), ("HVP", lambda w: "hvp" in w)):
        methods = []
        for fw in fws:
            ms = sorted({r.get("method") for w in wls if is_kind(w)
                         for r in [results["workloads"][w].get(fw, {})] if r.get("method")})
            if fw != "numpy" and ms:
                methods.append(f"{fw}: {', '.join(ms)}")
        if methods:
            L.append(f"{kind} method: " + "; ".join(methods) + ".")
            L.append("")
    if not m["shift"]:
        L.append(f"Note: the log-softmax is computed without the max shift in every "
                 f"framework because chainrules could not differentiate `np.max` "
                 f"({m['shift_reason']}).")
        L.append("")
    probs = []
    for w in wls:
        for fw, r in results["workloads"][w].items():
            if r.get("status") in ("error", "skipped"):
                probs.append(f"- {fw} / {w}: {r['status']}: "
                             f"{r.get('error', '').splitlines()[0] if r.get('error') else ''}")
    if probs:
        L.append("Skipped or failed:")
        L.append("")
        L.extend(probs)
        L.append("")
    mem = results.get("memory")
    if mem:
        err = (mem.get("error") or "").strip().splitlines()
        L.append("Memory (residual chain, `benchmarks/memory_chain.py`, fresh processes, "
                 "same allocator settings): " + mem["status"] +
                 (f" (`{err[-1][:300]}`)" if err else ""))
        L.append("")
        if mem.get("stdout"):
            L.append("```")
            L.append(mem["stdout"])
            L.append("```")
            L.append("")
    return "\n".join(L)


def update_readme(md):
    if not os.path.exists(README):
        return
    with open(README) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return
    pre, rest = text.split(BEGIN, 1)
    _, post = rest.split(END, 1)
    with open(README, "w") as f:
        f.write(pre + BEGIN + "\n" + md.strip() + "\n" + END + post)


# ---------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer, shorter repeats (for development)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="output directory (default benchmarks/results)")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                    help="comma-separated subset of " + ",".join(FRAMEWORKS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated subset of " + ",".join(WORKLOADS))
    ap.add_argument("--threads", default="1,2",
                    help="comma-separated BLAS thread counts, one run each, for every "
                         "framework (default 1,2: one thread, and the two a user of this "
                         "2-core machine gets by default)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the worker processes")
    ap.add_argument("--allocator", choices=("fixed", "default"), default="fixed",
                    help="glibc's allocator settings in the workers: fixed identically "
                         "(default; no trim or mmap of freed memory, so no framework "
                         "gains by reusing its heap) or glibc's defaults (what a "
                         "user's process has: page faults on memory freed and taken "
                         "again)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory workload")
    ap.add_argument("--no-readme", action="store_true",
                    help="do not write the table into benchmarks/README.md")
    ap.add_argument("--timeout", type=float, default=900.0, help="per worker, seconds")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="wait up to SECONDS for the 1-minute load average to drop "
                         "below 0.5 before starting (timings on a busy machine are noise)")
    ap.add_argument("--render", metavar="JSON",
                    help="only re-render results.md, ratios.png (and the README table "
                         "for a full run) from a saved results.json")
    a = ap.parse_args(argv)
    if a.render:
        with open(a.render) as f:
            results = json.load(f)
        return write_outputs(results, os.path.dirname(os.path.abspath(a.render)),
                             not _runs(results)[0]["meta"]["quick"] and not a.no_readme)

    frameworks = [f for f in a.frameworks.split(",") if f]
    workloads = [w for w in a.workloads.split(",") if w]
    for f in frameworks:
        if f not in FRAMEWORKS:
            ap.error(f"unknown framework {f!r}")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}")
    if "numpy" not in frameworks:
        frameworks.insert(0, "numpy")
    thread_counts = [int(t) for t in str(a.threads).split(",") if t]
    runs = []
    for k, threads in enumerate(thread_counts):
        print(f"=== {threads} BLAS thread{'s' if threads > 1 else ''} ===", flush=True)
        runs.append(run_once(a, threads, frameworks, workloads,
                             memory=not a.no_memory and k == len(thread_counts) - 1))
    results = {"runs": runs}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=float)
    # (the README's table is of the fixed allocator's runs)
    return write_outputs(results, a.out,
                         not a.quick and not a.no_readme and a.allocator == "fixed")


def run_once(a, threads, frameworks, workloads, memory):
    """Every workload for every framework at one thread count."""
    timing = (dict(repeats=3, min_time=0.05, warmup=0.1) if a.quick else
              dict(repeats=9, min_time=0.3, warmup=0.5))
    timing["threads"] = threads
    os.makedirs(a.out, exist_ok=True)
    env = common.worker_env(threads, a.allocator)
    malloc = MALLOC_ENV if a.allocator == "fixed" else {}

    # can chainrules differentiate np.max? then every framework uses the
    # max-shifted log-softmax; otherwise every framework uses the plain one
    p = subprocess.run([a.python, "-c", PROBE_MAX], env=env, capture_output=True, text=True)
    shift = p.returncode == 0
    shift_reason = "" if shift else (p.stderr.strip().splitlines() or ["?"])[-1][:200]

    deadline = time.time() + a.wait_quiet
    while os.getloadavg()[0] >= 0.5 and time.time() < deadline:
        time.sleep(5)
    loadavg = tuple(round(x, 2) for x in os.getloadavg())
    if loadavg[0] > 0.5 * threads:
        print(f"warning: load average {loadavg} on {os.cpu_count()} CPUs: other processes "
              "compete for the cores and the timings will be noisy"
              + ("; multithreaded BLAS degrades badly when the cores are oversubscribed"
                 if threads > 1 else ""), flush=True)
    results = {
        "meta": dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
                     quick=a.quick, threads=threads, malloc=malloc,
                     repeats=timing["repeats"], min_time=timing["min_time"],
                     warmup=timing["warmup"], shift=shift, shift_reason=shift_reason,
                     loadavg_before=loadavg, python=a.python,
                     machine=common.machine_info(), rtol=RTOL),
        "versions": {}, "workloads": {}, "reference": {},
    }
    print(f"threads={threads}; allocator: " +
          (" ".join(f"{k}={v}" for k, v in malloc.items()) or "glibc's defaults") +
          f"; log-softmax max shift: {shift}" + (f" ({shift_reason})" if not shift else ""),
          flush=True)
    outdir = os.path.join(a.out, f"threads{threads}")
    os.makedirs(outdir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "inputs.npz")
        common.make_data(data, seed=0)
        for w in workloads:
            t0 = time.perf_counter()
            results["workloads"][w] = run_workload(
                a.python, env, frameworks, w, data, outdir, timing, shift, a.timeout,
                lambda m: print(m, flush=True))
            for fw, r in results["workloads"][w].items():
                if r.get("version"):
                    results["versions"][fw] = r["version"]
            print(f"  ({w}: {time.perf_counter() - t0:.0f} s)", flush=True)
    derive(results)
    correctness(results, outdir)
    if memory:
        print("  memory     (memory_chain.py)", flush=True)
        results["memory"] = run_memory(a.python, env, outdir, a.quick, a.timeout * 4)
    results["meta"]["loadavg_after"] = tuple(round(x, 2) for x in os.getloadavg())
    return results


def _runs(results):
    """The per-thread-count runs of a results file (older files hold one)."""
    return results["runs"] if "runs" in results else [results]


def markdown_all(results):
    parts = []
    for r in _runs(results):
        t = r["meta"]["threads"]
        parts.append(f"### {t} BLAS thread{'s' if t > 1 else ''}\n\n" + markdown(r))
    parts.append(f'<img src="../{PLOT}" alt="time ratios of every framework and workload, '
                 'at one and at two threads" width="100%">\n')
    return "\n".join(parts)


def write_outputs(results, out, readme):
    md = markdown_all(results)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md + "\n")
    try:
        import plot
        plot.plot(results, os.path.join(out, "ratios.png"))
        if readme:
            import shutil

            dst = os.path.join(os.path.dirname(HERE), PLOT)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(out, "ratios.png"), dst)
    except Exception as e:  # matplotlib missing: the table is still there
        print(f"plot skipped: {type(e).__name__}: {e}")
    if readme:
        update_readme(md)
    print()
    print(md)
    print(f"\nwritten: {out}/results.json, results.md, ratios.png")
    bad = [(w, fw) for r in _runs(results) for w, d in r["workloads"].items()
           for fw, x in d.items() for k in ("check", "check_eager")
           if x.get(k) and not x[k].get("ok", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
