"""A Textual stylesheet whose parsed rules are kept for the process, not for one stylesheet.

Textual (8.2) keeps parsed CSS in each `Stylesheet`, empties it whenever the theme's variables
change, and `reparse()` (every theme change) parses every source again in a fresh stylesheet
with no cache at all. So each app parses its 14 sources twice at start (with Textual's default
theme, then with ours), every theme switch parses them all again, and every app an in-process
test makes starts from nothing: ~25 ms of CPU an app start, most of what a theme switch costs.

Here the rules parsed from one source with one set of variables are parsed once: the cache key
is the source text, where it was read from, its priority and scope, and the variables (the
theme's colours are substituted at parse time, so rules parsed under another theme differ).
Textual already reuses the same RuleSet objects across parses within one stylesheet (its own
cache), and nothing changes a rule set after parsing: sharing them between stylesheets is the
same use. A source with an error raises as before (its rules are cached with their errors and
`parse()` raises on them each time).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet
from textual.css.types import CSSLocation

# (source, read_from, defaults, tie breaker, scope, variables' number) -> rules. A theme is
# ~20 sources; 512 holds a dozen themes' worth, all of what one process meets.
_MAX_RULES = 512
_rules: OrderedDict[tuple[Any, ...], list[RuleSet]] = OrderedDict()
_variable_sets: dict[tuple[tuple[str, str], ...], int] = {}


def _variables_number(variables: dict[str, str]) -> int:
    """A small number for a set of variables: hashing ~150 pairs once, not at every source."""
    key = tuple(sorted(variables.items()))
    return _variable_sets.setdefault(key, len(_variable_sets))


class SharedStylesheet(Stylesheet):
    """Textual's Stylesheet, its parsed rules shared by every instance in the process."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self._variables_key = _variables_number(self._variables)

    def set_variables(self, variables: dict[str, str]) -> None:
        super().set_variables(variables)
        self._variables_key = _variables_number(self._variables)

    def _parse_rules(self, css: str, read_from: CSSLocation, is_default_rules: bool = False,
                     tie_breaker: int = 0, scope: str = "") -> list[RuleSet]:
        key = (css, read_from, is_default_rules, tie_breaker, scope, self._variables_key)
        rules = _rules.get(key)
        if rules is not None:
            _rules.move_to_end(key)
            return rules
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        _rules[key] = rules
        if len(_rules) > _MAX_RULES:
            _rules.popitem(last=False)
        return rules

    def copy(self) -> Stylesheet:
        stylesheet = SharedStylesheet(variables=self._variables.copy())
        stylesheet.source = self.source.copy()
        return stylesheet

    def reparse(self) -> None:
        """Textual's reparse (a fresh stylesheet, so an error leaves this one as it was), with
        the fresh one a SharedStylesheet: Textual's makes a plain one, which parses anew."""
        stylesheet = SharedStylesheet(variables=self._variables)
        for read_from, (css, is_defaults, tie_breaker, scope) in self.source.items():
            stylesheet.add_source(css, read_from=read_from, is_default_css=is_defaults,
                                  tie_breaker=tie_breaker, scope=scope)
        try:
            stylesheet.parse()
        except Exception:
            self._invalid_css.update(stylesheet._invalid_css)
            raise
        self._rules = stylesheet.rules
        self._rules_map = None
        self.source = stylesheet.source
        self._require_parse = False
