"""functrans.numpy.fft against numpy.fft: every function, norm, length,
axis and dtype rule, eagerly, under jit and vmap, and the derivatives
against finite differences."""

import functools

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

F = fnp.fft
RNG = np.random.default_rng(0)
Z = RNG.normal(size=(3, 8)) + 1j * RNG.normal(size=(3, 8))
R = RNG.normal(size=(3, 7))


def _close(actual, expected, rtol=1e-10):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol)


ONE_AXIS = [("fft", Z), ("ifft", Z), ("rfft", R), ("irfft", Z), ("hfft", Z), ("ihfft", R)]


@pytest.mark.parametrize("name, x", ONE_AXIS, ids=[n for n, _ in ONE_AXIS])
@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("n, axis", [(None, -1), (5, -1), (11, 1), (None, 0), (2, 0)])
def test_one_axis_transforms_match_numpy(name, x, norm, n, axis):
    want = getattr(np.fft, name)(x, n, axis, norm)
    _close(getattr(F, name)(x, n, axis, norm), want)
    _close(ft.jit(lambda x: getattr(F, name)(x, n=n, axis=axis, norm=norm))(x), want)


@pytest.mark.parametrize("name, x", [("fftn", Z), ("ifftn", Z), ("rfftn", R), ("irfftn", Z)])
@pytest.mark.parametrize("s, axes", [(None, None), ((4, 6), (0, 1)), ((2, 9), (1, 0)),
                                     (None, (0,)), ((5,), (-1,))])
def test_n_dimensional_transforms_match_numpy(name, x, s, axes):
    want = getattr(np.fft, name)(x, s, axes, "ortho")
    _close(getattr(F, name)(x, s=s, axes=axes, norm="ortho"), want)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64, np.int8, np.bool_])
def test_dtypes_follow_numpy(dtype):
    x = np.arange(6).astype(dtype)
    for name in ["fft", "ifft", "fftn"]:
        _close(getattr(F, name)(x), getattr(np.fft, name)(x), rtol=1e-5)
    if dtype != np.complex64:
        _close(F.rfft(x), np.fft.rfft(x), rtol=1e-5)
        _close(F.ihfft(x), np.fft.ihfft(x), rtol=1e-5)
    _close(F.irfft(x), np.fft.irfft(x), rtol=1e-5)


def test_frequencies_and_shifts():
    for n, d in [(1, 1.0), (7, 0.3), (8, 2.0)]:
        _close(F.fftfreq(n, d), np.fft.fftfreq(n, d))
        _close(F.rfftfreq(n, d=d), np.fft.rfftfreq(n, d))
    _close(F.fftfreq(4, dtype=np.float32, device="cpu"), np.fft.fftfreq(4).astype(np.float32))
    x = np.arange(30.0).reshape(5, 6)
    for axes in [None, 0, (1,), (0, 1)]:
        _close(F.fftshift(x, axes), np.fft.fftshift(x, axes))
        _close(F.ifftshift(x, axes=axes), np.fft.ifftshift(x, axes))
    _close(ft.jit(F.fftshift)(x), np.fft.fftshift(x))


def test_round_trips_and_numpy_dispatch():
    _close(F.ifft(F.fft(Z)), Z)
    _close(F.irfft(F.rfft(R), n=7), R)
    _close(F.ihfft(F.hfft(Z[:, :5], n=8), n=8), np.fft.ihfft(np.fft.hfft(Z[:, :5], n=8), n=8))
    # NumPy's own fft functions trace: they dispatch to functrans.numpy.fft.
    _close(ft.jit(lambda x: np.fft.rfft(x, axis=0))(R), np.fft.rfft(R, axis=0))


def test_vmap():
    _close(ft.vmap(F.fft)(Z), np.fft.fft(Z))
    _close(ft.vmap(F.irfft, in_axes=1, out_axes=1)(Z), np.fft.irfft(Z, axis=0))


def test_derivatives_match_finite_differences():
    a, b = RNG.normal(size=6), RNG.normal(size=6)

    def power(name, **kw):
        return lambda x, y: fnp.abs(getattr(F, name)(x + 1j * y, **kw)) ** 2

    for name in ["fft", "ifft", "hfft"]:
        check_grads(power(name, norm="ortho"), (a, b))
    check_grads(lambda x: fnp.abs(F.rfft(x, n=8)) ** 2, (a,))
    check_grads(lambda x: F.irfft(F.rfft(x) * np.arange(4.0)), (a,))
    check_grads(lambda x: fnp.real(F.fftn(x.reshape(2, 3), s=(3, 3))), (a,))
    check_grads(lambda x: F.ihfft(x).imag, (a,))
    # Parseval: the gradient of the spectrum's energy is 2 n x.
    np.testing.assert_allclose(ft.grad(lambda x: (fnp.abs(F.fft(x)) ** 2).sum())(a), 2 * 6 * a)


