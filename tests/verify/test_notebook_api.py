"""``verify.run``: the command line's results from Python, shown as HTML in a notebook."""

from __future__ import annotations

import re

import pytest

import verify
from conftest import run_smoke


@pytest.fixture(scope="module")
def smoke_run():
    return verify.run(["A1", "B5"], profile="smoke", cache_dir=None, jobs=1, progress=False)


def test_run_gives_the_registry_results(smoke_run):
    assert [r.id for r in smoke_run] == ["A1", "B5"] and len(smoke_run) == 2
    for cid in ("A1", "B5"):
        reference = run_smoke(cid, cache_dir=None)
        assert smoke_run[cid].verdict is reference.verdict
        assert [c.to_json() for c in smoke_run[cid].comparisons] == [c.to_json() for c in reference.comparisons]
    assert smoke_run.verdicts == {r.id: r.verdict.value for r in smoke_run}
    assert smoke_run.exit_status == verify.claim.exit_status(list(smoke_run))
    assert repr(smoke_run).startswith("Run(profile='smoke', seed=0: A1 ")


def test_html_shows_verdicts_judged_rows_and_figures(smoke_run):
    html = smoke_run._repr_html_()
    assert html.startswith('<div class="verify-run">') and html.rstrip().endswith("</div>")
    for r in smoke_run:
        assert f">{r.id}: " in html and r.verdict.value in html  # each claim's section and its verdict
        for c in r.comparisons:
            assert c.outcome in html
    assert len(re.findall(r'<img src="data:image/png;base64,', html)) == sum(len(r.figures) for r in smoke_run) > 0


def test_unknown_claim_is_a_key_error_naming_the_run(smoke_run):
    with pytest.raises(KeyError, match="A1, B5"):
        smoke_run["A9"]
    assert smoke_run["b5"] is smoke_run["B5"] is smoke_run[1]  # any case, as --only; or by position


def test_command_line_refusals_are_errors_of_the_keyword(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="^scheduler needs executor dask"):
        verify.run("A1", scheduler="tcp://127.0.0.1:1", cache_dir=None, progress=False)
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(ValueError, match="^device is .cuda. but CUDA is not available"):
        verify.run("A1", device="cuda", cache_dir=None, progress=False)
    monkeypatch.chdir(tmp_path)
    verify.run("A1", profile="smoke", cache_dir="none", figures=False, progress=False)
    assert not any(tmp_path.iterdir())  # "none", as on the command line: no cache directory


@pytest.mark.parametrize("kwargs, match", [
    (dict(profile="fast"), "^profile must"), (dict(jobs=0), "jobs"), (dict(seed=-1), "seed"),
    (dict(device="tpu"), "device"), (dict(figures="yes"), "^figures must"),
])
def test_bad_options_are_refused_by_name(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        verify.run("A1", cache_dir=None, progress=False, **kwargs)


def test_bad_ids_are_refused():
    with pytest.raises(TypeError, match=r"^ids\[0\] must be a claim id"):
        verify.run([1], progress=False)
    with pytest.raises(TypeError, match=r"^ids must be a claim id"):
        verify.run(1, progress=False)
    with pytest.raises(ValueError, match="A9"):
        verify.run("A9", progress=False)
