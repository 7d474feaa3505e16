"""Tests of dynamic loss scaling and of the precision policy in
functrans.optimizers: the scale's state machine step by step against a
Python reference, eagerly and jitted; a skipped step leaves parameters and
optimizer state alone; scaling keeps float16 gradients that would flush to
zero; a float16 policy's values and derivatives against NumPy's float16
arithmetic and finite differences, under grad, vmap and jit."""

import numpy as np
import pytest

import functrans as ft
from functrans import optimizers as optim
from functrans.testing import check_grads


def reference_scales(finite_seq, scale, interval, growth, backoff, min_scale):
    """(scale, good_steps) after each step, written out as torch.amp.GradScaler
    describes it (with optax's floor at min_scale)."""
    count, out = 0, []
    for finite in finite_seq:
        if finite:
            count += 1
            if count == interval:
                scale, count = scale * growth, 0
        else:
            scale, count = max(scale * backoff, min_scale), 0
        out.append((scale, count))
    return out


FINITE = [True, True, False, True, True, True, True, False, False, False, True]


@pytest.mark.parametrize("jitted", [False, True])
def test_loss_scale_state_machine_step_by_step(jitted):
    ls = optim.dynamic_loss_scale(initial_scale=16.0, growth_interval=3, growth_factor=4.0,
                                  backoff_factor=0.25, min_scale=0.5)
    adjust = ft.jit(ls.adjust) if jitted else ls.adjust
    state = ls.init()
    want = reference_scales(FINITE, 16.0, 3, 4.0, 0.25, 0.5)
    for finite, (scale, count) in zip(FINITE, want):
        state = adjust(np.bool_(finite), state)
        assert state.scale.dtype == np.float32 and state.good_steps.dtype == np.int32
        assert (float(state.scale), int(state.good_steps)) == (scale, count)


def test_loss_scale_growth_stays_finite():
    ls = optim.dynamic_loss_scale(initial_scale=2.0**127, growth_interval=1)
    state = ls.adjust(np.bool_(True), ls.init())
    assert float(state.scale) == 2.0**127 and int(state.good_steps) == 0


def test_all_finite_and_select_tree():
    for bad in (np.inf, -np.inf, np.nan):
        tree = {"a": np.ones(3, np.float16), "b": np.array([1.0, bad])}
        assert not bool(optim.all_finite(tree))
        assert not bool(ft.jit(optim.all_finite)(tree))
    assert bool(optim.all_finite({"a": np.zeros((0,)), "b": np.array(-0.0)}))
    assert bool(optim.all_finite({}))
    picked = optim.select_tree(np.bool_(True), {"w": np.array([np.nan])}, {"w": np.zeros(1)})
    assert np.isnan(picked["w"]).all()


def make_step(loss, opt, ls):
    @ft.jit
    def step(params, opt_state, ls_state, x):
        grads = ft.grad(lambda p: ls.scale(loss(p, x), ls_state))(params)
        grads = ls.unscale(grads, ls_state)
        finite = optim.all_finite(grads)
        updates, new_opt_state = opt.update(grads, opt_state, params)
        params = optim.select_tree(finite, optim.apply_updates(params, updates), params)
        opt_state = optim.select_tree(finite, new_opt_state, opt_state)
        return params, opt_state, ls.adjust(finite, ls_state), finite

    return step


def test_jitted_step_skips_non_finite_gradients():
    def loss(p, x):
        return np.sum((p["w"].astype(np.float16) * x) ** 2)

    opt, ls = optim.adam(0.1), optim.dynamic_loss_scale(initial_scale=2.0**15, growth_interval=2)
    step = make_step(loss, opt, ls)
    params = {"w": np.array([1.0, -2.0], np.float32)}
    opt_state, ls_state = opt.init(params), ls.init()
    x = np.array([30.0, 1.0], np.float16)  # the gradient 2 * 30**2 * 2**15 overflows float16
    new_params, new_opt, new_ls, finite = step(params, opt_state, ls_state, x)
    assert not bool(finite)
    np.testing.assert_array_equal(new_params["w"], params["w"])
    for a, b in zip(ft.tree_util.tree_leaves(new_opt), ft.tree_util.tree_leaves(opt_state)):
        np.testing.assert_array_equal(a, b)
    assert float(new_ls.scale) == 2.0**14
    # The scale keeps halving until the scaled gradient fits in float16, then the step runs.
    for _ in range(20):
        if bool(finite):
            break
        new_params, new_opt, new_ls, finite = step(params, opt_state, new_ls, x)
    assert bool(finite) and float(new_ls.scale) == 32.0  # 1800 * 32 < 65504 < 1800 * 64
    assert new_params["w"].dtype == np.float32
    assert not np.array_equal(new_params["w"], params["w"])


