import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ssdlab import Drive
from ssdlab.synth import TRACES, synthesize, write_fio_iolog


@pytest.mark.parametrize("name", list(TRACES))
def test_lookalike_matches_published_statistics(name):
    st = TRACES[name]
    t, w, off, ln = synthesize(name, fraction=0.01 if name != "destroyer-2013" else 0.001, seed=2)
    assert w.mean() == pytest.approx(st.writes / (st.reads + st.writes), abs=0.01)
    if st.gb_read:
        assert ln[~w].mean() == pytest.approx(st.gb_read * 1e9 / st.reads, rel=0.05)
    for size, share in st.size_mix.items():
        assert (ln == size).mean() == pytest.approx(share, abs=0.02)
    _, groups = np.unique(t, return_counts=True)
    qd_mean = (groups * (groups + 1) / 2).sum() / groups.sum()
    assert qd_mean == pytest.approx(st.mean_qd, rel=0.1)
    assert (off + ln <= 128 * 10**9).all() and (off % 4096 == 0).all()
    # Seeded: the same seed gives the same trace.
    assert all((a == b).all() for a, b in zip(synthesize(name, fraction=0.0001, seed=5), synthesize(name, fraction=0.0001, seed=5)))


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (.ci/run installs it)")
def test_real_fio_replays_a_synthetic_iolog(tmp_path, small_toml):
    log = tmp_path / "heavy.iolog"
    n = write_fio_iolog(log, "heavy-2011", fraction=0.0005, span_bytes=256 * 2**20, seed=3)
    target = tmp_path / "target.dat"
    with open(target, "wb") as f:
        f.truncate(256 * 2**20)
    out = tmp_path / "fio.json"
    p = subprocess.run(["fio", "--name=replay", f"--read_iolog={log}", f"--replay_redirect={target}", "--ioengine=psync",
                        "--replay_no_stall=1", "--output-format=json", f"--output={out}"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    job = json.loads(out.read_text())["jobs"][0]
    assert job["error"] == 0
    assert job["read"]["total_ios"] + job["write"]["total_ios"] == n
    # And ssdlab replays the same file.
    d = Drive.from_toml(small_toml)
    r = d.replay(log)
    assert r.summary["format"] == "fio-iolog" and r.summary["requests"] == n
    assert r.summary["read"]["ios"] == job["read"]["total_ios"]


def test_cli_synth_trace(tmp_path):
    out = tmp_path / "light.iolog"
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "synth-trace", "light-2011", "--out", str(out), "--fraction", "0.001", "--span", "1g"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert out.read_text().startswith("fio version 3 iolog\n")
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "synth-trace", "medium-2012", "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown trace 'medium-2012'" in p.stderr
