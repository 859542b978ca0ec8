"""The CI script runs exactly the README's test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.rst").read_text(encoding="utf-8")
    return re.findall(r"^ {7}(pip install .+)$", text, flags=re.MULTILINE)


def test_readme_has_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert "python -m sklearn_lvgp" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    commands = [line for line in ci_lines if "pytest" in line]
    assert commands == [_readme_commands()[1].strip()]
