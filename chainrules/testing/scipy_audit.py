"""The SciPy audit: every public Python-level function (not a ufunc) of
``scipy.special``, ``scipy.linalg``, ``scipy.signal``, ``scipy.integrate``,
``scipy.fft``, ``scipy.optimize``, ``scipy.spatial.distance``,
``scipy.interpolate``, ``scipy.sparse`` and ``scipy.sparse.linalg``, and every
public method of the ``scipy.stats`` distributions that
``chainrules.scipy.stats`` covers, either

* has a twin (``chainrules.scipy.<module>`` has it under its SciPy name, or
  under the name of the function it is an alias of),
* is reached through the rule registry (it is, or wraps, a registered
  operation or decomposition),
* works on traced values as it is (``AS_IS``: its body only calls ufuncs
  that have rules; ``tests/testing/test_scipy_audit.py`` differentiates each),
* or is listed in ``JUSTIFIED`` with the reason it is not covered.

``tests/testing/test_scipy_audit.py`` fails for a function in none of these;
``docs/coverage.md`` shows the table. SciPy's ufuncs have their own section
there (``scipy.special ufuncs``).
"""

import importlib
import inspect

import numpy as np

__all__ = ["MODULES", "AS_IS", "JUSTIFIED", "STATS_JUSTIFIED", "audit_rows", "uncovered"]

#: SciPy module -> the module of its twins
MODULES = {
    "scipy.special": "chainrules.scipy.special",
    "scipy.linalg": "chainrules.scipy.linalg",
    "scipy.signal": "chainrules.scipy.signal",
    "scipy.integrate": "chainrules.scipy.integrate",
    "scipy.optimize": "chainrules.scipy.optimize",
    "scipy.spatial.distance": "chainrules.scipy.spatial.distance",
    "scipy.fft": "chainrules.scipy.fft",
    "scipy.interpolate": "chainrules.scipy.interpolate",
    "scipy.sparse": "chainrules.scipy.sparse",
    "scipy.sparse.linalg": "chainrules.scipy.sparse.linalg",
}

#: functions that trace as they are -> why
AS_IS = {
    "scipy.special.jvp": "a sum of jv values (jv has a rule)",
    "scipy.special.yvp": "a sum of yv values (yv has a rule)",
    "scipy.special.ivp": "a sum of iv values (iv has a rule)",
    "scipy.special.kvp": "a sum of kv values (kv has a rule)",
    "scipy.special.h1vp": "a sum of hankel1 values (hankel1 has a rule)",
    "scipy.special.h2vp": "a sum of hankel2 values (hankel2 has a rule)",
    "scipy.special.zeta": "zeta(x, q) calls the Hurwitz zeta ufunc, differentiable in q "
                          "(the one-argument form calls _riemann_zeta, which has no rule)",
    "scipy.special.assoc_laguerre": "calls eval_genlaguerre (it has a rule)",
    "scipy.signal.gausspulse": "exp and cos of the traced time points",
    "scipy.integrate.fixed_quad": "a weighted sum of the integrand at Gauss nodes: traced "
                                  "limits and integrands closing over traced values work",
}

_NO_TWIN_YET = "no twin yet"

