"""How much a /metrics scrape costs us: parse + sample on the fixture page and on a page 10x larger.

Target: median parse time <= 5 ms for the fixture page (vLLM 0.33.0, spec decoding on). The peer
is prometheus_client's own parser iterating the families without our bookkeeping, measured in the
same run, so the ratio shows what our layer adds.

    python bench/scrape_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, median_seconds, print_table

from dspark_tui.engine.servers.scraper import parse_metrics, sample_between

FIXTURE = REPO / "tests" / "data" / "vllm_0.33.0_metrics_spec3.txt"
TARGET_MS = 5.0


def load_fixture() -> str:
    return FIXTURE.read_text()


def tenfold(page: str) -> str:
    """The same families with ten label sets each (ten engines), as a big multi-engine server shows."""
    lines = []
    for line in page.splitlines():
        if line.startswith("#") or 'engine="0"' not in line:
            lines.append(line)
            continue
        lines.extend(re.sub(r'engine="0"', f'engine="{n}"', line) for n in range(10))
    return "\n".join(lines) + "\n"


def bare_parse(text: str) -> int:
    return sum(len(family.samples) for family in text_string_to_metric_families(text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (for the test suite)")
    args = parser.parse_args()
    repeats = 5 if args.quick else 200

    rows = []
    for label, page in (("fixture", load_fixture()), ("10x label sets", tenfold(load_fixture()))):
        ours = median_seconds(lambda page=page: parse_metrics(page), repeats)
        peer = median_seconds(lambda page=page: bare_parse(page), repeats)
        first = parse_metrics(page, t=0.0)
        second = parse_metrics(page, t=1.0)
        sample = median_seconds(lambda f=first, s=second: sample_between("a", None, f, s, f), repeats)
        rows.append([label, f"{len(page) / 1024:.0f} KiB", ours * 1e3, peer * 1e3, ours / peer,
                     sample * 1e3])
    print(f"median of {repeats} runs; target: fixture parse <= {TARGET_MS} ms")
    print_table(["page", "size", "ours ms", "bare parser ms", "ours/bare", "sample ms"], rows)
    fixture_ms = rows[0][2]
    verdict = "met" if fixture_ms <= TARGET_MS else "MISSED"
    print(f"fixture page: {fixture_ms:.2f} ms per scrape — target {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
