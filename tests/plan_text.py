"""Plan TOML written by tests and by bench/: its `[[scenarios]]` and `[[arms]]` tables, and the
K sweep over the simulator's `--spec-tokens` that the virtual runs (no server) are judged on.

One copy of what tests and bench scripts each wrote out by hand. The text is byte for byte what
they wrote, so a test may still edit it with `str.replace`. bench/ imports it from the
repository root (its scripts put the root on sys.path); the product never does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

Value = int | float | str | bool | Sequence[int] | Mapping[str, int]


def toml_value(value: Value) -> str:
    """A TOML scalar, array of numbers or inline table of numbers, as a person writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {v}" for k, v in value.items()) + " }"
    if isinstance(value, Sequence):
        return f"[{', '.join(map(str, value))}]"
    return str(value)


def scenario_table(name: str, input_len: int, output_len: int, concurrencies: Sequence[int],
                   num_prompts: Value | None = None, *, range_ratio: float | None = None) -> str:
    """One `[[scenarios]]` table; `range_ratio` and `num_prompts` only where given."""
    lines = ["[[scenarios]]", f'name = "{name}"', f"input_len = {input_len}",
             f"output_len = {output_len}"]
    if range_ratio is not None:
        lines.append(f"range_ratio = {range_ratio}")
    lines.append(f"concurrencies = {toml_value(concurrencies)}")
    if num_prompts is not None:
        lines.append(f"num_prompts = {toml_value(num_prompts)}")
    return "\n".join(lines) + "\n"


def spec_token_arms(ks: Iterable[int], name: str = "st={k}", gap: str = "\n") -> str:
    """An `[[arms]]` table a K, each setting the plan's `{spec_tokens}` (named `name` with the K
    in it), `gap` after each (a blank line by default)."""
    return "".join(f'[[arms]]\nname = "{name.format(k=k)}"\nvars = {{ spec_tokens = {k} }}\n{gap}'
                   for k in ks)


def virtual_k_sweep(name: str, ks: Iterable[int], *, rounds: int, bench: str = "",
                    scenario: str = "", after: str = "") -> str:
    """A K sweep over the simulator by `--spec-tokens` (arms "K=k"), demo-slo's model, native
    driver, no adaptive round: the plan a virtual run (raw files written, no server) is judged
    on. `bench`: more `[bench]` lines; `scenario` and `after` follow it."""
    return f"""name = "{name}"
model = "demo/DeepSeek-V4-Flash-DSpark-sim"
[server]
command = ["python", "-m", "dspark_tui.sim", "serve", "{{model}}", "--spec-tokens", "{{spec_tokens}}"]
{spec_token_arms(ks, "K={k}", gap="")}[bench]
driver = "native"
rounds = {rounds}
adaptive_rounds = 0
{bench}{scenario}{after}"""
