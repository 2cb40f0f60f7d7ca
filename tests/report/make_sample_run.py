"""Build sample_results/dspark_st_comparison_20260707-150649 from the seed report.

    python -m tests.report.make_sample_run [SEED_FILE] [OUT_DIR]

Lives in tests/ because it joins two layers the report may not: the shipped plan and the
report renderer. The files it writes are committed; the golden test checks them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from dspark_tui.plans import resolve_plan
from dspark_tui.report.markdown import render_report
from dspark_tui.results import load_run
from tests.conftest import REPO, SEED_REPORT
from tests.report.seed_import import SEED_RUN_NAME, build_seed_run

PLAN = "dspark-st3-vs-st5"


def build(seed: Path, out_dir: Path) -> Path:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    plan, source = resolve_plan(PLAN)
    store = build_seed_run(seed.read_text(encoding="utf-8"), plan, source, out_dir)
    store.write_report(render_report(load_run(store.path), lang="zh"))
    return store.path


def main(argv: list[str]) -> int:
    seed = Path(argv[0]) if argv else SEED_REPORT
    out_dir = Path(argv[1]) if len(argv) > 1 else REPO / "sample_results" / SEED_RUN_NAME
    print(build(seed, out_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
