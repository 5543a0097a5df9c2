"""What the Python package's tests share: the repository, the CLI, SmolLM2 in $FASA_HOME (a
skip without it, or a failure under FASA_REQUIRE_MODEL=1) and a fixed text."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("FASA_CLI", str(REPO / "build" / "fasa"))
HOME = Path(os.environ.get("FASA_HOME", Path.home() / ".cache" / "fasa"))
SMOLLM2 = HOME / "models" / "smollm2-135m" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = REPO / "tests" / "data" / "text" / "harbour.txt"  # fixed prose: docs edits move no number


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2 loaded by its pulled name, as the docs' examples load it."""
    if not SMOLLM2.exists():
        why = f"no model at {SMOLLM2} (./build/fasa pull smollm2-135m)"
        if os.environ.get("FASA_REQUIRE_MODEL") == "1":
            pytest.fail(why + " and FASA_REQUIRE_MODEL=1")
        pytest.skip(why)
    import fasa

    return fasa.Model("smollm2-135m")
