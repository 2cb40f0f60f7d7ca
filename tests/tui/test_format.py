"""Counts in screen text say "1 cell", never "1 cells" (issue 23)."""

from dspark_tui.tui import format as fmt


def test_a_count_agrees_with_its_number():
    assert fmt.count(1, "cell") == "1 cell"
    assert fmt.count(0, "cell") == "0 cells"
    assert fmt.count(10, "cell") == "10 cells"
    assert fmt.count(2, "match", "matches") == "2 matches"
