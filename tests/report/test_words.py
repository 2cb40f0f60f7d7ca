"""The catalogue of words (report/words/): both languages have the same keys, each key the same
placeholders, and every key the code asks a `Texts` for is in the catalogue."""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import pytest

from dspark_tui.model import UserError
from dspark_tui.model.events import ServerState
from dspark_tui.report.words import CATALOGUE, SECTIONS, Texts, en, zh

ROOT = Path(__file__).resolve().parents[2] / "dspark_tui"

# Keys whose two languages say a value differently on purpose: key -> why.
PLACEHOLDERS_DIFFER = {
    "decision.position_item": "en names the previous position ({prev}), zh says 'the one before'",
}

# Runner._ack's actions (engine/run/runner.py)
CONTROL_ACTIONS = ("pause", "resume", "skip", "abort", "detach", "retry")

# Keys the code builds from a value (not a literal): where -> the keys it can take.
DYNAMIC = {
    ("report/compare.py", "side"): {"compare.a", "compare.b"},
    ("report/compare.py", "what"): {
        "compare.model",
        "compare.command",
        "compare.cpus",
        "compare.prompts",
        "compare.warmup",
    },  # run_differences' kinds
    ("report/advice.py", "key"): {
        "report.rec_long_input",
        "report.rec_long_output",
        "report.rec_short",
    },  # RunAnalysis.workload_groups
    ("tui/screens/run_screen.py", "key"): {  # RunScreen._t, called with these literals
        f"screens.toast.{name}" for name in (
            "cell_title", "decision_after_end", "no_cells_yet", "no_failed_cell", "not_running",
            "nothing_to_retry", "read_only", "requested", "runner_gone",
            "action.pause", "action.resume", "action.skip", "action.abort", "action.retry")
    },
    # tui/words._said matches an engine line against the templates under one prefix: event_said's
    # `screens.event.server.<state>.` (a ServerState, or "pending") and
    # `screens.event.control.<action>.` (an action the runner acknowledges), notice_said's
    # `screens.event.notice.`; the toasts' `screens.event.finished` and `cell_failed` are asked
    # for by name (run_screen.py) and are not among them
    ("tui/words.py", "key"): {key for key in CATALOGUE["en"] if key.startswith((
        *(f"screens.event.server.{state}." for state in (*get_args(ServerState), "pending")),
        *(f"screens.event.control.{action}." for action in CONTROL_ACTIONS),
        "screens.event.notice.",
    ))},
}
JOINED = "report.list_sep"  # Texts.join's separator


def placeholders(template: str) -> set[tuple[str, str | None, str]]:
    return {
        (name, conversion, spec)
        for _, name, spec, conversion in string.Formatter().parse(template)
        if name is not None
    }


def test_zh_and_en_have_the_same_keys_in_the_same_order():
    assert list(zh.WORDS) == list(en.WORDS)
    assert {key.split(".", 1)[0] for key in zh.WORDS} == set(SECTIONS)


def test_each_key_has_the_same_placeholders_in_both_languages():
    differ = {key for key in zh.WORDS if placeholders(zh.WORDS[key]) != placeholders(en.WORDS[key])}
    assert differ == set(PLACEHOLDERS_DIFFER)


@dataclass(frozen=True)
class Use:
    where: str  # module path under dspark_tui/ and line
    section: str
    key: str
    prefix: bool = False  # an f-string: some key of the section starts with it


def uses(module: str, source: str) -> tuple[list[Use], list[tuple[str, str]]]:
    """The keys one module asks for, and its calls whose key is a value (module, source text).

    A name is a `Texts` when it is assigned `Texts(lang[, "section"])` or `x.of("section")`, or
    is a parameter annotated `Texts`. Its section: the one such an assignment names anywhere in
    the module, else `report` (the section the report's modules share as `t`). A key held in a
    variable is read from the variable's assignments of literals (`key = "a" if x else "b"`)."""
    tree = ast.parse(source)
    bound: dict[str, set[str]] = {}
    annotated: set[str] = set()
    literals: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _literal(node.value)
        ):
            literals.setdefault(node.targets[0].id, []).append(node.value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            section = _section_made(node.value)
            for target in node.targets:
                if section is not None and isinstance(target, ast.Name):
                    bound.setdefault(target.id, set()).add(section)
        elif (
            isinstance(node, ast.arg)
            and isinstance(node.annotation, ast.Name)
            and node.annotation.id == "Texts"
        ):
            annotated.add(node.arg)
    for name, sections in bound.items():
        assert len(sections) == 1, f"{module}: `{name}` is a Texts of {sections}: one name a section"
    section_of = {name: "report" for name in annotated} | {n: s.pop() for n, s in bound.items()}
    found: list[Use] = []
    dynamic: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in section_of:
            section = section_of[func.id]
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and isinstance(func.value, ast.Name)
            and func.value.id in section_of
        ):
            section = section_of[func.value.id]
        elif isinstance(func, ast.Call) and _section_made(func) is not None:  # Texts(lang, "x")("k")
            section = _section_made(func) or "report"
        else:
            continue
        where = f"{module}:{node.lineno}"
        for key in _keys(node.args[0], literals):
            if isinstance(key, ast.expr):
                dynamic.append((module, ast.unparse(key)))
            else:
                found.append(Use(where, section, key[0], key[1]))
    return found, dynamic


