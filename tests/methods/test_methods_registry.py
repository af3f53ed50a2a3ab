"""Registry, make_method spec parsing, hyperparameter validation, and the contract helpers."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.methods import (
    REGISTRY,
    BaseMethod,
    MethodOutputError,
    NotFittedError,
    Prediction,
    check_hyperparameter,
    get_method_class,
    list_methods,
    make_method,
    parse_method_spec,
)
from udbench.methods import registry as registry_module
from udbench.methods.blr import BLR
from udbench.methods.classifiers import resolve_classifier
from udbench.methods.configs import resolve_methods
from udbench.methods.gp import GP


def test_registry_rows_and_names():
    names = list(REGISTRY)
    first_five = ["blr", "gp", "ngboost-bag", "catboost-ps", "nn-ens"]
    assert [name for name in names if name in first_five] == first_five
    assert all(name == name.lower() and ":" not in name for name in names)
    assert REGISTRY["ngboost-bag"] == "udbench.methods.ngboost_bag:NGBoostBag"
    assert REGISTRY["catboost-ps"] == "udbench.methods.catboost_ps:CatBoostPS"
    assert REGISTRY["nn-ens"] == "udbench.methods.nn_ens:NNEnsemble"
    assert REGISTRY["catboost-kgb"] == "udbench.methods.catboost_kgb:CatBoostKGB"


def test_capabilities_come_from_the_classes():
    # the registry holds only where a class lives; each row describes its class
    for info in list_methods():
        if not info.available:
            continue
        cls = get_method_class(info.name)
        assert cls.name == info.name and info.target == REGISTRY[info.name]
        assert info.source == "udbench"
        assert info.family == cls.family in ("linear", "gp", "trees", "nn")
        assert info.constant_aleatoric is cls.constant_aleatoric
        assert info.epistemic_from == cls.epistemic_from in ("closed_form", "samples")
        assert info.description == cls.description and "(paper " in cls.description
    gp = {i.name: i for i in list_methods()}["gp"]
    assert (gp.family, gp.constant_aleatoric, gp.epistemic_from) == ("gp", True, "closed_form")


def test_unavailable_row_is_listed_not_raised(monkeypatch):
    ghost = {"ghost": "udbench.methods.no_such_module:Ghost"}
    monkeypatch.setattr(registry_module, "REGISTRY", {**REGISTRY, **ghost})
    infos = {i.name: i for i in list_methods()}
    assert infos["ghost"].available is False
    assert "No module named 'udbench.methods.no_such_module'" in infos["ghost"].error
    assert infos["ghost"].family is None and infos["ghost"].description is None
    assert infos["blr"].available and infos["blr"].error is None
    with pytest.raises(UdbenchError, match="method 'ghost' is not available here"):
        get_method_class("ghost")


def test_get_method_class_by_name_and_path():
    assert get_method_class("blr") is BLR
    assert get_method_class(" GP ") is GP
    assert get_method_class("udbench.methods.gp:GP") is GP
    cls = get_method_class("methods_plugin_example:KNNEnsemble")
    assert issubclass(cls, BaseMethod) and cls.name == "knn-ens"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("no-such-method", r"methods: parameter 'name' must be one of \['blr', "),
        ("udbench.methods.gp:NoSuchClass", r"'name' must name a class defined in"),
        ("no_such_pkg.mod:Cls", r"cannot import module 'no_such_pkg.mod'"),
        ("methods_plugin_example:NotAMethod", r"must name a subclass of udbench.methods"),
    ],
)
def test_get_method_class_errors(spec, match):
    with pytest.raises(UdbenchError, match=match):
        get_method_class(spec)


def test_parse_method_spec():
    assert parse_method_spec("nn-ens:n_members=5,lr=0.01") == (
        "nn-ens",
        {"n_members": "5", "lr": "0.01"},
    )
    assert parse_method_spec("gp") == ("gp", {})
    assert parse_method_spec("pkg.mod:Cls") == ("pkg.mod:Cls", {})
    assert parse_method_spec("pkg.mod:Cls:a=1, b = x") == ("pkg.mod:Cls", {"a": "1", "b": "x"})
    with pytest.raises(UdbenchError, match="write overrides as key=value"):
        parse_method_spec("blr:max_iter")
    with pytest.raises(UdbenchError, match="give each hyperparameter once"):
        parse_method_spec("blr:tol=1,tol=2")


def test_make_method_coerces_types():
    m = make_method("blr:max_iter=5,tol=1e-3", random_state=3)
    assert isinstance(m, BLR)
    assert m.max_iter == 5 and type(m.max_iter) is int
    assert m.tol == 1e-3 and type(m.tol) is float
    assert m.random_state == 3
    g = make_method("gp:standardize_X=false,max_iter=7")
    assert g.standardize_X is False and g.max_iter == 7
    k = make_method("methods_plugin_example:KNNEnsemble:n_neighbors=3", n_members=2)
    assert (k.n_neighbors, k.n_members, k.random_state) == (3, 2, 0)
    assert make_method(BLR, tol=0.5).tol == 0.5


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("blr:foo=1", "BLR: 'foo' is not a hyperparameter of 'blr'; no close match. Valid: ['"),
        ("blr:max_iter=0", "BLR: parameter 'max_iter' must be an integer >= 1; got 0"),
        ("blr:max_iter=2.5", "BLR: parameter 'max_iter' must be an integer; got '2.5'"),
        ("blr:tol=abc", "BLR: parameter 'tol' must be a real number; got 'abc'"),
        ("blr:tol=-1", "BLR: parameter 'tol' must be a real number > 0.0; got -1.0"),
        ("gp:standardize_X=maybe", "GP: parameter 'standardize_X' must be true or false"),
        ("gp:init_noise_std=0", "GP: parameter 'init_noise_std' must be a real number > 0.0"),
    ],
)
def test_make_method_errors_name_parameter_and_value(spec, message):
    with pytest.raises(UdbenchError) as info:
        make_method(spec)
    assert str(info.value).startswith(message)


def test_misspelt_hyperparameter_is_named_with_the_closest_valid_one():
    # the message names the misspelt key, not its value ("got '5'"), and suggests a fix
    for make in (make_method, lambda spec: resolve_methods([spec])):
        with pytest.raises(UdbenchError) as info:
            make("gp:max_iters=5")
        text = str(info.value)
        assert text.startswith("GP: 'max_iters' is not a hyperparameter of 'gp'; ")
        assert "did you mean 'max_iter'?" in text and "'5'" not in text
        assert text.endswith("'min_noise_std', 'random_state', 'standardize_X']")
    with pytest.raises(UdbenchError) as info:
        resolve_classifier("gpc-lap:n_restart=1")
    assert str(info.value) == (
        "GPCLaplace: 'n_restart' is not a hyperparameter of 'gpc-lap'; did you mean "
        "'n_restarts_optimizer'? Valid: ['max_train', 'n_restarts_optimizer', 'n_samples', "
        "'random_state']"
    )


def test_fit_validates_hyperparameters_and_random_state():
    X, y = np.random.default_rng(0).uniform(size=(10, 2)), np.arange(10.0)
    with pytest.raises(UdbenchError, match=r"'max_iter' must be an integer >= 1; got -3"):
        BLR(max_iter=-3).fit(X, y)
    with pytest.raises(UdbenchError, match=r"'random_state' must be an integer >= 0"):
        BLR(random_state=-1).fit(X, y)
    with pytest.raises(UdbenchError, match=r"'tol' must be a real number > 0.0; got True"):
        BLR(tol=True).fit(X, y)


def test_check_hyperparameter_rules():
    spec = {"type": "float", "low": 0.0, "high": 1.0, "high_open": True}
    check_hyperparameter("M", "p", 0.0, spec)
    with pytest.raises(UdbenchError, match=r"must be a real number >= 0.0 and < 1.0; got 1.0"):
        check_hyperparameter("M", "p", 1.0, spec)
    with pytest.raises(UdbenchError, match=r"must be a real number"):
        check_hyperparameter("M", "p", float("nan"), spec)
    cat = {"type": "categorical", "choices": ["a", "b"]}
    check_hyperparameter("M", "p", "b", cat)
    with pytest.raises(UdbenchError, match=r"must be one of \['a', 'b'\]; got 'c'"):
        check_hyperparameter("M", "p", "c", cat)
    check_hyperparameter("M", "p", None, {"type": "int", "none_ok": True})
    with pytest.raises(UdbenchError, match=r"must be an integer; got 3.0"):
        check_hyperparameter("M", "p", 3.0, {"type": "int"})


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.zeros((5, 2)), np.zeros(4), r"BLR: parameter 'y' must have shape \(5\); got 'shape"),
        (np.zeros(5), np.zeros(5), r"BLR: parameter 'X' must have ndim in \[2\]; got 'shape"),
        (np.array([[np.nan, 1.0]] * 3), np.zeros(3), r"'X' must contain only finite values"),
        (np.zeros((3, 2)), np.array([0.0, np.inf, 1.0]), r"'y' must contain only finite values"),
        (np.zeros((1, 2)), np.zeros(1), r"'X' must have at least 2 rows; got \(1, 2\)"),
    ],
)
def test_fit_bad_input_errors(X, y, match):
    with pytest.raises(UdbenchError, match=match):
        BLR().fit(X, y)


def test_predict_errors_and_output_checks():
    X = np.random.default_rng(1).uniform(size=(8, 3))
    with pytest.raises(NotFittedError, match="BLR: not fitted; call fit"):
        BLR().predict(X)
    m = BLR().fit(X, X.sum(axis=1))
    with pytest.raises(UdbenchError, match=r"'X' must have 3 columns; got \(8, 2\)"):
        m.predict(X[:, :2])
    with pytest.raises(MethodOutputError, match=r"'epistemic' must be non-negative"):
        Prediction(np.zeros(2), np.ones(2), np.array([0.0, -1.0])).validate(2)


def test_seed_streams_are_derived_per_component():
    a, b = BLR(random_state=1), BLR(random_state=1)
    assert a._seed("member", 0) == b._seed("member", 0)
    assert a._seed("member", 0) != a._seed("member", 1)
    assert a._seed("member", 0) != BLR(random_state=2)._seed("member", 0)
    assert BLR(random_state=None)._seed("x") == BLR(random_state=0)._seed("x")
    assert a._rng("x").standard_normal(3).tobytes() == b._rng("x").standard_normal(3).tobytes()


def test_static_listing_equals_the_imported_classes():
    """``udbench methods`` reads capabilities from source; they must equal the classes'."""
    static = list_methods(static=True)
    imported = list_methods()
    assert [s.name for s in static] == [i.name for i in imported]
    for s, i in zip(static, imported, strict=True):
        assert s == i, (s, i)


