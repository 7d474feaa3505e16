"""Tests of functrans.optimizers: each optimizer against its update rule
written out in NumPy here, twice: once in optax's form (the reference the
building blocks follow) and once as torch.optim's documentation states the
algorithm; under jit, with float32 parameters, schedules, clipping at its
special points, and the errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import optimizers as optim

RNG = np.random.default_rng(0)
SHAPES = {"b": (2,), "w": (3, 2)}
PARAMS = {k: RNG.standard_normal(s) for k, s in SHAPES.items()}
GRADS = [{k: RNG.standard_normal(s) for k, s in SHAPES.items()} for _ in range(6)]


def run(opt, params=PARAMS, grads=GRADS):
    """The parameters after each step of ``opt`` fed ``grads``."""
    state = opt.init(params)
    out = []
    for g in grads:
        updates, state = opt.update(g, state, params)
        params = optim.apply_updates(params, updates)
        out.append(params)
    return out


def run_rule(step, params=PARAMS, grads=GRADS, **slots):
    """The same for a per-leaf reference ``step(p, g, t, state) -> p`` (``t``
    counts from 1; ``state`` a dict of that leaf's buffers)."""
    states = {k: {} for k in params}
    out, params = [], dict(params)
    for t, g in enumerate(grads, start=1):
        params = {k: step(params[k], g[k], t, states[k]) for k in params}
        out.append(params)
    return out


def assert_runs_equal(got, want, rtol=1e-12):
    for a, b in zip(got, want):
        for k in want[0]:
            np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=1e-14)


# -- reference rules in optax's form -----------------------------------------------------


def ref_sgd(lr, momentum=None, nesterov=False):
    def step(p, g, t, s):
        if momentum is None:
            return p - lr * g
        s["trace"] = g + momentum * s.get("trace", 0.0)
        d = g + momentum * s["trace"] if nesterov else s["trace"]
        return p - lr * d
    return step


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, wd=0.0, decays=True):
    def step(p, g, t, s):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g**2
        m_hat, v_hat = s["m"] / (1 - b1**t), s["v"] / (1 - b2**t)
        return p - lr * (m_hat / (np.sqrt(v_hat + eps_root) + eps) + (wd * p if decays else 0))
    return step


def ref_rmsprop(lr, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
                centered=False, momentum=None):
    def step(p, g, t, s):
        s["v"] = decay * s.get("v", initial_scale) + (1 - decay) * g**2
        s["m"] = decay * s.get("m", 0.0) + (1 - decay) * g
        var = s["v"] - s["m"] ** 2 if centered else s["v"]
        d = g / np.sqrt(var + eps) if eps_in_sqrt else g / (np.sqrt(var) + eps)
        if momentum is not None:
            s["buf"] = d + momentum * s.get("buf", 0.0)
            d = s["buf"]
        return p - lr * d
    return step


def ref_adagrad(lr, init=0.1, eps=1e-7):
    def step(p, g, t, s):
        s["sum"] = s.get("sum", init) + g**2
        return p - lr * g / np.sqrt(s["sum"] + eps)
    return step


