"""``python -m sklearn_lvgp``: a short report, and the picture where it says."""

import pytest

from sklearn_lvgp.__main__ import main


def test_demo_reports_and_saves_the_picture(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    picture = tmp_path / "demo.png"
    pca, gplvm = main(["--max-iter", "30", "--plot", str(picture)])
    out = capsys.readouterr().out
    lines = out.splitlines()
    for label in ("data", "model", "fit", "picture"):
        assert any(line.strip().startswith(label) for line in lines), label
    # the budget note follows the fit line it refers to
    fit = next(i for i, line in enumerate(lines) if line.strip().startswith("fit"))
    budget = next(i for i, line in enumerate(lines) if "budget" in line)
    assert budget > fit
    assert "ELBO" not in out
    assert str(picture) in out and picture.stat().st_size > 10_000
    assert 0.0 < pca < 1.0 and 0.0 < gplvm < 1.0


def test_demo_without_a_picture(capsys):
    main(["--max-iter", "5", "--plot", ""])
    assert "picture" not in capsys.readouterr().out
