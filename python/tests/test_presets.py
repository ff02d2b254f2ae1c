import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT.parent / "shared" / "reference"


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference not beside the checkout")
def test_presets_are_generated_from_reference():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_presets.py"), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