CASES = {
    "sgd": (optim.sgd(0.1), ref_sgd(0.1)),
    "sgd momentum": (optim.sgd(0.1, momentum=0.9), ref_sgd(0.1, 0.9)),
    "sgd nesterov": (optim.sgd(0.05, momentum=0.8, nesterov=True), ref_sgd(0.05, 0.8, True)),
    "adam": (optim.adam(1e-2), ref_adam(1e-2)),
    "adam eps_root": (optim.adam(1e-2, b1=0.5, b2=0.9, eps=1e-3, eps_root=1e-4),
                      ref_adam(1e-2, 0.5, 0.9, 1e-3, 1e-4)),
    "adamw": (optim.adamw(1e-2, weight_decay=0.1), ref_adam(1e-2, wd=0.1)),
    "rmsprop": (optim.rmsprop(1e-2), ref_rmsprop(1e-2)),
    "rmsprop torch eps": (optim.rmsprop(1e-2, decay=0.99, eps_in_sqrt=False, initial_scale=0.5),
                          ref_rmsprop(1e-2, 0.99, eps_in_sqrt=False, initial_scale=0.5)),
    "rmsprop centered momentum": (optim.rmsprop(1e-2, centered=True, momentum=0.9),
                                  ref_rmsprop(1e-2, centered=True, momentum=0.9)),
    "adagrad": (optim.adagrad(0.1), ref_adagrad(0.1)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_against_reference_rules(name):
    opt, rule = CASES[name]
    assert_runs_equal(run(opt), run_rule(rule))


@pytest.mark.parametrize("name", list(CASES))
def test_a_jitted_train_step_matches_eager(name):
    opt, _ = CASES[name]

    @ft.jit
    def step(params, state, g):
        updates, state = opt.update(g, state, params)
        return optim.apply_updates(params, updates), state

    params, state = PARAMS, opt.init(PARAMS)
    for g in GRADS:
        params, state = step(params, state, g)
    assert_runs_equal([params], run(opt)[-1:])
    assert step.cache_info().misses == 1  # the state's arrays never force a retrace


def test_adamw_mask_keeps_masked_leaves_from_decaying():
    mask = {"b": False, "w": True}
    by_tree = run(optim.adamw(1e-2, weight_decay=0.5, mask=mask))
    by_fun = run(optim.adamw(1e-2, weight_decay=0.5, mask=lambda p: mask))
    plain, decayed = run_rule(ref_adam(1e-2, wd=0.5, decays=False)), run_rule(ref_adam(1e-2,
                                                                                      wd=0.5))
    want = [{"b": a["b"], "w": b["w"]} for a, b in zip(plain, decayed)]
    assert_runs_equal(by_tree, want)
    assert_runs_equal(by_fun, want)


# -- torch.optim's published algorithms, written out ----------------------------------------
#
# From the pseudo-code in torch.optim's documentation (torch 2.x), with
# maximize=False, amsgrad=False, foreach/fused irrelevant to the numbers.


def torch_sgd(lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    def step(p, g, t, s):
        g = g + weight_decay * p
        if momentum:
            s["b"] = g if t == 1 else momentum * s["b"] + (1 - dampening) * g
            g = g + momentum * s["b"] if nesterov else s["b"]
        return p - lr * g
    return step


def torch_adam(lr, betas=(0.9, 0.999), eps=1e-8):
    def step(p, g, t, s):
        s["m"] = betas[0] * s.get("m", 0.0) + (1 - betas[0]) * g
        s["v"] = betas[1] * s.get("v", 0.0) + (1 - betas[1]) * g**2
        m_hat, v_hat = s["m"] / (1 - betas[0] ** t), s["v"] / (1 - betas[1] ** t)
        return p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return step


def torch_adamw(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    adam_step = torch_adam(lr, betas, eps)

    def step(p, g, t, s):
        return adam_step(p - lr * weight_decay * p, g, t, s)
    return step


def torch_rmsprop(lr, alpha=0.99, eps=1e-8, momentum=0.0, centered=False):
    def step(p, g, t, s):
        s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g**2
        v = s["v"]
        if centered:
            s["g_ave"] = alpha * s.get("g_ave", 0.0) + (1 - alpha) * g
            v = v - s["g_ave"] ** 2
        if momentum > 0:
            s["b"] = momentum * s.get("b", 0.0) + g / (np.sqrt(v) + eps)
            return p - lr * s["b"]
        return p - lr * g / (np.sqrt(v) + eps)
    return step


def torch_adagrad(lr, lr_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
    def step(p, g, t, s):
        lr_t = lr / (1 + (t - 1) * lr_decay)
        s["sum"] = s.get("sum", initial_accumulator_value) + g**2
        return p - lr_t * g / (np.sqrt(s["sum"]) + eps)
    return step


# (ours, torch's rule, torch.optim class name and keyword arguments)
TORCH_CASES = {
    "SGD": (optim.sgd(0.1), torch_sgd(0.1), ("SGD", {"lr": 0.1})),
    "SGD momentum": (optim.sgd(0.1, momentum=0.9), torch_sgd(0.1, 0.9),
                     ("SGD", {"lr": 0.1, "momentum": 0.9})),
    "SGD nesterov": (optim.sgd(0.1, momentum=0.9, nesterov=True),
                     torch_sgd(0.1, 0.9, nesterov=True),
                     ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True})),
    "Adam": (optim.adam(1e-2), torch_adam(1e-2), ("Adam", {"lr": 1e-2})),
    "AdamW": (optim.adamw(1e-2, weight_decay=1e-2), torch_adamw(1e-2),
              ("AdamW", {"lr": 1e-2})),
    "RMSprop": (optim.rmsprop(1e-2, decay=0.99, eps_in_sqrt=False), torch_rmsprop(1e-2),
                ("RMSprop", {"lr": 1e-2})),
    "RMSprop centered momentum": (
        optim.rmsprop(1e-2, decay=0.99, eps_in_sqrt=False, centered=True, momentum=0.5),
        torch_rmsprop(1e-2, momentum=0.5, centered=True),
        ("RMSprop", {"lr": 1e-2, "momentum": 0.5, "centered": True})),
    # torch puts eps outside the square root, optax inside: the same at eps=0.
    "Adagrad": (optim.adagrad(0.1, initial_accumulator_value=0.1, eps=0.0),
                torch_adagrad(0.1, initial_accumulator_value=0.1, eps=0.0),
                ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1, "eps": 0.0})),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_against_torch_optim_formulas(name):
    opt, rule, _ = TORCH_CASES[name]
    # The rules agree in exact arithmetic; the order of operations differs.
    assert_runs_equal(run(opt), run_rule(rule), rtol=1e-11)


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_against_torch_optim(name):
    torch = pytest.importorskip("torch")
    opt, _, (cls, kwargs) = TORCH_CASES[name]
    tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
               for k, v in PARAMS.items()}
    torch_opt = getattr(torch.optim, cls)(list(tensors.values()), **kwargs)
    want = []
    for g in GRADS:
        for k, t in tensors.items():
            t.grad = torch.tensor(g[k], dtype=torch.float64)
        torch_opt.step()
        want.append({k: t.detach().numpy().copy() for k, t in tensors.items()})
    assert_runs_equal(run(opt), want, rtol=1e-11)


def test_clip_against_torch_clip_grad_norm():
    torch = pytest.importorskip("torch")
    grads = {k: 3 * v for k, v in GRADS[0].items()}
    tensors = [torch.tensor(grads[k], dtype=torch.float64, requires_grad=True) for k in grads]
    for t in tensors:
        t.grad = t.detach().clone()
    torch.nn.utils.clip_grad_norm_(tensors, max_norm=1.5)
    clip = optim.clip_by_global_norm(1.5)
    ours = clip.update(grads, clip.init(grads))[0]
    for k, t in zip(grads, tensors):
        # torch divides by norm + 1e-6
        np.testing.assert_allclose(ours[k], t.grad.numpy(), rtol=1e-5)


# -- clipping ------------------------------------------------------------------------------


def clip(tree, max_norm):
    c = optim.clip_by_global_norm(max_norm)
    return c.update(tree, c.init(tree))[0]


def test_clip_by_global_norm_special_points():
    g = {"a": np.array([3.0]), "b": np.array([[4.0]])}
    np.testing.assert_array_equal(clip(g, 10.0)["a"], [3.0])  # below the bound: unchanged
    np.testing.assert_array_equal(clip(g, 5.0)["b"], [[4.0]])  # at it: unchanged
    np.testing.assert_allclose(clip(g, 1.0)["a"], [0.6], rtol=1e-15)
    zero = {"a": np.zeros(2), "b": -np.zeros(1)}
    out = clip(zero, 1.0)
    np.testing.assert_array_equal(out["a"], 0.0)
    assert np.signbit(out["b"]).all()  # -0.0 stays -0.0
    with np.errstate(invalid="ignore"):
        nan = clip({"a": np.array([np.nan, 1.0])}, 1.0)["a"]
        inf = clip({"a": np.array([np.inf, 1.0])}, 1.0)["a"]
    assert np.isnan(nan).all()  # a NaN gradient is never hidden
    assert np.isnan(inf[0]) and inf[1] == 0.0
    assert clip({}, 1.0) == {}


def test_clip_keeps_dtypes_and_does_not_overflow_float32():
    g = {"a": np.full(4, 1e30, np.float32), "b": np.ones(2, np.float64)}
    out = clip(g, 1.0)
    assert out["a"].dtype == np.float32 and out["b"].dtype == np.float64
    np.testing.assert_allclose(out["a"], 0.5, rtol=1e-6)  # |g|^2 = 4e60 in float64
    assert float(optim.global_norm(g)) == pytest.approx(2e30)


# -- dtypes, schedules, jit ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_float32_params_stay_float32(name):
    opt, _ = CASES[name]
    p32 = {k: v.astype(np.float32) for k, v in PARAMS.items()}
    g32 = [{k: v.astype(np.float32) for k, v in g.items()} for g in GRADS[:2]]
    out = run(opt, p32, g32)[-1]
    assert all(v.dtype == np.float32 for v in out.values())
    state = opt.init(p32)
    _, state = opt.update(g32[0], state, p32)
    for leaf in ft.tree_util.tree_leaves(state):
        assert np.asarray(leaf).dtype in (np.float32, np.int32)


def test_schedule_as_learning_rate_under_jit():
    lr = optim.exponential_decay(0.1, transition_steps=2, decay_rate=0.5)
    opt = optim.sgd(lr, momentum=0.9)
    rule_lrs = [0.1 * 0.5 ** (k / 2) for k in range(len(GRADS))]
    trace = {k: 0.0 for k in PARAMS}
    params, want = dict(PARAMS), []
    for lr_k, g in zip(rule_lrs, GRADS):
        trace = {k: g[k] + 0.9 * trace[k] for k in params}
        params = {k: params[k] - lr_k * trace[k] for k in params}
        want.append(params)
    assert_runs_equal(run(opt), want)

    p32 = {k: v.astype(np.float32) for k, v in PARAMS.items()}
    step = ft.jit(lambda p, s, g: opt.update(g, s, p))
    updates, state = step(p32, opt.init(p32), {k: v.astype(np.float32)
                                              for k, v in GRADS[0].items()})
    assert updates["w"].dtype == np.float32 and state[1].count == 1


def test_schedules_closed_forms_and_torch_lr_schedulers():
    steps = np.arange(0, 25)
    cos = optim.cosine_decay_schedule(0.1, decay_steps=20, alpha=0.05)
    # CosineAnnealingLR(T_max=20, eta_min=0.005), closed form, before T_max; constant after.
    eta = [0.005 + (0.1 - 0.005) * (1 + math.cos(math.pi * min(k, 20) / 20)) / 2 for k in steps]
    np.testing.assert_allclose([cos(int(k)) for k in steps], eta, rtol=1e-14)
    # ExponentialLR(gamma=0.9): exponential_decay with transition_steps=1.
    exp = optim.exponential_decay(0.1, transition_steps=1, decay_rate=0.9)
    np.testing.assert_allclose([exp(int(k)) for k in steps], 0.1 * 0.9**steps, rtol=1e-14)
    # MultiStepLR(milestones=[5, 15], gamma=0.1).
    pw = optim.piecewise_constant_schedule(0.1, {15: 0.1, 5: 0.1})
    want = [0.1 * 0.1 ** (int(k >= 5) + int(k >= 15)) for k in steps]
    np.testing.assert_allclose([pw(int(k)) for k in steps], want, rtol=1e-15)
    warm = optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=5, decay_steps=25,
                                              end_value=0.1)
    want = [k / 5 if k < 5 else 0.1 + 0.9 * (1 + math.cos(math.pi * (k - 5) / 20)) / 2
            for k in steps]
    np.testing.assert_allclose([warm(int(k)) for k in steps], want, rtol=1e-14, atol=1e-16)
    lin = optim.linear_schedule(1.0, 0.5, transition_steps=4, transition_begin=2)
    np.testing.assert_allclose([lin(k) for k in range(8)],
                               [1, 1, 1, 0.875, 0.75, 0.625, 0.5, 0.5], rtol=1e-15)
    stair = optim.exponential_decay(1.0, 3, 0.5, transition_begin=1, staircase=True,
                                    end_value=0.2)
    np.testing.assert_allclose([stair(k) for k in range(11)],
                               [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2], rtol=1e-15)
    assert optim.constant_schedule(0.3)(5) == 0.3