def test_errors():
    with pytest.raises(ValueError, match=r"fnp.fft.fft: norm='none'; use 'backward'"):
        F.fft(Z, norm="none")
    with pytest.raises(ValueError, match=r"fnp.fft.rfft: n=0 points; the transform needs n >= 1"):
        F.rfft(R, n=0)
    with pytest.raises(IndexError, match=r"fnp.fft.ifft: axis -1 is out of bounds for a 0-d "
                       r"array; the transform needs an array of rank 1 or more"):
        F.ifft(np.float64(1.0))
    with pytest.raises(TypeError, match=r"fnp.fft.rfft: a real array is needed, got complex128"):
        F.rfft(Z)
    with pytest.raises(ValueError, match=r"fnp.fft.fftn: s=\(2,\) and axes=\(0, 1\) differ"):
        F.fftn(Z, s=(2,), axes=(0, 1))

    def traced_length(x):
        return F.fft(x, n=x.shape[0] + fnp.sum(x).astype(int))

    with pytest.raises(TypeError, match=r"fnp.fft.fft: n must be a Python int"):
        ft.jit(traced_length)(np.ones(3))


@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_a_transform_over_no_axes_gives_its_argument_as_numpy_does(name):
    ours, numpys = getattr(F, name), getattr(np.fft, name)
    for x, kwargs in [(np.array(2.5), {}), (np.array(3), {}), (np.array(1 + 2j), {}),
                      (np.arange(3), {"axes": ()}), (R, {"s": (), "axes": ()})]:
        want = numpys(x, **kwargs)
        for got in (ours(x, **kwargs), ft.jit(functools.partial(ours, **kwargs))(x)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    assert ours(R, axes=()) is R  # NumPy's is its argument itself
    np.testing.assert_array_equal(ft.grad(lambda x: fnp.real(ours(x)))(np.array(2.5)), 1.0)
    np.testing.assert_array_equal(ft.vmap(ours)(R[0]), R[0])  # 0-d members
    with pytest.raises(ValueError, match=rf"fnp.fft.{name}: norm='none'; use 'backward'"):
        ours(np.array(2.5), norm="none")


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "rfftn",
                                  "irfftn"])
def test_transforms_of_a_0d_array_raise_numpys_index_error(name):
    x = np.array(2.5)
    with pytest.raises(IndexError):
        getattr(np.fft, name)(x)
    message = (r"no axes to transform \(the argument has shape \(\)\)" if name.endswith("n")
               else r"axis -1 is out of bounds for a 0-d array")
    for how in (lambda f: f, ft.jit):
        with pytest.raises(IndexError, match=rf"fnp.fft.{name}: {message}"):
            how(getattr(F, name))(x)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.int8])
def test_two_axis_transforms_and_real_results_have_numpys_dtypes(dtype):
    """fft2/ifft2/rfft2/irfft2 are the n-d transforms over the last two axes;
    a real result keeps half precision where NumPy's does (irfft and hfft of
    float16, irfftn of a float16 vector), and not after a complex step."""
    a = (np.arange(8) % 3).astype(dtype)
    b = np.stack([a, 2 * a, a])
    real_b = b.real if b.dtype.kind == "c" else b
    cases = [("irfft", a, {}), ("hfft", a, {}), ("irfftn", a, {}), ("irfftn", b, {}),
             ("irfft2", b, {}), ("fft2", b, {}), ("ifft2", b, {"s": (2, 5)}),
             ("rfft2", real_b, {"axes": (0, 1)})]
    for name, x, kw in cases:
        want = getattr(np.fft, name)(x, **kw)
        for got in (getattr(fnp.fft, name)(x, **kw),
                    ft.jit(lambda v, name=name, kw=kw: getattr(fnp.fft, name)(v, **kw))(x)):
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name, shape", [("fft", (0,)), ("ifft", (0,)), ("rfft", (3, 0)),
                                         ("hfft", (1,)), ("fftn", (0,)), ("rfftn", (2, 0)),
                                         ("fft2", (3, 0)), ("rfft2", (3, 0))])
def test_a_transform_of_no_points_is_refused_as_numpy_refuses_it(name, shape):
    # An empty transformed axis (hfft: one point, which gives 2 (1 - 1) = 0)
    # returned an empty or zero spectrum, eagerly and under jit; NumPy raises.
    x = np.zeros(shape)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        getattr(np.fft, name)(x)
    for how in (lambda f: f, ft.jit):
        with pytest.raises(ValueError, match=r"fnp\.fft\.\w+: the transformed axis gives 0 "
                                             r"points; the transform needs n >= 1 \(pass n=, "
                                             r"or a longer axis\)"):
            how(getattr(F, name))(x)


def test_an_infinity_in_the_input_makes_its_axis_nan_as_the_docstring_says():
    # The DFT's sums meet inf * 0; the module docstring names the difference
    # from pocketfft, which keeps some infinities.
    x = np.array([[1.0, np.inf, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]])
    for how in (lambda f: f, ft.jit):
        with np.errstate(invalid="ignore"):
            got = how(fnp.fft.fft)(x)
        assert np.isnan(got[0]).all()
        np.testing.assert_allclose(got[1], np.fft.fft(x[1]), atol=1e-12)