def test_static_reader_follows_bases_and_reports_missing_packages(monkeypatch):
    from udbench.methods._static import read_class_statically

    attrs = ("name", "family", "constant_aleatoric", "epistemic_from", "description")
    info = read_class_statically("udbench.methods.gp:GP", attrs)
    assert info is not None and info.attributes["family"] == "gp" and not info.missing_packages
    # not udbench source, or a computed attribute: no static answer (the caller imports)
    assert read_class_statically("json:JSONDecoder", attrs) is None
    # a udbench module that needs a package that is not installed is reported unavailable
    import ast

    from udbench.methods import _static

    source = (
        "import not_an_installed_package_xyz\n"
        "from udbench.methods.gp import GP\n"
        "class Probe(GP):\n    name = 'probe'\n    constant_aleatoric = False\n"
    )
    original = _static._parse

    def parse(module):
        if module == "udbench.methods._probe":
            return ast.parse(source), "probe.py"
        return original(module)

    monkeypatch.setattr(_static, "_parse", parse)
    probe = read_class_statically("udbench.methods._probe:Probe", attrs)
    assert probe is not None
    assert probe.attributes["name"] == "probe" and probe.attributes["family"] == "gp"
    assert probe.attributes["constant_aleatoric"] is False  # own value beats the base's
    assert probe.missing_packages == ("not_an_installed_package_xyz",)


def test_listing_methods_imports_no_heavy_library():
    """What ``udbench methods`` and ``udbench datasets`` load: no JAX, sklearn, pandas, CatBoost."""
    import subprocess
    import sys

    code = (
        "import sys, udbench.cli\n"
        "from udbench.methods.registry import list_methods\n"
        "from udbench.commands.datasets import _list_rows\n"
        "list_methods(static=True); _list_rows(None)\n"
        "heavy = {'jax', 'sklearn', 'pandas', 'catboost', 'ngboost', 'gpjax', 'scipy', "
        "'scoringrules', 'numpyro', 'dask'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