def test_scaling_keeps_small_float16_gradients():
    # float32 parameters, float16 computation: the gradient x * 2**-14 (~1e-8) is below
    # float16's smallest subnormal; the cotangent leaves float16 at the parameters' cast.
    x = np.array([1e-4, 3e-4], np.float16)

    def loss(w):
        return np.sum(w.astype(np.float16) * x) * np.float16(2.0**-14)

    w = np.array([0.5, 2.0], np.float32)
    exact = x.astype(np.float64) * 2.0**-14
    assert not np.any(ft.grad(loss)(w))  # unscaled: every gradient flushes to zero
    ls = optim.dynamic_loss_scale(initial_scale=2.0**15)
    state = ls.init()
    g = ls.unscale(ft.grad(lambda w: ls.scale(loss(w), state))(w), state)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, exact, rtol=1e-3, atol=0)  # float16's rounding of x * 2


def test_unscale_keeps_each_gradient_dtype():
    ls = optim.dynamic_loss_scale(initial_scale=4.0)
    grads = {"a": np.array([8.0], np.float16), "b": np.array([8.0], np.float32),
             "c": np.array([8.0])}
    out = ls.unscale(grads, ls.init())
    assert {k: v.dtype for k, v in out.items()} == {k: v.dtype for k, v in grads.items()}
    assert all(float(v[0]) == 2.0 for v in out.values())


def test_unscale_leaves_non_float_leaves_alone():
    ls = optim.dynamic_loss_scale(initial_scale=2.0**15)
    grads = {"w": np.array([2.0**15], np.float32), "step": np.array([3, -7], np.int32),
             "mask": np.array([True, False]), "c": np.array([2.0**16 + 2.0**15 * 1j], np.complex64),
             "z": np.zeros((2,), ft.dtypes.float0)}
    for unscale in (ls.unscale, ft.jit(ls.unscale)):
        out = unscale(grads, ls.init())
        assert float(out["w"][0]) == 1.0 and out["c"][0] == 2.0 + 1j
        np.testing.assert_array_equal(out["step"], grads["step"])
        np.testing.assert_array_equal(out["mask"], grads["mask"])
        assert out["step"].dtype == np.int32 and out["mask"].dtype == np.bool_
        assert out["z"].dtype == ft.dtypes.float0


@pytest.mark.parametrize("jitted", [False, True])
def test_scale_runs_in_float32_for_float16_losses(jitted):
    # 3 * 2**15 = 98304 is above float16's largest finite 65504.
    ls = optim.dynamic_loss_scale(initial_scale=2.0**15)
    scale = ft.jit(ls.scale) if jitted else ls.scale
    out = scale(np.float16(3.0), ls.init())
    assert out.dtype == np.float32 and float(out) == 3.0 * 2.0**15
    assert scale(np.float64(3.0), ls.init()).dtype == np.float64
    # Through grad: the float16 gradient is 2**15 * dloss, finite, and unscales exactly.
    x = np.array([0.5, -1.5], np.float16)
    state = ls.init()
    value, g = ft.value_and_grad(lambda w: ls.scale(np.sum(w * x) + 4.0, state))(
        np.ones(2, np.float16))
    assert float(value) == 3.0 * 2.0**15
    assert g.dtype == np.float16 and np.isfinite(g).all()
    np.testing.assert_array_equal(ls.unscale(g, state), x)


def policy_loss(w, x, n):
    return np.sum(np.tanh(w * x)) * n


def numpy_float16_loss_and_grad(w, x, n):
    """The loss and its gradient computed in NumPy's float16, the gradient
    written out: d/dw sum(tanh(w x)) n = (1 - tanh(w x)^2) x n."""
    w16, x16 = w.astype(np.float16), x.astype(np.float16)
    t = np.tanh(w16 * x16)
    return np.sum(t) * n, ((np.float16(1) - t * t) * x16 * n)