@pytest.mark.parametrize("schedule", [
    optim.cosine_decay_schedule(0.1, 10), optim.exponential_decay(0.1, 3, 0.5, staircase=True),
    optim.piecewise_constant_schedule(0.1, {2: 0.5}), optim.linear_schedule(0.1, 0.0, 5),
    optim.warmup_cosine_decay_schedule(0.0, 0.1, 3, 10), optim.constant_schedule(0.1),
])
def test_schedules_trace_and_batch(schedule):
    counts = np.arange(12, dtype=np.int32)
    eager = np.array([schedule(c) for c in counts])
    np.testing.assert_allclose(ft.jit(ft.vmap(schedule))(counts), eager, rtol=1e-15)
    np.testing.assert_allclose(schedule(counts), eager, rtol=1e-15)


def test_complex_params_have_real_second_moments():
    opt = optim.adam(0.1)
    p = np.array([1 + 2j, -1j])
    state = opt.init(p)
    updates, state = opt.update(np.array([1 + 1j, 2.0]), state, p)
    assert state[0].nu.dtype == np.float64 and updates.dtype == np.complex128
    # At the first step Adam moves by lr * g / |g| (eps aside).
    np.testing.assert_allclose(updates, -0.1 * np.array([1 + 1j, 2.0]) / np.array([2**0.5, 2.0]),
                               rtol=1e-7)


