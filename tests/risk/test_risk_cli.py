"""``udbench risk decompose`` writes the same numbers as the Python API."""

from __future__ import annotations

import numpy as np
import pandas as pd

from udbench.cli import main
from udbench.risk import crps_decomposition, squared_loss_decomposition_gaussian


def test_cli_draw_based_crps_matches_python(tmp_path, capsys):
    rng = np.random.default_rng(0)
    arrays = {
        "draws": rng.normal(size=(50, 4)),
        "noise_var": np.full(4, 0.3),
        "pred_mean": np.zeros(4),
        "pred_var": np.ones(4),
    }
    np.savez(tmp_path / "in.npz", **arrays)
    out = tmp_path / "terms.csv"
    code = main(
        ["risk", "decompose", str(tmp_path / "in.npz"), "--loss", "crps", "--out", str(out)]
    )
    assert code == 0
    frame = pd.read_csv(out)
    ref = crps_decomposition(**arrays)
    np.testing.assert_allclose(frame["generalized_variance"], ref.generalized_variance, rtol=1e-12)
    np.testing.assert_allclose(frame["total"], ref.total, rtol=1e-12)
    assert "crps decomposition (draws)" in capsys.readouterr().out


def test_cli_closed_form_and_missing_array(tmp_path, capsys):
    arrays = {"post_mean": [0.0, 1.0], "post_var": [1.0, 2.0], "noise_var": [0.5, 0.5]}
    np.savez(tmp_path / "bad.npz", **arrays)
    assert main(["risk", "decompose", str(tmp_path / "bad.npz")]) == 2
    assert "'arrays'" in capsys.readouterr().err
    np.savez(tmp_path / "ok.npz", prediction=[1.0, 1.0], **arrays)
    out = tmp_path / "terms.parquet"
    assert main(["risk", "decompose", str(tmp_path / "ok.npz"), "--out", str(out)]) == 0
    ref = squared_loss_decomposition_gaussian(**arrays, prediction=[1.0, 1.0])
    np.testing.assert_allclose(pd.read_parquet(out)["total"], ref.total)