# reason -> "module: names"; one line per reason
_CATEGORIES = {
    "scipy.special": {
        "older SciPy's tables of Legendre functions (deprecated, gone from newer SciPy); "
        "the assoc_legendre_p / legendre_p families replace them": "clpmn lpmn lpn",
        "zeros of special functions, and Gauss quadrature nodes and weights of "
        "integer order: functions of integer counts and orders only": (
            "ai_zeros bi_zeros bei_zeros beip_zeros ber_zeros berp_zeros kei_zeros "
            "keip_zeros ker_zeros kerp_zeros kelvin_zeros erf_zeros fresnel_zeros "
            "fresnelc_zeros fresnels_zeros jn_zeros jnp_zeros jnjnp_zeros jnyn_zeros "
            "yn_zeros ynp_zeros y0_zeros y1_zeros y1p_zeros roots_chebyc roots_chebys "
            "roots_chebyt roots_chebyu roots_hermite roots_hermitenorm roots_laguerre "
            "roots_legendre roots_sh_chebyt roots_sh_chebyu roots_sh_legendre c_roots "
            "s_roots t_roots u_roots h_roots he_roots l_roots p_roots ps_roots ts_roots "
            "us_roots"),
        "Gauss quadrature nodes and weights with shape parameters (eigenvalues of a "
        "Jacobi matrix): no twin": (
            "roots_gegenbauer roots_genlaguerre roots_jacobi roots_sh_jacobi cg_roots "
            "la_roots j_roots js_roots"),
        "coefficients of an orthogonal polynomial of integer degree (np.poly1d); the "
        "eval_* ufuncs evaluate the polynomials and have rules": (
            "chebyc chebys chebyt chebyu hermite hermitenorm laguerre legendre sh_chebyt "
            "sh_chebyu sh_legendre gegenbauer genlaguerre jacobi sh_jacobi"),
        "combinatorics of integer arguments; for real arguments the binom and gamma "
        "ufuncs have rules": (
            "comb perm factorial factorial2 factorialk stirling2 bernoulli euler"),
        "values for all orders up to n, computed on scalars: no twin": (
            "lqmn lqn pbdn_seq pbdv_seq pbvv_seq riccati_jn riccati_yn lmbda obl_cv_seq "
            "pro_cv_seq mathieu_even_coef mathieu_odd_coef"),
        "Legendre and spherical harmonic functions behind a wrapper that converts its "
        "inputs: no twin": (
            "legendre_p legendre_p_all assoc_legendre_p assoc_legendre_p_all "
            "sph_legendre_p sph_legendre_p_all sph_harm_y sph_harm_y_all"),
        "a wrapper that converts its inputs, around private ufuncs without rules: no "
        "twin": "spherical_jn spherical_yn spherical_in spherical_kn",
        "calls the private ufunc _lambertw, which has no rule": "lambertw",
        "ellipsoidal harmonics: private ufuncs without rules": (
            "ellip_harm ellip_harm_2 ellip_normal"),
        _NO_TWIN_YET + " (the periodic sinc; it converts its inputs)": "diric",
        "error-handling configuration (no numeric output)": "geterr seterr",
    },
    "scipy.linalg": {
        "older SciPy's deprecated alias of numpy.kron (which has a rule)": "kron",
        "a NumPy function of the same name has a rule (np.linalg.eig, eigvals, "
        "eigvalsh, svdvals, norm): call it; SciPy's extra arguments have no twin": (
            "eig eigvals eigvalsh svdvals norm"),
        "a structured matrix built from vectors (linear in them; khatri_rao bilinear): "
        "no twin, build it with NumPy indexing on the traced vector": (
            "block_diag circulant companion convolution_matrix fiedler fiedler_companion "
            "hankel leslie toeplitz diagsvd khatri_rao"),
        "a constant matrix of an integer size": (
            "dft hadamard helmert hilbert invhilbert pascal invpascal"),
        "low-level BLAS/LAPACK access (returns routines, not values)": (
            "find_best_blas_type get_blas_funcs get_lapack_funcs"),
        "structure predicates and integer results": "bandwidth ishermitian issymmetric",
        "matrix functions without a twin yet (expm, sqrtm and logm have twins)": (
            "coshm cosm sinhm sinm tanhm tanm signm funm fractional_matrix_power "
            "expm_cond"),
        "decompositions, banded and tridiagonal eigensolvers, subspaces: no twin yet": (
            "cholesky_banded cho_solve_banded eig_banded eigvals_banded eigh_tridiagonal "
            "eigvalsh_tridiagonal hessenberg ldl qz ordqz rq rsf2csf cdf2rdf cossin "
            "matrix_balance null_space orth subspace_angles orthogonal_procrustes pinvh"),
        "updates of a QR factorisation: no twin": "qr_delete qr_insert qr_multiply qr_update",
        "structured and Riccati solvers: no twin yet": (
            "solve_circulant solve_toeplitz matmul_toeplitz solve_continuous_are "
            "solve_discrete_are"),
        "a random sketch of the input: no twin": "clarkson_woodruff_transform",
    },
    "scipy.signal": {
        _NO_TWIN_YET + " (SciPy 1.18's smoother: a banded linear solve)": (
            "whittaker_henderson"),
        "filter and window design from specifications (orders, band edges, ripples), "
        "run on constants: no twin": (
            "bessel butter cheby1 cheby2 ellip iirfilter iirdesign iirnotch iirpeak "
            "iircomb firwin firwin2 firls remez kaiserord kaiser_atten kaiser_beta buttord "
            "cheb1ord cheb2ord ellipord buttap cheb1ap cheb2ap ellipap besselap gammatone "
            "savgol_coeffs minimum_phase band_stop_obj firwin_2d get_window "
            "closest_STFT_dual_window"),
        "conversions between filter representations (roots, partial fractions, pole "
        "placement): no twin": (
            "tf2zpk zpk2tf tf2sos sos2tf sos2zpk zpk2sos tf2ss ss2tf zpk2ss ss2zpk "
            "abcd_normalize normalize bilinear bilinear_zpk lp2lp lp2hp lp2bp lp2bs "
            "lp2lp_zpk lp2hp_zpk lp2bp_zpk lp2bs_zpk cont2discrete residue residuez invres "
            "invresz unique_roots place_poles"),
        "frequency, impulse and step responses of LTI systems: no twin": (
            "freqz freqz_sos sosfreqz freqz_zpk freqs freqs_zpk group_delay bode dbode "
            "freqresp dfreqresp impulse dimpulse step dstep lsim dlsim findfreqs"),
        "filters and transforms linear in the signal: no twin yet (convolve, correlate, "
        "fftconvolve and lfilter have twins)": (
            "filtfilt sosfilt sosfiltfilt lfilter_zi lfiltic sosfilt_zi decimate detrend "
            "hilbert hilbert2 resample resample_poly upfirdn savgol_filter symiirorder1 "
            "symiirorder2 cspline1d cspline1d_eval cspline2d qspline1d qspline1d_eval "
            "qspline2d spline_filter sepfir2d convolve2d correlate2d oaconvolve czt "
            "czt_points zoom_fft"),
        "nonlinear filters (order statistics, local variance, envelopes, polynomial "
        "division): no twin": "medfilt medfilt2d order_filter wiener envelope deconvolve",
        "spectral analysis: no twin": (
            "periodogram welch csd coherence spectrogram stft istft lombscargle "
            "vectorstrength"),
        "peaks and extrema: integer indices or piecewise-constant results": (
            "find_peaks find_peaks_cwt argrelextrema argrelmax argrelmin peak_prominences "
            "peak_widths"),
        "waveforms that convert their inputs: no twin": "chirp sawtooth square sweep_poly",
        "constant sequences of an integer size": "unit_impulse max_len_seq",
        "predicates, method choices and lags (no numeric derivative)": (
            "check_COLA check_NOLA choose_conv_method correlation_lags"),
        "the B-spline of order n at x: no twin yet": "gauss_spline",
    },
    "scipy.integrate": {
        "integrates a Python callable adaptively (its error control converts the "
        "integrand's values): no twin (quad, quad_vec and dblquad have twins)": (
            "tplquad nquad cubature tanhsinh nsum qmc_quad"),
        "nodes and weights of an integer order": "newton_cotes lebedev_rule",
        _NO_TWIN_YET + " (trapezoid, simpson and cumulative_trapezoid have twins)": (
            "romb cumulative_simpson"),
        "boundary value problems: no twin (odeint and solve_ivp have twins)": "solve_bvp",
    },
    "scipy.optimize": {
        "iterative solvers of a Python callable: no twin (root, minimize, least_squares, "
        "curve_fit and the root finders have twins, by the implicit function theorem)": (
            "anderson basinhopping bracket brent broyden1 broyden2 brute diagbroyden "
            "differential_evolution direct dual_annealing excitingmixing fmin fmin_bfgs "
            "fmin_cg fmin_cobyla fmin_l_bfgs_b fmin_ncg fmin_powell fmin_slsqp fmin_tnc "
            "fminbound golden leastsq line_search linearmixing minimize_scalar newton_krylov "
            "shgo"),
        "linear, quadratic and combinatorial programs (piecewise solutions): no twin": (
            "linprog milp linear_sum_assignment quadratic_assignment lsq_linear nnls "
            "isotonic_regression"),
        "finite-difference tools (chainrules.grad gives the exact gradient)": (
            "approx_fprime check_grad"),
        "documentation and printing": "show_options linprog_verbose_callback",
    },
    "scipy.spatial.distance": {
        "boolean dissimilarities (piecewise constant in the points)": (
            "dice hamming jaccard rogerstanimoto russellrao sokalsneath yule kulczynski1 "
            "sokalmichener"),
        "a max-min over pairs of points, in random order: no twin": "directed_hausdorff",
        _NO_TWIN_YET + " (the rel_entr ufunc it is made of has a rule)": "jensenshannon",
        "validation and counting (boolean or integer results)": (
            "is_valid_dm is_valid_y num_obs_dm num_obs_y"),
    },
    "scipy.interpolate": {
        "smoothing-spline fits whose knots FITPACK places from the data (adaptively, "
        "for a smoothing condition): no twin; make_lsq_spline (fixed knots) and "
        "make_smoothing_spline (given lam) have twins": (
            "splrep splprep make_splrep make_splprep bisplrep generate_knots"),
        "roots of a spline: no twin (differentiate them by the implicit function "
        "theorem)": "sproot",
        "returns np.poly1d objects, which convert their coefficients: no twin": (
            "lagrange pade approximate_taylor_polynomial"),
    },
    "scipy.sparse": {
        "builds or rearranges a SciPy sparse matrix of plain values: build it plain, then "
        "make a twin with traced values, csr_array((data, A.indices, A.indptr)); "
        + _NO_TWIN_YET: (
            "block_array block_diag bmat diags diags_array eye eye_array identity kron "
            "kronsum spdiags hstack vstack tril triu expand_dims permute_dims swapaxes "
            "matrix_transpose find"),
        "random sparse matrices: no derivative": "rand random random_array",
        "type checks, index dtypes and files: nothing to differentiate": (
            "get_index_dtype isspmatrix isspmatrix_bsr isspmatrix_coo isspmatrix_csc "
            "isspmatrix_csr isspmatrix_dia isspmatrix_dok isspmatrix_lil load_npz save_npz "
            "safely_cast_index_arrays"),
    },
    "scipy.sparse.linalg": {
        _NO_TWIN_YET + " (Krylov solvers: cg, gmres, minres and bicgstab have twins, and "
        "the same exact-solution derivative applies)": (
            "bicg cgs gcrotmk lgmres qmr tfqmr lsmr lsqr"),
        _NO_TWIN_YET + " (sparse results or approximate factors; spsolve and splu have "
        "twins)": "spsolve_triangular spilu inv expm matrix_power",
        _NO_TWIN_YET + " (partial spectra by ARPACK or LOBPCG)": "eigs eigsh svds lobpcg",
        _NO_TWIN_YET + " (norms and their estimates; toarray then np.linalg.norm)": (
            "norm onenormest"),
        _NO_TWIN_YET + " (expm_multiply has a twin)": "funm_multiply_krylov",
        "structure queries and solver configuration: nothing to differentiate": (
            "is_sptriangular spbandwidth use_solver"),
    },
    "scipy.fft": {
        "no array input: sample frequencies from a length and a spacing": "fftfreq rfftfreq",
        "configuration of fht: its low-ringing offset, from scalar parameters: no twin": (
            "fhtoffset"),
        "configuration: backends, worker threads, fast transform lengths": (
            "get_workers set_workers register_backend set_backend set_global_backend "
            "skip_backend next_fast_len prev_fast_len"),
    },
}

