"""The benchmark runner runs end to end and writes the JSON it promises.
(No timing assertions: figures depend on the machine.)"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RECORD_KEYS = {
    "workload", "variant", "floor", "median_s", "min_s", "max_s",
    "repeats", "number", "ratio", "diff_us", "description",
}


def run_quick(tmp_path, only):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", only, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(out.read_text())


def test_quick_run_writes_table_and_json(tmp_path):
    stdout, report = run_quick(tmp_path, "eager.sin.n10,tracing.elementwise1000")
    assert {"created", "mode", "machine", "results"} <= report.keys()
    assert report["mode"] == "quick"
    assert {"python", "numpy", "functrans", "platform", "cpu_count"} <= report["machine"].keys()
    results = report["results"]
    assert {r["workload"] for r in results} == {"eager.sin.n10", "tracing.elementwise1000"}
    for r in results:
        assert RECORD_KEYS <= r.keys()
        assert r["repeats"] >= 7 and r["number"] >= 1 and r["median_s"] > 0
    floors = [r for r in results if r["floor"]]
    assert len(floors) == 2 and all(r["ratio"] == 1.0 for r in floors)
    eager = {r["variant"] for r in results if r["workload"] == "eager.sin.n10"}
    assert eager == {"numpy", "functrans"}
    for r in results:
        if r["workload"].startswith("tracing"):
            assert r["unit"] == "eqn" and r["units"] >= 1000 and r["us_per_unit"] > 0
    assert "eager.sin.n10" in stdout and "us/eqn" in stdout


def test_only_rejects_unknown_workloads(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "no-such-workload"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "eager.sin.n10" in proc.stderr  # the message lists what exists


def test_list_names_a_workload_of_every_topic():
    from benchmarks import TOPICS

    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--list", "--no-peers"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    for topic in TOPICS:
        assert any(n.startswith(topic + ".") for n in names), topic


def test_self_timed_and_memory_workloads_report_their_figures():
    import numpy as np

    from benchmarks._timing import Workload, measure

    timed = measure(Workload("t", "self-timed", {"a": lambda: 2.0, "b": lambda: 1.0}, floor="b",
                             metric="self_timed"), "quick")
    assert [r["ratio"] for r in timed] == [2.0, 1.0]
    assert all(r["metric"] == "self_timed" and r["median_s"] > 0 for r in timed)
    memory = measure(Workload("m", "memory", {"small": lambda: np.ones(1000),
                                              "big": lambda: np.ones(1_000_000)},
                              floor="small", metric="peak_memory"), "quick")
    small, big = memory
    assert RECORD_KEYS - {"description"} <= small.keys() and "peak_mb" in small
    assert 7.9 < big["peak_mb"] < 9 and big["ratio"] > 100 and small["ratio"] == 1.0


def test_floors_compute_what_the_functrans_variants_compute():
    """Each hand-written NumPy floor is the same math as the workload (on
    small inputs, so the check is quick)."""
    import numpy as np

    import functrans as ft
    from benchmarks import autodiff, control_flow, jacobians

    rng = np.random.default_rng(1)
    x, v = rng.standard_normal(7), rng.standard_normal(7)
    np.testing.assert_allclose(autodiff.grad_numpy(x), ft.grad(autodiff.f_numpy)(x))
    np.testing.assert_allclose(autodiff.hessian_numpy(x), ft.hessian(autodiff.f_numpy)(x))
    np.testing.assert_allclose(autodiff.rosenbrock_hvp_numpy(x, v),
                               ft.hvp(autodiff.rosenbrock, (x,), (v,)))
    np.testing.assert_allclose(jacobians.rosenbrock_hessian_numpy(x),
                               ft.hessian(jacobians.rosenbrock)(x))
    params, xs, ys = jacobians._mlp_data(rng)
    got = ft.vmap(ft.grad(jacobians.mlp_loss), in_axes=(None, 0, 0))(params, xs[:5], ys[:5])
    want = jacobians.per_example_grads_numpy(params, xs[:5], ys[:5])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    w = rng.standard_normal((control_flow.SIZE, control_flow.SIZE)) / 4
    seq = rng.standard_normal((6, control_flow.SIZE))
    np.testing.assert_allclose(control_flow.rnn_grad_numpy(w, seq),
                               ft.grad(control_flow.rnn_loss)(w, seq))


def test_steady_fields_of_jit_and_eager_variants(monkeypatch):
    """The records of the variants a workload starts cold carry the calls and
    seconds to their final tier or steady call time, and a peak; the table
    shows them, with the reason a program stays in the NumPy tier."""
    import numpy as np

    import functrans as ft
    from benchmarks import _timing
    from benchmarks.__main__ import reason_line, row

    # The default rule (the suite turns tiering off); a bound too short for
    # any program here to become hot.
    monkeypatch.setattr(ft.config, "jit_tier_up", "measured")
    monkeypatch.setitem(_timing.MODES, "quick", {**_timing.MODES["quick"], "steady_s": 0.2})
    x = np.linspace(-1.0, 1.0, 5)

    def sines(x):
        return np.sum(np.sin(x) * x)

    a = np.arange(25.0).reshape(5, 5)

    def products(x):  # stays in the NumPy tier: matrix products dominate
        return (a @ x) @ (a @ x)

    def cubic(x):  # exact in the native tier: watched by the rule, which waits for more calls
        return np.sum(x * x * x + x * 3.0)

    eager = ft.grad(sines)
    work = _timing.Workload(
        "w", "tiny", {"numpy": lambda: np.cos(x), "functrans": lambda: eager(x)}, floor="numpy",
        fresh={"functrans": _timing.fresh_eager(ft.grad, sines, x),
               "numpy": _timing.fresh_jit(ft.grad, products, x)})
    floor, own = _timing.measure(work, "quick")
    assert "steady" not in _timing.measure(
        _timing.Workload("v", "", {"a": lambda: None}, floor="a"), "quick")[0]

    st = own["steady"]
    assert set(st) == {"calls", "seconds", "settled"}
    assert isinstance(st["calls"], int) and st["calls"] >= 0
    assert isinstance(st["seconds"], float) and st["seconds"] >= 0
    assert isinstance(st["settled"], bool)
    assert isinstance(own["peak_traced_mb"], float) and own["peak_traced_mb"] > 0

    st = floor["steady"]  # a jit program that stays in the NumPy tier says so at once
    assert set(st) == {"calls", "seconds", "settled", "tier", "reason"}
    assert (st["calls"], st["settled"], st["tier"]) == (1, True, "numpy")
    assert "matrix products" in st["reason"]
    cells = row(floor)
    assert cells[5].startswith("stays in NumPy tier (after 1 call, ")
    assert cells[6].endswith(("kB", "MB"))
    assert reason_line(floor, 4) == "    NumPy tier: " + st["reason"]
    assert reason_line(own, 4) is None

    [watched] = _timing.measure(_timing.Workload(
        "a", "", {"j": lambda: 1.0}, floor="j",
        fresh={"j": _timing.fresh_jit(ft.grad, cubic, x)}, metric="self_timed"), "quick")
    st = watched["steady"]  # the bound comes first: not settled, and why
    assert st["settled"] is False and st["calls"] > 1 and st["tier"] == "numpy"
    assert "watches its calls" in st["reason"]
    assert row(watched)[5].startswith("numpy tier, not final after ")


def test_eager_steadiness_ignores_one_slow_call():
    from benchmarks._timing import _settled_at, format_steady

    assert format_steady({"steady": {"calls": 0, "seconds": 0.0, "settled": True}}) \
        == "steady from the first call"
    assert format_steady({"steady": {"calls": 2, "seconds": 0.5, "settled": True}}) \
        == "steady after 2 calls, 500 ms"

    ms = 1e-3
    assert _settled_at([9 * ms, 5 * ms, 3 * ms] + [ms] * 10) == (3, True)
    assert _settled_at([ms] * 6 + [9 * ms] + [ms] * 6) == (0, True)  # the machine, not the engine
    assert _settled_at([ms] * 10 + [5 * ms] * 3) == (13, False)  # slower at the end
    assert _settled_at([ms] * 5) == (5, False)  # too few calls to say


def test_a_program_on_trial_is_not_yet_in_its_final_tier():
    # A move is judged by its first native calls, and may be undone: the
    # steady state is the verdict's tier.
    from benchmarks import _timing
    from functrans.jit import TierInfo

    def info(tier, reason):
        return TierInfo("f64[10]", tier, reason)

    assert not _timing._is_final(info("native", "moved by the rule after 9 calls and 1.0 ms in "
                                                "the NumPy tier (1 kernels); on trial"))
    assert _timing._is_final(info("native", "moved by the rule after 9 calls and 1.0 ms in the "
                                            "NumPy tier (1 kernels); 2.0 us a native call "
                                            "against 3.0 us in the NumPy tier"))
    assert _timing._is_final(info("numpy", "moved back after 64 native calls: 3.5 us a native "
                                           "call against 2.0 us in the NumPy tier"))
    assert not _timing._is_final(info("numpy", "compiling for the native tier (hot: 9 calls, "
                                               "1.0 ms in the NumPy tier)"))
