"""NBD emulator speed and pacing fidelity. Pacing: fio 4 KiB random reads at QD1, QD4 and QD32
against `ssdlab serve --pace model` (crucial-m500-120, fast-filled) next to what `ssdlab run`
predicts for the same job (target: within 10%), with the server's lateness behind the model and,
at QD1 and QD4, the transport floor: fio's latency against `nbdkit memory`, which answers at
once, so what fio, libnbd and the socket add to any NBD server; `beyond_floor_us` is what is
left of fio's extra time per IO after it. Speed, side by side in one run: fio 4 KiB random writes at QD16 through its nbd
engine against `ssdlab serve --pace none` and against `nbdkit memory` (the baseline: an NBD
server that only copies bytes). Prints both IOPS and their ratio (target: ssdlab >= half of
nbdkit). Never fails on a figure.

    python benches/bench_nbd.py [--drive crucial-m500-120] [--runtime 10] [--span 1g] [--paced-only]
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ssdlab.serve import transport_floor_us


def fio_iops(uri: str, span: str, runtime: int, out: Path) -> float:
    subprocess.run(["fio", "--name=bench", "--ioengine=nbd", f"--uri={uri}", "--rw=randwrite", "--bs=4k",
                    "--iodepth=16", f"--size={span}", f"--runtime={runtime}", "--time_based",
                    "--output-format=json", f"--output={out}"], check=True, capture_output=True)
    text = out.read_text()
    return json.loads(text[text.index("{"):])["jobs"][0]["write"]["iops"]


def fio_randread(sock: Path, qd: int, size: str, runtime: int, out: Path) -> dict:
    """fio's 4 KiB random reads through its nbd engine at `sock`: the job's read section."""
    subprocess.run(["fio", "--name=randread", "--ioengine=nbd", f"--uri=nbd+unix:///?socket={sock}", "--rw=randread",
                    "--bs=4k", f"--iodepth={qd}", f"--size={size}", f"--runtime={runtime}", "--time_based",
                    "--ramp_time=1", "--output-format=json", f"--output={out}"], check=True, capture_output=True)
    text = out.read_text()
    return json.loads(text[text.index("{"):])["jobs"][0]["read"]


def paced_fidelity(tmp: Path, drive: str = "crucial-m500-120", runtime: int = 10, qd: int = 32,
                   transport_us: float = 0.0) -> dict:
    import ssdlab
    tag = f"{qd}-{transport_us:g}"
    sock = tmp / f"p{tag}.sock"
    stats = tmp / f"p{tag}.json"
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", drive, "--socket", str(sock),
                             "--precondition", "fast-fill", "--quiet", "--stats-json", str(stats),
                             "--transport-us", str(transport_us)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(sock, proc)
        measured = fio_randread(sock, qd, "8g", runtime, tmp / f"paced{tag}.json")["iops"]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    late = json.loads(stats.read_text())
    d = ssdlab.Drive.preset(drive)
    d.precondition("fast-fill")
    job = ssdlab.Job(rw="randread", bs="4k", iodepth=qd, size="8g", runtime_s=runtime, time_based=True)
    predicted = d.run(job).summary["read"]["iops"]
    return {f"qd{qd}_paced_fio_iops": round(measured), f"qd{qd}_ssdlab_run_iops": round(predicted),
            f"qd{qd}_error_pct": round(100 * (measured - predicted) / predicted, 2),
            f"qd{qd}_late_p50_us": round(late["late_p50_us"], 1), f"qd{qd}_late_p99_us": round(late["late_p99_us"], 1)}


def with_floor(paced: dict, tmp: Path, runtime: int) -> dict:
    """Add, at QD1 and QD4, the transport floor and what the emulator adds beyond it (fio's
    per-IO time at QD `qd` is qd / IOPS; the model's is qd / (ssdlab run IOPS)); then fio
    against the server started with `--transport-us` set to that floor."""
    if shutil.which("nbdkit") is None:
        return paced
    for qd in (1, 4):
        floor = transport_floor_us(qd, runtime)  # what `ssdlab serve --transport-us auto` measures (at QD1)
        comp = paced_fidelity(tmp, qd=qd, runtime=runtime, transport_us=round(floor, 1))
        paced[f"qd{qd}_fio_iops_transport_compensated"] = comp[f"qd{qd}_paced_fio_iops"]
        paced[f"qd{qd}_error_pct_transport_compensated"] = comp[f"qd{qd}_error_pct"]
        fio_us = qd * 1e6 / paced[f"qd{qd}_paced_fio_iops"]
        model_us = qd * 1e6 / paced[f"qd{qd}_ssdlab_run_iops"]
        paced[f"qd{qd}_transport_floor_us"] = round(floor, 1)
        paced[f"qd{qd}_fio_minus_model_us"] = round(fio_us - model_us, 1)
        paced[f"qd{qd}_beyond_floor_us"] = round(fio_us - model_us - floor, 1)
    return paced


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while not path.exists():
        if proc.poll() is not None or time.time() > deadline:
            sys.exit(f"server did not start: {proc.args}")
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--drive", default="crucial-m500-120")
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--span", default="1g")
    ap.add_argument("--paced-only", action="store_true", help="only the pacing figures (QD1, QD4, QD32)")
    args = ap.parse_args()
    if args.paced_only:
        with tempfile.TemporaryDirectory() as tmp:
            paced = {}
            for qd in (1, 4, 32):
                paced.update(paced_fidelity(Path(tmp), qd=qd, runtime=args.runtime))
            paced = with_floor(paced, Path(tmp), args.runtime)
        print(json.dumps(paced, indent=2))
        return
    for tool in ("fio", "nbdkit"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not installed (apt-get install fio nbdkit)")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, cmd in (
            ("nbdkit-memory", ["nbdkit", "--foreground", "-U", str(tmp / "k.sock"), "memory", args.span]),
            ("ssdlab-pace-none", [sys.executable, "-m", "ssdlab.cli", "serve", "--drive", args.drive,
                                  "--socket", str(tmp / "s.sock"), "--pace", "none", "--quiet",
                                  "--stats-json", str(tmp / "stats.json")]),
        ):
            sock = tmp / ("k.sock" if name.startswith("nbdkit") else "s.sock")
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_for(sock, proc)
                results[name] = fio_iops(f"nbd+unix:///?socket={sock}", args.span, args.runtime, tmp / f"{name}.json")
            finally:
                proc.terminate()
                proc.wait(timeout=60)
        stats = json.loads((tmp / "stats.json").read_text())
        paced = {}
        for qd in (1, 4, 32):
            paced.update(paced_fidelity(tmp, qd=qd, runtime=args.runtime))
        paced = with_floor(paced, tmp, args.runtime)
    print(json.dumps({
        **paced,
        "workload": f"fio nbd engine, 4 KiB randwrite, QD16, {args.span} span, {args.runtime} s",
        "nbdkit_memory_iops": round(results["nbdkit-memory"]),
        "ssdlab_pace_none_iops": round(results["ssdlab-pace-none"]),
        "ratio": round(results["ssdlab-pace-none"] / results["nbdkit-memory"], 3),
        "ssdlab_drive": args.drive,
        "ssdlab_simulated_s": round(stats["simulated_s"], 2),
        "ssdlab_write_amplification": round(stats["write_amplification"], 3),
    }, indent=2))


if __name__ == "__main__":
    main()