#: "module.function" -> the reason it is not covered
JUSTIFIED = {f"{mod}.{name}": reason for mod, table in _CATEGORIES.items()
             for reason, names in table.items() for name in names.split()}


def _scipy_version():
    try:
        import scipy
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return (0, 0)
    return tuple(int(p) for p in scipy.__version__.split(".")[:2] if p.isdigit())


# SciPy 1.18's fixed_quad converts its inputs with np.asarray (earlier
# releases compute with NumPy calls on them, which trace)
if _scipy_version() >= (1, 18):
    AS_IS.pop("scipy.integrate.fixed_quad", None)
    JUSTIFIED["scipy.integrate.fixed_quad"] = (
        "no twin yet: SciPy 1.18's converts its inputs with np.asarray (earlier releases "
        "trace as they are)")

#: a method of the covered scipy.stats distributions -> the reason it has no twin
STATS_JUSTIFIED = {
    "ppf": "quantile function: " + _NO_TWIN_YET,
    "isf": "quantile function: " + _NO_TWIN_YET,
    "mean": "moments and summaries: " + _NO_TWIN_YET,
    "var": "moments and summaries: " + _NO_TWIN_YET,
    "std": "moments and summaries: " + _NO_TWIN_YET,
    "median": "moments and summaries: " + _NO_TWIN_YET,
    "moment": "moments and summaries: " + _NO_TWIN_YET,
    "stats": "moments and summaries: " + _NO_TWIN_YET,
    "interval": "moments and summaries: " + _NO_TWIN_YET,
    "cov": "moments and summaries: " + _NO_TWIN_YET,
    "support": "the support's bounds (loc + scale * a, loc + scale * b): " + _NO_TWIN_YET,
    "entropy": "a sum over the support without a closed form: no twin",
    "expect": "the expectation of a Python callable, integrated or summed numerically: "
              "no twin",
    "fit": "parameter fitting by an optimizer: no twin",
    "fit_loc_scale": "parameter fitting from moments: no twin",
    "nnlf": "the negative log-likelihood: -np.sum(dist.logpdf(x, ...)) with the twin",
    "freeze": "call the twin with the parameters, dist(...), which freezes it",
    "generic_moment": "SciPy's vectorised helper of moment",
    "vecentropy": "SciPy's vectorised helper of entropy",
    "cdf": "a multivariate integral computed by quasi-Monte Carlo: no twin",
    "logcdf": "a multivariate integral computed by quasi-Monte Carlo: no twin",
    "marginal": _NO_TWIN_YET,
}


