"""``LeanTreeRegressor``: NGBoost's base learner without scikit-learn's per-call validation,
the same trees bit for bit; other input takes scikit-learn's checked path."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from _ml_toy import assert_patch_keeps_bits
from sklearn.base import clone
from sklearn.tree import DecisionTreeRegressor

from udbench.methods import _ngboost, make_method
from udbench.methods._ngboost import LeanTreeRegressor


@pytest.mark.parametrize(
    "spec",
    [
        "ngboost-bag:n_regressors=2,n_estimators=40,max_depth=3",
        "ngboost-nig:n_estimators=40,max_depth=3",
    ],
)
def test_ngboost_methods_give_the_stock_trees_results_bit_for_bit(spec, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 4))  # the default minibatch_frac and col_sample (< 1) apply
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=200)
    Xe = rng.uniform(size=(80, 4))
    stock = lambda: DecisionTreeRegressor  # noqa: E731
    assert_patch_keeps_bits(monkeypatch, spec, _ngboost, "lean_tree_class", stock, X, y, Xe)


def test_lean_tree_is_the_stock_tree_on_finite_input_and_checked_otherwise() -> None:
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(120, 3)), rng.normal(size=120)
    Xe = rng.normal(size=(30, 3))
    lean = LeanTreeRegressor(max_depth=4, random_state=3).fit(X, y)
    stock = DecisionTreeRegressor(max_depth=4, random_state=3).fit(X, y)
    np.testing.assert_array_equal(lean.predict(Xe), stock.predict(Xe))
    np.testing.assert_array_equal(lean.tree_.threshold, stock.tree_.threshold)
    # a NaN target is refused with scikit-learn's own error
    bad = y.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="Input y contains NaN"):
        LeanTreeRegressor(max_depth=2).fit(X, bad)
    # NaN inputs: scikit-learn's missing-value handling, as the stock tree
    Xn = X.copy()
    Xn[::7, 0] = np.nan
    lean_n = LeanTreeRegressor(max_depth=4, random_state=3).fit(Xn, y)
    stock_n = DecisionTreeRegressor(max_depth=4, random_state=3).fit(Xn, y)
    np.testing.assert_array_equal(lean_n.predict(Xn), stock_n.predict(Xn))
    with pytest.raises(ValueError, match="features"):  # the feature count is still checked
        lean.predict(Xe[:, :2])


def test_lean_tree_clones_unfitted_with_its_parameters_and_pickles() -> None:
    tree = LeanTreeRegressor(max_depth=5, random_state=7, min_samples_leaf=2)
    tree.fit(np.arange(20.0).reshape(10, 2), np.arange(10.0))
    copy = clone(tree)
    assert type(copy) is LeanTreeRegressor and copy.get_params() == tree.get_params()
    assert not hasattr(copy, "tree_")
    back = pickle.loads(pickle.dumps(tree))
    np.testing.assert_array_equal(back.predict([[3.0, 4.0]]), tree.predict([[3.0, 4.0]]))


def test_ngboost_cat_bag_gives_the_stock_trees_results_bit_for_bit(monkeypatch) -> None:
    from udbench.methods import ngboost_cat_bag
    from udbench.methods.classifiers import make_classifier

    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=150) > 0).astype(int) + (X[:, 1] > 1).astype(int)
    Xe = rng.normal(size=(40, 3))

    def fitted():
        method = make_classifier("ngboost-cat-bag", smoke=True, n_classifiers=2)
        return method.fit(X, y, n_classes=3).predict(Xe)

    lean = fitted()
    monkeypatch.setattr(ngboost_cat_bag, "lean_tree_class", lambda: DecisionTreeRegressor)
    stock = fitted()
    for field in ("probs", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(lean, field), getattr(stock, field))


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::PendingDeprecationWarning")
def test_lean_tree_refuses_what_the_stock_tree_refuses() -> None:
    """Input and parameters the checked path refuses are refused the same way (a review
    found an empty minibatch hanging NGBoost's line search, and float64 values beyond
    float32's range passing silently)."""
    from sklearn.utils._param_validation import InvalidParameterError

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(30, 2)), rng.normal(size=30)
    cases = {
        "no rows": (X[:0], y[:0]),
        "no columns": (X[:, :0], y),
        "beyond float32": (X * 1e300, y),
    }
    for name, (Xb, yb) in cases.items():
        with pytest.raises(ValueError) as stock:
            DecisionTreeRegressor(max_depth=2).fit(Xb, yb)
        with pytest.raises(ValueError) as lean:
            LeanTreeRegressor(max_depth=2).fit(Xb, yb)
        theirs = str(stock.value).replace("DecisionTreeRegressor", "LeanTreeRegressor")
        assert str(lean.value) == theirs, name
    fitted = LeanTreeRegressor(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="too large for dtype"):
        fitted.predict(X * 1e300)
    # check_input=False: the caller vouches for float32, float64 is refused as by the stock tree
    # (a seeded split search: with random_state=None even two stock fits differ in the last
    # bit of a leaf, the features being visited in another order)
    stock_fit = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    lean_fit = LeanTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    for tree in (stock_fit, lean_fit):
        with pytest.raises(ValueError, match=r"X\.dtype should be np\.float32, got float64"):
            tree.predict(X, check_input=False)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(
        lean_fit.predict(X32, check_input=False), stock_fit.predict(X32, check_input=False)
    )
    for bad in ({"max_depth": 0}, {"min_samples_leaf": 0}, {"criterion": "bogus"}):
        with pytest.raises(InvalidParameterError):
            LeanTreeRegressor(**bad).fit(X, y)
    with pytest.raises(TypeError):  # np.matrix takes the checked path, as the stock tree's
        LeanTreeRegressor(max_depth=2).fit(np.asmatrix(X), y)
    # the empty minibatch ends NGBoost's fit with scikit-learn's error instead of hanging
    spec = "ngboost-bag:n_regressors=2,n_estimators=5,max_depth=3,minibatch_frac=0.001"
    with pytest.raises(ValueError, match="0 sample"):
        make_method(spec).fit(rng.normal(size=(200, 2)), rng.normal(size=200))