W = np.array([0.5, -1.0, 0.25], np.float32)
X = np.array([1.0, 2.0, -3.0], np.float32)


@pytest.mark.parametrize("transform", ["eager", "jit"])
def test_policy_values_and_grad_against_numpy_float16(transform):
    policy = optim.precision_policy()
    f = policy.apply(policy_loss)
    vg = ft.value_and_grad(f)
    if transform == "jit":
        vg = ft.jit(vg, static_argnums=2)
    value, g = vg(W, X, 2)
    want_value, want_grad = numpy_float16_loss_and_grad(W, X, 2)
    assert value.dtype == np.float32 and g.dtype == np.float32
    assert float(value) == float(want_value.astype(np.float32))
    # Same float16 operations; the transpose may group them differently: a few ulps.
    np.testing.assert_allclose(g, want_grad.astype(np.float32), rtol=4e-3)


def test_policy_grad_under_vmap_matches_loop():
    policy = optim.precision_policy()
    g = ft.vmap(ft.grad(policy.apply(policy_loss)), in_axes=(None, 0, None))
    xs = np.stack([X, -X, 0.5 * X])
    batched = g(W, xs, 1)
    assert batched.dtype == np.float32
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(batched[i], ft.grad(policy.apply(policy_loss))(W, x, 1))


def test_policy_finite_differences():
    policy = optim.precision_policy(param_dtype=np.float64, compute_dtype=np.float16)
    f = policy.apply(lambda w: np.sum(np.tanh(w * X)))
    # float16 rounding (~1e-3) over a step of 1e-1: tolerances of float16's size
    check_grads(f, (W.astype(np.float64),), order=1, eps=1e-1, atol=5e-2, rtol=5e-2)


def test_policy_leaves_integers_and_python_floats():
    policy = optim.precision_policy()
    out = policy.cast_to_compute({"i": np.arange(3), "b": np.array([True]), "f": 1.5,
                                  "x": np.ones(2)})
    assert out["i"].dtype == np.int64 and out["b"].dtype == np.bool_
    assert out["f"] == 1.5 and out["x"].dtype == np.float16
    assert policy.cast_to_output(np.ones(2, np.float16)).dtype == np.float32


def test_policy_casts_numpy_float64_scalars():
    # np.float64 is a subclass of float but not weak: uncast, x * (1/3) ran in
    # float64 eagerly (0.333333...) and in float16 under jit (0.33325195).
    policy = optim.precision_policy(np.float32, np.float16, np.float64)
    f = policy.apply(lambda x, s: x * s)
    x, third = np.array([1.0], np.float32), np.float64(1.0 / 3.0)
    want = np.float64(np.float16(1.0 / 3.0))
    assert policy.cast_to_compute(third).dtype == np.float16
    assert f(x, third)[0] == want
    assert ft.jit(f)(x, third)[0] == want


def test_errors():
    with pytest.raises(TypeError, match=r"precision_policy: compute_dtype must be a real "
                                        r"floating-point dtype .* got 'int32'"):
        optim.precision_policy(compute_dtype="int32")
    # NumPy reads np.dtype(None) as float64: a policy must not compute in float64 by it.
    for arg in ("param_dtype", "compute_dtype"):
        with pytest.raises(TypeError, match=rf"precision_policy: {arg} must be a real "
                                            r"floating-point dtype \(float16, bfloat16, "
                                            r"float32, float64\), got None; to compute without "
                                            r"a cast, pass the parameters' dtype"):
            optim.precision_policy(**{arg: None})
    assert optim.precision_policy(output_dtype=None).output_dtype == np.float32
    with pytest.raises(ValueError, match=r"dynamic_loss_scale: growth_interval must be a "
                                         r"whole number of steps"):
        optim.dynamic_loss_scale(growth_interval=0)
    with pytest.raises(ValueError, match=r"backoff_factor must be a number in \(0, 1\]"):
        optim.dynamic_loss_scale(backoff_factor=1.5)
    with pytest.raises(ValueError, match=r"initial_scale=1e\+39 overflows float32"):
        optim.dynamic_loss_scale(initial_scale=1e39)
