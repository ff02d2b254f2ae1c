"""Where a sweep's results go, under its output directory:

    summary/procedure=NAME/part-KEY.parquet        one file per point: a row per outcome
    series/procedure=NAME/table=T/part-KEY.parquet the point's tables (per-second series ...)
    sweep.json                                     the spec, every point's key, state and error
    catalog.duckdb                                 views `summary` and `series` over the Parquet

A point is finished when its summary file exists (written last, by rename), so an
interrupted sweep resumes where it stopped. Summary rows carry the point's key, drive, seed,
variant, every swept value as its own column (units in the names: `spare_pct`,
`nand_program_page_us`) and the procedure's figures; wall time is kept out of them (in
sweep.json), so the same points give identical summaries on any backend.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd

from .spec import Point

META = ("point_key", "drive", "seed", "variant")


def _scalar(v):
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    return v


def flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out |= flatten(v, f"{name}_")
        else:
            out[name] = _scalar(v)
    return out


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Stable column types whatever a point's values: numbers as float64 (ints stay int64
    where every value is one), text as string."""
    for c in df.columns:
        s = df[c]
        if s.dtype == object:
            if all(v is None or (isinstance(v, float) and math.isnan(v)) for v in s):
                df[c] = s.astype("float64")
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) or v is None for v in s):
                df[c] = s.astype("float64")
            elif all(isinstance(v, str) or v is None for v in s):
                df[c] = s.astype("string")
    return df


def _write_atomic(df: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


class Catalog:
    def __init__(self, out: Path):
        self.out = Path(out)

    def summary_path(self, p: Point) -> Path:
        return self.out / "summary" / f"procedure={p.procedure}" / f"part-{p.key}.parquet"

    def done(self, p: Point) -> bool:
        return self.summary_path(p).exists()

    def write(self, p: Point, result: dict) -> None:
        ident = {"point_key": p.key, "drive": p.drive, "seed": p.seed}
        for name, table in result.get("tables", {}).items():
            t = table.copy()
            for i, (k, v) in enumerate((ident | {k: _scalar(v) for k, v in p.axes.items()}).items()):
                t.insert(i, k, v)
            path = self.out / "series" / f"procedure={p.procedure}" / f"table={name}" / f"part-{p.key}.parquet"
            _write_atomic(_typed(t), path)
        rows = [ident | {k: _scalar(v) for k, v in p.axes.items()} | {"variant": r.pop("variant", "")} | r
                for r in (flatten(row) for row in result["rows"])]
        _write_atomic(_typed(pd.DataFrame(rows)), self.summary_path(p))

    def summary(self) -> pd.DataFrame:
        """Every finished point's rows, with the procedure column (from the partition)."""
        frames = []
        root = self.out / "summary"
        if not root.exists():
            return pd.DataFrame()
        for part in sorted(root.glob("procedure=*/part-*.parquet")):
            df = pd.read_parquet(part)
            df.insert(0, "procedure", part.parent.name.split("=", 1)[1])
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def series(self, procedure: str, table: str) -> pd.DataFrame:
        root = self.out / "series" / f"procedure={procedure}" / f"table={table}"
        frames = [pd.read_parquet(p) for p in sorted(root.glob("part-*.parquet"))]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def write_manifest(self, spec: dict, points: list[Point], states: dict) -> None:
        doc = {"spec": spec, "points": [{"key": p.key, "drive": p.drive, "procedure": p.procedure, "seed": p.seed,
                                         "axes": p.axes, **states.get(p.key, {})} for p in points]}
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "sweep.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")

    def write_duckdb(self) -> str | None:
        """catalog.duckdb with views over the Parquet (absolute paths: move the directory and
        rerun `ssdlab sweep report` or the sweep to rebuild it). None if duckdb is missing."""
        try:
            import duckdb
        except ImportError:
            return "duckdb is not installed (pip install 'ssdlab[sweep]'): no catalog.duckdb; the Parquet is there"
        path = self.out / "catalog.duckdb"
        tmp = self.out / "catalog.duckdb.tmp"
        for f in (tmp, Path(str(tmp) + ".wal")):
            if f.exists():
                f.unlink()
        root = self.out.resolve()
        con = duckdb.connect()
        # An older storage version, so the DuckDB command line of any release since 1.2 opens it.
        con.execute(f"ATTACH '{tmp}' AS cat (STORAGE_VERSION 'v1.2.0')")
        if (root / "summary").exists():
            con.execute(f"CREATE VIEW cat.summary AS SELECT * FROM read_parquet('{root}/summary/*/*.parquet', "
                        "hive_partitioning = true, union_by_name = true)")
        if (root / "series").exists():
            con.execute(f"CREATE VIEW cat.series AS SELECT * FROM read_parquet('{root}/series/*/*/*.parquet', "
                        "hive_partitioning = true, union_by_name = true)")
        con.execute("DETACH cat")
        con.close()
        os.replace(tmp, path)
        return None
