"""``python -m chainrules.testing MODULE``: the table and the exit status."""

import os
import subprocess
import sys
import textwrap

from chainrules.testing import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_cli_on_the_example_module():
    proc = subprocess.run(
        [sys.executable, "-m", "chainrules.testing", "examples/my_rules.py", "-n", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["op", "dtype", "modes", "checked", "examples",
                                "worst", "rel", "err", "result"]
    rows = {(ln.split()[0], ln.split()[1]): ln.split() for ln in lines[2:8]}
    assert set(rows) == {(f"my_rules.{op}", dt) for op in ("softplus", "cube", "weighted_sum")
                         for dt in ("float64", "float32")}
    for (op, dt), row in rows.items():
        assert row[-1] == "PASS" and row[3] == "4"
        assert float(row[4]) < (1e-9 if dt == "float64" else 1e-4)
    # the class-style rule has a hand-written HVP path, the closure rules one
    # derived from their pullbacks: both are the fast path; neither takes
    # batches of directions itself (the engine loops over them, checked)
    assert rows[("my_rules.cube", "float64")][2] == "rrule,frule,hvp,batched(loop)"
    assert rows[("my_rules.softplus", "float64")][2] == "rrule,frule,hvp,batched(loop)"
    assert "6 passed, 0 failed" in proc.stdout


BROKEN = '''
import numpy as np
import chainrules as cr

@cr.primitive
def cli_good(x):
    return np.sin(x)

@cr.rrule(cli_good)
def _(x):
    return cli_good(x), lambda g: (g * np.cos(x),)

@cr.primitive
def cli_bad(x):
    return np.sin(x)

@cr.rrule(cli_bad)
def _(x):
    return cli_bad(x), lambda g: (g * np.sin(x),)   # wrong derivative
'''


def test_cli_reports_a_broken_rule(tmp_path, capsys):
    path = tmp_path / "cli_broken_rules.py"
    path.write_text(textwrap.dedent(BROKEN))
    status = cli.main([str(path), "-n", "3", "--dtype", "float64"])
    out = capsys.readouterr().out
    assert status == 1
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[2:4]}
    assert rows["cli_broken_rules.cli_good"][-1] == "PASS"
    assert rows["cli_broken_rules.cli_bad"][-1] == "FAIL"
    assert rows["cli_broken_rules.cli_bad"][3] == "0"
    assert "FAIL cli_broken_rules.cli_bad [float64]" in out
    assert "pullback vs finite differences" in out
    assert "1 passed, 1 failed" in out


def test_cli_with_nothing_to_check(tmp_path, capsys):
    path = tmp_path / "cli_empty_module.py"
    path.write_text("X = 1\n")
    assert cli.main([str(path)]) == 2
    assert "nothing to check" in capsys.readouterr().out
