"""The paper's method list is derived from the method classes' ``paper_index`` (issue 33)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from udbench._validation import UdbenchError
from udbench.methods import registry
from udbench.methods.registry import REGISTRY, get_method_class, paper_methods

#: SPEC §8's 19 methods, in its order (written out by hand, as the SPEC lists them).
SPEC_METHODS = (
    "blr",
    "gp",
    "vlgp",
    "dkl",
    "sngp-het",
    "ngboost-nig",
    "ngboost-bag",
    "catboost-ps",
    "catboost-kgb",
    "nn-bag",
    "nn-ens",
    "nn-drop",
    "nn-edl",
    "nn-deup",
    "nn-lap",
    "nn-lap-sn",
    "nn-fsp",
    "nn-fsp-sn",
    "nn-swag",
)


def test_paper_methods_are_the_specs_nineteen_in_order() -> None:
    assert paper_methods() == SPEC_METHODS
    from udbench.tuning.plan import PAPER_METHODS

    assert PAPER_METHODS == SPEC_METHODS


def test_the_flags_read_from_source_are_the_classes() -> None:
    for name in REGISTRY:
        index = get_method_class(name).paper_index
        assert (index is not None) == (name in SPEC_METHODS), name
        if index is not None:
            assert SPEC_METHODS[index - 1] == name


def test_two_classes_with_one_index_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    paper_methods.cache_clear()
    monkeypatch.setattr(registry, "REGISTRY", {"blr": REGISTRY["blr"], "blr-twin": REGISTRY["blr"]})
    try:
        with pytest.raises(UdbenchError, match=r"paper_index' must be unique.*'blr'"):
            paper_methods()
    finally:
        paper_methods.cache_clear()


def test_deriving_the_list_imports_no_method_module() -> None:
    code = (
        "import sys\n"
        "from udbench.methods.registry import paper_methods\n"
        "assert len(paper_methods()) == 19\n"
        "heavy = ('sklearn', 'jax', 'catboost', 'ngboost', 'udbench.methods.gp')\n"
        "print([m for m in sys.modules if m.startswith(heavy)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
