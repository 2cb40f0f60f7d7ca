"""The shape of a run as a report sees it: arm and scenario order, the expected grid, labels.

A report must work on a run whose plan snapshot is gone or stale, so every fact here falls
back to what the cell files themselves show.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import ValidationError

from dspark_tui.model import CellKey, CellResult, Plan
from dspark_tui.results.manifest import RunManifest
from dspark_tui.results.store import LoadedRun


@dataclass(frozen=True)
class ScenarioShape:
    name: str
    input_len: int | None = None
    output_len: int | None = None
    concurrencies: tuple[int, ...] = ()


@dataclass(frozen=True)
class ArmKs:
    """K per arm, the layout's one answer to "is this a K sweep, and which arm runs which K":
    each fixed-K arm's K (`fixed`), the arms that verify adaptively beside them (`adaptive`,
    issue 24; empty in a plain sweep), and the arm variable that carries K (`var`: the compared
    variable, or the speculative table's K when the arms differ in K and adaptive verification)."""

    fixed: dict[str, int]
    adaptive: tuple[str, ...] = ()
    var: str = ""

    @property
    def is_sweep(self) -> bool:
        """A sweep worth a schedule: a K = 0 baseline or at least three K values (two
        hand-picked values, as in the seed, keep the seed's report); with adaptive arms, two
        fixed K values are a sweep too (the adaptive arm needs a choice per cell)."""
        return is_k_sweep(self.fixed) or (bool(self.adaptive) and len(self.fixed) >= 2)

    @property
    def every_arm(self) -> dict[str, int] | None:
        """K of every arm; None when some arm verifies adaptively (an arm the K rule cannot
        rank by its K: the SLO choice compares such a run's arms as arms)."""
        return None if self.adaptive else self.fixed


def is_k_sweep(k_of: dict[str, int] | None) -> bool:
    """A sweep worth a schedule: a K = 0 baseline or at least three K values. (Two hand-picked
    values, as in the seed, keep the seed's report.)"""
    return k_of is not None and (0 in k_of.values() or len(k_of) >= 3)


@dataclass
class RunLayout:
    arms: list[str]
    scenarios: list[ScenarioShape]
    expected: list[CellKey]
    compared_var: str | None = None
    compared_flag: str | None = None
    arm_values: dict[str, str] = field(default_factory=dict)
    # K per arm when the arms are K values (with or without adaptive-verification arms).
    ks: ArmKs | None = None
    # Arms the plan limits to some cells (`cells`, model/plan.Arm): arm -> its (scenario, c).
    limited: dict[str, frozenset[tuple[str, int]]] = field(default_factory=dict)

    def plans(self, arm: str, key: tuple[str, int]) -> bool:
        """Whether the arm was planned at the cell (scenario, concurrency)."""
        return arm not in self.limited or key in self.limited[arm]

    @property
    def baseline(self) -> str:
        return self.arms[0]

    def scenario_names(self) -> list[str]:
        return [s.name for s in self.scenarios]

    def shape(self, name: str) -> ScenarioShape:
        for shape in self.scenarios:
            if shape.name == name:
                return shape
        return ScenarioShape(name)

    def spec_label(self, arm: str) -> str:
        """The seed's "Spec" column: `3` for `st=3` when arms differ in exactly one variable."""
        return self.arm_values.get(arm, arm)

    def spec_header(self) -> str:
        if self.compared_var is None:
            return "Arm"
        return "Spec" if "spec" in self.compared_var.lower() else self.compared_var

    def setting(self, arm: str) -> str:
        """`--spec-tokens 3`: how the arm differs, in the words of the server's command line."""
        if self.compared_var is None or arm not in self.arm_values:
            return arm
        value = self.arm_values[arm]
        return f"{self.compared_flag} {value}" if self.compared_flag else f"{self.compared_var}={value}"


def layout_of(run: LoadedRun) -> RunLayout:
    manifest = run.manifest
    plan = plan_snapshot(manifest.plan)
    cells = list(run.cells.values())

    arms = [a.name for a in manifest.arms] or (
        [a.name for a in plan.arms] if plan is not None else []
    )
    for cell in cells:
        if cell.arm not in arms:
            arms.append(cell.arm)

    shapes = _scenario_shapes(plan, manifest.scenarios, cells)
    # An arm with `cells` in the plan plans only those: a cell it leaves out is not expected.
    limited = {a.name: a for a in plan.arms if a.cells is not None} if plan is not None else {}
    expected = [
        CellKey(arm=arm, scenario=shape.name, concurrency=c)
        for arm in arms
        for shape in shapes
        for c in shape.concurrencies
        if arm not in limited or limited[arm].plans(shape.name, c)
    ]

    compared_var, compared_flag, values = compared_values(manifest, arms)
    return RunLayout(
        arms=arms,
        scenarios=shapes,
        expected=expected,
        compared_var=compared_var,
        compared_flag=compared_flag,
        arm_values=values,
        ks=arm_ks(manifest, arms, compared_var, values),
        limited={arm: frozenset((s.name, c) for s in shapes for c in s.concurrencies
                                if limited[arm].plans(s.name, c)) for arm in limited},
    )


K_VAR = "num_speculative_tokens"
ADAPTIVE_VAR = "speculative.enable_adaptive_verification"


def is_adaptive(settings: dict[str, object]) -> bool:
    """An arm's settings turn vLLM's adaptive verification on."""
    value = settings.get(ADAPTIVE_VAR)
    return value is True or str(value).lower() == "true"


def adaptive_split(manifest: RunManifest, arms: list[str]) -> tuple[dict[str, int], list[str]] | None:
    """(K of each fixed arm, the adaptive-verification arms) when the arms differ in K and in
    adaptive verification alone, some arm verifies adaptively and the fixed arms have distinct
    K values; else None. (The K decision is made over the fixed arms; the adaptive ones are
    compared against it, analysis/adaptive.py.)"""
    if manifest.verification is not None:
        return None
    if {c.var for c in manifest.compared} != {K_VAR, ADAPTIVE_VAR}:
        return None
    arm_vars = {a.name: a.vars for a in manifest.arms}
    fixed: dict[str, str] = {}
    adaptive: list[str] = []
    for arm in arms:
        settings = arm_vars.get(arm)
        if settings is None or K_VAR not in settings:
            return None
        if is_adaptive(settings):
            adaptive.append(arm)
        else:
            fixed[arm] = str(settings[K_VAR])
    k_of = _k_values(fixed) if len(fixed) >= 2 else None
    if not adaptive or k_of is None:
        return None
    return k_of, adaptive


def compared_values(manifest: RunManifest, arms: list[str]) -> tuple[str | None, str | None, dict[str, str]]:
    """The one variable the arms differ in, its flag and each arm's value; (None, None, {})
    unless every arm has its own value of exactly one compared variable."""
    # A verification run's arms differ in a whole --speculative-config JSON: its arm names
    # (`schedule`, `K=4`) say what they are better than the value would.
    if len(manifest.compared) != 1 or manifest.verification is not None:
        return None, None, {}
    compared = manifest.compared[0]
    arm_vars = {a.name: a.vars for a in manifest.arms}
    values = {
        arm: str(arm_vars[arm][compared.var])
        for arm in arms
        if arm in arm_vars and compared.var in arm_vars[arm]
    }
    if len(values) == len(arms) and len(set(values.values())) == len(values):
        return compared.var, compared.flag, values
    return None, None, {}


def plan_snapshot(snapshot: dict[str, object]) -> Plan | None:
    """The plan a run was started with, from run.json's snapshot; None if it does not validate."""
    if not snapshot:
        return None
    try:
        return Plan.model_validate(snapshot)
    except ValidationError:
        return None


def _scenario_shapes(
    plan: Plan | None, listed: list[str], cells: Iterable[CellResult]
) -> list[ScenarioShape]:
    """Plan order first, then scenarios only the cells know, concurrencies ascending."""
    seen: dict[str, set[int]] = {}
    for cell in cells:
        seen.setdefault(cell.scenario, set()).add(cell.concurrency)
    shapes: list[ScenarioShape] = []
    if plan is not None:
        for scenario in plan.scenarios:
            concurrencies = list(scenario.concurrencies)
            extra = sorted(seen.get(scenario.name, set()) - set(concurrencies))
            shapes.append(
                ScenarioShape(
                    name=scenario.name,
                    input_len=scenario.input_len,
                    output_len=scenario.output_len,
                    concurrencies=tuple(concurrencies + extra),
                )
            )
    known = {s.name for s in shapes}
    for name in [*listed, *sorted(seen)]:
        if name not in known:
            known.add(name)
            shapes.append(ScenarioShape(name=name, concurrencies=tuple(sorted(seen.get(name, ())))))
    return shapes


def arm_ks(manifest: RunManifest, arms: list[str], compared_var: str | None,
           arm_values: dict[str, str]) -> ArmKs | None:
    """K per arm: every arm's when the arms differ in one integer variable (`spec_tokens`);
    the fixed arms' and the adaptive arms' names when they differ in K and adaptive
    verification alone (`adaptive_split`); else None."""
    if compared_var is not None and len(arm_values) == len(arms):
        values = _k_values(arm_values)
        return None if values is None else ArmKs(values, (), compared_var)
    split = adaptive_split(manifest, arms)
    if split is None:
        return None
    return ArmKs(split[0], tuple(split[1]), K_VAR)


def manifest_k_values(manifest: RunManifest) -> dict[str, int] | None:
    """The same from run.json alone, before any cell is read (a screen's quick check). A sweep
    that carries adaptive-verification arms gives its fixed arms' K (the K axis the decision is
    made over, as the layout's `fixed_k`); `manifest_adaptive_arms` names the others."""
    arms = manifest.arm_names()
    if not arms:
        return None
    var, _, values = compared_values(manifest, arms)
    if var is None:
        split = adaptive_split(manifest, arms)
        return split[0] if split is not None else None
    return _k_values(values)


def manifest_is_sweep(manifest: RunManifest) -> bool:
    """`ArmKs.is_sweep` from run.json alone (the screens' quick check): the same rule, so a
    sweep of two fixed K beside an adaptive arm is one here too."""
    fixed = manifest_k_values(manifest)
    if fixed is None:
        return False
    return ArmKs(fixed, tuple(manifest_adaptive_arms(manifest))).is_sweep


def manifest_adaptive_arms(manifest: RunManifest) -> list[str]:
    """The adaptive-verification arms of a K sweep that carries them, from run.json alone."""
    split = adaptive_split(manifest, manifest.arm_names())
    return split[1] if split is not None else []


def _k_values(arm_values: dict[str, str]) -> dict[str, int] | None:
    try:
        values = {arm: int(text) for arm, text in arm_values.items()}
    except ValueError:
        return None
    if any(k < 0 for k in values.values()) or len(set(values.values())) != len(values):
        return None
    return values


def baseline_arm(manifest: RunManifest) -> str | None:
    """The arm that runs K = 0 (no speculation) when the arms are K values, else None."""
    k_of = manifest_k_values(manifest)
    if k_of is None:
        return None
    return next((arm for arm, k in k_of.items() if k == 0), None)