def test_inputs_are_never_written():
    opt = optim.adamw(0.1)
    params = {k: v.copy() for k, v in PARAMS.items()}
    state = opt.init(params)
    g = {k: v.copy() for k, v in GRADS[0].items()}
    opt.update(g, state, params)
    for k in PARAMS:
        np.testing.assert_array_equal(params[k], PARAMS[k])
        np.testing.assert_array_equal(g[k], GRADS[0][k])
        np.testing.assert_array_equal(state[0].mu[k], 0.0)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: optim.adam(-1.0), r"^adam: learning_rate must be a number in \[0, inf\), got -1\.0$"),
    (lambda: optim.sgd(np.inf), r"^sgd: learning_rate must be a number in \[0, inf\), got inf$"),
    (lambda: optim.adagrad(float("nan")), r"^adagrad: learning_rate must be a number in \[0, "
                                          r"inf\), got nan$"),
    (lambda: optim.sgd(0.1, momentum=5.0), r"^sgd: momentum must be a number in \[0, 1\), "
                                           r"got 5\.0$"),
    (lambda: optim.rmsprop(0.1, momentum=1.0), r"^rmsprop: momentum must be a number in "
                                               r"\[0, 1\), got 1\.0$"),
])
def test_hyperparameters_out_of_range_are_refused_when_the_optimizer_is_made(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_ends_of_the_hyperparameter_ranges_are_taken():
    p = np.array([1.0, -2.0])
    for opt, want in ((optim.sgd(0.0), [0.0, 0.0]), (optim.adam(0.0), [0.0, 0.0]),
                      (optim.sgd(0.1, momentum=0.0), [-0.1, 0.2])):
        updates, _ = opt.update(p, opt.init(p), p)
        np.testing.assert_allclose(updates, want, rtol=1e-15)


@pytest.mark.parametrize("name", ["sgd", "momentum", "adam", "rmsprop", "adagrad", "adamw"])
def test_a_gradient_shaped_unlike_its_parameter_is_refused_naming_the_leaf(name):
    opt = {"sgd": optim.sgd(0.1), "momentum": optim.sgd(0.1, momentum=0.9),
           "adam": optim.adam(0.1), "rmsprop": optim.rmsprop(0.1),
           "adagrad": optim.adagrad(0.1), "adamw": optim.adamw(0.1)}[name]
    label = "sgd" if name == "momentum" else name
    params = {"b": np.zeros(3), "w": np.ones((3, 2))}
    state = opt.init(params)
    grads = {"b": np.ones((3, 1)), "w": np.ones((3, 2))}  # (3, 1) would broadcast to (3, 3)
    with pytest.raises(ValueError, match=rf"^{label}\.update: grads\['b'\] has shape \(3, 1\), "
                                         r"but params\['b'\] has shape \(3,\); pass grads "
                                         r"shaped like the params"):
        opt.update(grads, state, params)
    if name not in ("sgd", "adamw"):  # without params, the state made by init is the reference
        with pytest.raises(ValueError, match=r"\.update: updates\['b'\] has shape \(3, 1\), "
                                             r"but the state init made for params\['b'\] has "
                                             r"shape \(3,\)"):
            opt.update(grads, state)
    with pytest.raises(ValueError, match=r"^apply_updates: updates\['w'\] has shape \(2,\), "
                                         r"but params\['w'\] has shape \(3, 2\)"):
        optim.apply_updates(params, {"b": np.zeros(3), "w": np.zeros(2)})


def test_errors():
    with pytest.raises(TypeError, match=r"^adam\.init: params\['n'\] has dtype int64; "
                                        r"optimizers move floating-point parameters only"):
        optim.adam(0.1).init({"n": np.arange(3), "w": np.ones(2)})
    with pytest.raises(TypeError, match=r"^apply_updates: params\[0\] has dtype bool"):
        optim.apply_updates([np.array([True])], [np.array([1.0])])
    opt = optim.sgd(0.1)
    with pytest.raises(ValueError, match=r"^sgd\.update: grads must have the structure of "
                                         r"params, got .* for params of structure"):
        opt.update({"w": 1.0}, opt.init({"w": 1.0, "b": 1.0}), {"w": 1.0, "b": 1.0})
    with pytest.raises(TypeError, match=r"^adam: learning_rate must be a number or a schedule"
                                        r" \(a function of the step count"):
        optim.adam("0.1")
    with pytest.raises(ValueError, match=r"^sgd: nesterov=True needs a momentum"):
        optim.sgd(0.1, nesterov=True)
    with pytest.raises(ValueError, match=r"^scale_by_adam: b1 must be a number in \[0, 1\), "
                                         r"got 1\.0"):
        optim.adam(0.1, b1=1.0)
    with pytest.raises(ValueError, match=r"^clip_by_global_norm: max_norm must be a number in "
                                         r"\(0, inf\), got 0"):
        optim.clip_by_global_norm(0)
    with pytest.raises(TypeError, match=r"^chain: argument 1 is a function, not a "
                                        r"GradientTransformation"):
        optim.chain(optim.sgd(0.1), optim.adam)
    with pytest.raises(ValueError, match=r"^add_decayed_weights: this update needs the "
                                         r"parameters .* call update\(grads, state, params\)"):
        w = optim.adamw(0.1)
        w.update(np.ones(2), w.init(np.ones(2)))
    with pytest.raises(ValueError, match=r"^warmup_cosine_decay_schedule: decay_steps counts "
                                         r"the warm-up too"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 10)
    with pytest.raises(ValueError, match=r"^cosine_decay_schedule: decay_steps must be a "
                                         r"positive integer, got 0"):
        optim.cosine_decay_schedule(0.1, 0)
    with pytest.raises(ValueError, match=r"^chain\.update: the state must be the tuple of 2 "
                                         r"states that init returned, got tuple of length 1"):
        optim.chain(optim.sgd(0.1), optim.sgd(0.1)).update(np.ones(1), (None,))
    assert isinstance(fnp.asarray(optim.global_norm({"a": np.ones(4)})), np.ndarray)


def test_benchmark_floor_computes_what_the_optimizer_computes():
    """benchmarks/optimizers.py times a hand-written NumPy Adam against
    functrans.optimizers.adam: the same numbers."""
    from benchmarks import optimizers as bench

    rng = np.random.default_rng(2)
    params = bench.mlp_params((3, 4, 2), rng)
    grads = [{k: rng.standard_normal(v.shape) for k, v in layer.items()} for layer in params]
    results = []
    for init, step in (bench.numpy_adam(), bench.functrans_adam(jit=True)):
        p, state = params, init(params)
        for _ in range(3):
            p, state = step(p, grads, state)
        results.append(p)
    for a, b in zip(*results):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(lr=st.floats(1e-4, 1.0), b1=st.floats(0.0, 0.999), b2=st.floats(0.0, 0.999),
       eps=st.sampled_from([0.0, 1e-8, 1e-3]), decay=st.floats(0.0, 1.0),
       momentum=st.sampled_from([None, 0.0, 0.5]), steps=st.integers(1, 4))
def test_hyperparameters_against_reference_rules(lr, b1, b2, eps, decay, momentum, steps):
    grads = GRADS[:steps]
    assert_runs_equal(run(optim.adam(lr, b1, b2, eps), grads=grads),
                      run_rule(ref_adam(lr, b1, b2, eps), grads=grads), rtol=1e-10)
    assert_runs_equal(run(optim.rmsprop(lr, decay, eps + 1e-12, momentum=momentum), grads=grads),
                      run_rule(ref_rmsprop(lr, decay, eps + 1e-12, momentum=momentum),
                               grads=grads), rtol=1e-10)
    assert_runs_equal(run(optim.sgd(lr, momentum), grads=grads),
                      run_rule(ref_sgd(lr, momentum), grads=grads), rtol=1e-10)


def test_empty_and_none_leaves():
    params = {"a": np.zeros((0, 3)), "b": None, "c": np.ones(2)}
    for opt in (optim.adam(0.1), optim.rmsprop(0.1, centered=True, momentum=0.5),
                optim.chain(optim.clip_by_global_norm(1.0), optim.adagrad(0.1)),
                optim.adamw(0.1, mask={"a": True, "b": None, "c": False})):
        state = opt.init(params)
        updates, state = opt.update({"a": np.zeros((0, 3)), "b": None, "c": np.ones(2)},
                                    state, params)
        out = optim.apply_updates(params, updates)
        assert out["a"].shape == (0, 3) and out["b"] is None
        assert np.all(out["c"] < 1.0)