def _section_made(call: ast.Call) -> str | None:
    """`Texts(lang)` -> report, `Texts(lang, "decision")` or `t.of("decision")` -> decision."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "Texts":
        if len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
            return str(call.args[1].value)
        return "report"
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "of"
        and call.args
        and isinstance(call.args[0], ast.Constant)
    ):
        return str(call.args[0].value)
    return None


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.IfExp):
        return _literal(node.body) and _literal(node.orelse)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _keys(node: ast.expr, literals: dict[str, list[ast.expr]]) -> list[tuple[str, bool] | ast.expr]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, False)]
    if isinstance(node, ast.IfExp):
        return [*_keys(node.body, literals), *_keys(node.orelse, literals)]
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return [(str(node.values[0].value), True)]
    if isinstance(node, ast.Name) and node.id in literals:
        return [key for value in literals[node.id] for key in _keys(value, literals)]
    return [node]


def _missing(found: list[Use]) -> list[Use]:
    keys = CATALOGUE["en"]
    return [
        use
        for use in found
        if not (
            any(k.startswith(f"{use.section}.{use.key}") for k in keys)
            if use.prefix
            else f"{use.section}.{use.key}" in keys
        )
    ]


def _modules() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
        for path in sorted(ROOT.rglob("*.py"))
        if "Texts" in path.read_text(encoding="utf-8")
    ]


def _scan() -> tuple[list[Use], set[tuple[str, str]]]:
    found: list[Use] = []
    dynamic: set[tuple[str, str]] = set()
    for module, source in _modules():
        more, values = uses(module, source)
        found += more
        dynamic |= set(values)
    return found, dynamic


def test_every_key_the_code_asks_for_is_in_the_catalogue():
    found, dynamic = _scan()
    assert len(found) > 200  # the scan sees the code's calls
    assert _missing(found) == []
    assert dynamic == set(DYNAMIC), "a key built from a value: list the keys it can take in DYNAMIC"
    assert set().union(*DYNAMIC.values()) <= set(CATALOGUE["en"])


def test_every_key_in_the_catalogue_is_asked_for():
    found, _ = _scan()
    used = {JOINED}.union(*DYNAMIC.values())
    for use in found:
        name = f"{use.section}.{use.key}"
        used |= {key for key in CATALOGUE["en"] if key.startswith(name)} if use.prefix else {name}
    assert [key for key in CATALOGUE["en"] if key not in used] == []


def test_the_scan_finds_a_key_the_catalogue_lacks():
    source = """
def section(t: Texts, lang: str) -> list[str]:
    d = t.of("decision")
    say = Texts(lang, "greedy")
    key = "yes" if lang else "nope"
    return [d(key), t("title", backend="b", subject="s"), d("deploy_heading"), say("heading"),
            d("heading"), t(f"band.{lang}"), t(f"nothing.{lang}"), say.get("lead", "x"),
            Texts(lang, "compare")("none"), say("same" if lang else "differs"), t(lang)]
"""
    found, dynamic = uses("report/example.py", source)
    assert [(u.section, u.key) for u in _missing(found)] == [
        ("decision", "nope"),
        ("decision", "heading"),
        ("report", "nothing."),
        ("greedy", "differs"),
    ]
    assert dynamic == [("report/example.py", "lang")]


def test_a_section_reads_its_own_keys_in_either_language():
    assert Texts("en", "compare")("none") == en.WORDS["compare.none"]
    assert Texts("zh").of("decision")("yes") == "是"
    assert Texts("zh").join(["a", "b"]) == "a、b"
    assert Texts("en", "verification").get("keyed.elsewhere", "elsewhere") == "elsewhere"
    with pytest.raises(UserError, match="unknown report language 'fr'"):
        Texts("fr")