def _public_functions(mod):
    """(name, function) for the public, Python-level functions of ``mod``:
    not classes, modules or ufuncs (SciPy's array-API wrappers of ufuncs are
    ufuncs here)."""
    from chainrules.rule import dispatch_target

    names = getattr(mod, "__all__", None) or dir(mod)
    for name in sorted(set(names)):
        f = getattr(mod, name, None)
        if name.startswith("_") or f is None or not callable(f):
            continue
        if inspect.isclass(f) or inspect.ismodule(f):
            continue
        if isinstance(dispatch_target(f), np.ufunc):
            continue
        yield name, f


def _twin_names(twin_module):
    try:
        mod = importlib.import_module(twin_module)
    except ImportError:  # pragma: no cover - SciPy is an optional extra
        return set()
    return set(getattr(mod, "__all__", ()))


def _status(full, name, f, scipy_mod, twins, ops):
    from chainrules.rule import dispatch_target

    canonical = getattr(f, "__name__", name)
    if name in twins or (canonical in twins and getattr(scipy_mod, canonical, None) is f):
        return "twin"
    if dispatch_target(f) in ops:
        return "rule"
    if full in AS_IS:
        return "as is"
    if full in JUSTIFIED:
        return "justified"
    return "uncovered"


def _stats_rows():
    try:
        import scipy.stats as ss

        from chainrules.scipy import stats as cst
    except ImportError:  # pragma: no cover
        return []
    rows = []
    for dist in sorted(cst.__all__):
        ref, twin = getattr(ss, dist), getattr(cst, dist)
        for method in sorted(dir(ref)):
            if method.startswith("_"):
                continue
            attr = getattr(ref, method, None)
            if attr is None or not callable(attr) or inspect.isclass(attr):
                continue
            status = ("twin" if hasattr(twin, method) else
                      "justified" if method in STATS_JUSTIFIED else "uncovered")
            rows.append(("scipy.stats", f"{dist}.{method}", status))
    return rows


def audit_rows():
    """(module, name, status) for every audited function: status is "twin",
    "rule", "as is", "justified" or "uncovered"."""
    from chainrules.registry import DECOMPOSITIONS, builtin_ops
    from chainrules.rules import load_all

    load_all()
    ops = set(builtin_ops()) | set(DECOMPOSITIONS)
    rows = []
    for modname, twin_module in MODULES.items():
        try:
            mod = importlib.import_module(modname)
        except ImportError:  # pragma: no cover - SciPy is an optional extra
            continue
        twins = _twin_names(twin_module)
        for name, f in _public_functions(mod):
            full = f"{modname}.{name}"
            rows.append((modname, name, _status(full, name, f, mod, twins, ops)))
    return rows + _stats_rows()


def reason(module, name):
    """The reason a justified function is not covered."""
    if module == "scipy.stats":
        return STATS_JUSTIFIED.get(name.split(".")[-1], "**not covered**")
    return JUSTIFIED.get(f"{module}.{name}", "**not covered**")


def uncovered():
    """Audited functions with no twin, no rule, not traced as they are and
    without a reason."""
    return [f"{m}.{n}" for m, n, s in audit_rows() if s == "uncovered"]
