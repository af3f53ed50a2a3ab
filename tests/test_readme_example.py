"""The README's Python example runs as written (on fake tasks in place of the quickstart's)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from _fakes import make_fake_task, save_fake_task

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    text = README.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- readme-example.*?-->\s*```python\n(.*?)```\s*<!-- /readme-example -->", text, re.S
    )
    assert match, "README lost its marked Python example"
    code = match.group(1)
    for seed in range(3):
        save_fake_task(make_fake_task(seed), tmp_path / "quickstart-out" / "tasks")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    board = namespace["board"]
    assert isinstance(board, pd.DataFrame)
    assert set(board["method"]) == {"forest-spread", "blr"}
    assert (board["n_valid"] == 3).all() and (board["n_failed"] == 0).all()
    assert board["rho_eu_risk"].notna().all()
    assert "forest-spread" in capsys.readouterr().out


def test_readme_example_method_passes_the_contract_battery():
    # The example's class as written (the code before its run_benchmark call). It failed
    # target_units before issue 31: decimal scale factors changed the standardised targets by
    # one rounding unit and the forest broke an exact split tie the other way (mean off 1.85 %).
    from udbench.methods import check_method

    text = README.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- readme-example.*?-->\s*```python\n(.*?)```\s*<!-- /readme-example -->", text, re.S
    )
    assert match, "README lost its marked Python example"
    code = match.group(1).split("\nrun_benchmark(")[0]
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    report = check_method(namespace["ForestSpread"], params={"n_estimators": 10})  # type: ignore[arg-type]
    assert report.ok, [(r.name, r.message) for r in report.failed()]
    assert report.n_failed == 0 and report.n_passed == len(report.results)
