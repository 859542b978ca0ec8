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
    # the printed accuracies are the returned ones, and the latent space beats PCA's
    # (measured at 30 iterations: 77.9 % against 58.3 %; the fit starts from the PCA scores)
    printed = {line.split()[0]: float(line.split()[1]) / 100 for line in lines
               if line.split()[:1] in (["PCA"], ["UnscentedGPLVM"])}
    assert printed == {"PCA": pytest.approx(pca, abs=5e-4),
                       "UnscentedGPLVM": pytest.approx(gplvm, abs=5e-4)}
    assert gplvm >= pca + 0.1


def test_demo_without_a_picture(capsys):
    main(["--max-iter", "5", "--plot", ""])
    assert "picture" not in capsys.readouterr().out
