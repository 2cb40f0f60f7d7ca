"""English: every sentence the reports and the comparison of two runs say, one entry a key,
namespaced by section (`section.key`). words/__init__.py reads it; zh.py has the same keys with
the same placeholders (tests/report/test_words.py)."""

from __future__ import annotations

WORDS: dict[str, str] = {
    # report: the report's body: title, header, summary, findings, advice, unsure cells, failed cells
    "report.summary_heading": "## Summary",
    "report.summary_deploy": "- **{where}**: deploy {setting} (wins {wins} of {cells} decided cells{extra})",
    "report.summary_even": "- **{where}**: either ({ties} of {cells} decided cells are ties{extra})",
    "report.summary_mixed": "- **{where}**: no consistent winner ({cells} decided cells{extra}); see the "
    "scenarios below",
    "report.summary_unsure_extra": "; {n} more unsure, leaning {lean}",
    "report.summary_undecided": "- **{where}**: not decided, too close to call — {decided} of {cells} cells decided{won}; the unsure ones lean {lean}",
    "report.summary_undecided_won": ": {wins}",
    "report.summary_no_lean": "nowhere (none is unsure)",
    "report.lean_item": "to `{arm}` in {n} (by {by})",
    "report.summary_single": "- How sure: one measurement per cell, so no intervals; margins under "
    "{band}% count as ties and larger ones may still be noise. Re-run with `rounds >= 2` "
    "for verdicts.",
    "report.summary_sure": "- How sure: of {total} comparisons, {wins} are wins and {ties} ties (the "
    "interval inside ±{band}%), {unsure} unsure{below}; intervals are {level}% paired t "
    "intervals over {rounds} server sessions per arm (method: docs/statistics.md).",
    "report.summary_below": " (listed below)",
    "report.summary_sure_external": "- How sure: of {total} comparisons, {wins} are wins and {ties} ties "
    "(the interval inside ±{band}%), {unsure} unsure{below}; intervals are {level}% paired t "
    "intervals over {rounds} rounds per arm (method: docs/statistics.md).",
    "report.summary_prior": "The session noise leans on a stated prior ({prior}).",
    "report.summary_nodes": "Rounds ran on {nodes} nodes, both arms of each round on one node and paired "
    "within it{unpaired}; the intervals are for these {nodes} nodes.",
    "report.summary_nodes_unpaired": " (rounds left unpaired, arms on different nodes: {n})",
    "report.summary_node_differs": "- Caveat: the ratio `{b}` / `{a}` differs between nodes (their means "
    "by up to {spread}; F test of the round effects on {nodes} nodes, p {p}); a node may be "
    "unlike the others. The verdicts stand, for these nodes together.",
    "report.summary_unreplicated": "No session replication: the server of {arms} was not restarted "
    "between rounds (an external server); intervals cover within-session noise only.",
    "report.summary_unreplicated_prior": "The server of {arms} was not restarted between rounds (an "
    "external server): its session offset does not average out over rounds, so the intervals add "
    "it from the stated prior ({prior}).",
    "report.external_server": "- External server `{arm}`: {url}{details} (not started or stopped by "
    "dspark-tui)",
    "report.nodes_line": "- Nodes: {nodes}",
    "report.node_rounds": "`{node}` (rounds {rounds})",
    "report.summary_simulated": "- Caveat: measured on the simulator (dspark_tui.sim), not on a GPU: these are "
    "the model's numbers, and a run of this plan on the GPU server decides what to deploy.",
    "report.summary_sim_favours": "- **{where}**: the simulator favours {setting} (wins {wins} of {cells} "
    "decided cells{extra})",
    "report.summary_k_range": "{lo}–{hi} → K={k}",
    "report.summary_k_keyed_batch": "by the running batch the server saw",
    "report.summary_k_keyed_client": "by client concurrency; this run has no `/metrics`",
    "report.summary_k_deploy": "- **Deploy the K schedule** ({keyed}): {ranges} (`--speculative-config` "
    "below)",
    "report.summary_k_leaders": "- **The K schedule of the leaders — not to deploy yet** ({keyed}): {ranges}",
    "report.summary_k_partial": "- Asked for with `--partial-schedule`: this schedule comes from a sweep without {arms}; it is no answer for them.",
    "report.summary_k_withheld": "- **No K schedule**: the sweep has no measurement of {arms}, and a schedule made from the arms that happened to run would answer for K values it never measured. Resume it (`dspark-tui run --resume {path}`) or ask for one anyway (`dspark-tui report {path} --partial-schedule`).",
    "report.summary_k_status_decided": "- Decided: the choice of every one of the {n} cells is a win, a tie or within the tie band of the fastest.",
    "report.summary_k_status_unsure": "- Not decided: {unsure} of {n} cells' choices are unsure ({cells}); the schedule follows their leaders, and more rounds (`bench.rounds`, `bench.adaptive_rounds`) must settle them before it is deployed.",
    "report.summary_k_status_single": "- Single measurements: each of the {n} cells' choices is a point estimate without an interval; rerun with `rounds >= 2` before deploying.",
    "report.summary_k_sim": "- **The simulator's K schedule** ({keyed}): {ranges}",
    "report.summary_k_single": "- With one fixed K for all traffic: K={k}",
    "report.summary_k_single_sim": "- The simulator's best fixed K: K={k}",
    "report.summary_k_single_unsure": "- With one fixed K for all traffic: no fixed K is shown best; the leader is K={k}, and K={others} may still beat it by more than the tie band",
    "report.summary_k_single_unsure_sim": "- The simulator's best fixed K: no fixed K is shown best; the leader is K={k}, and K={others} may still beat it by more than the tie band",
    "report.summary_k_single_point": "- With one fixed K for all traffic: K={k} (single measurements: a point estimate, not shown)",
    "report.summary_k_single_point_sim": "- The simulator's best fixed K: K={k} (single measurements: a point estimate, not shown)",
    "report.summary_charts": "- Charts: {links}",
    "report.summary_incomplete": "- **Incomplete run** ({status}): {ok} of {total} cells measured{arms}{failed}; every answer below rests only on what was measured.",
    "report.summary_incomplete_arms": "; no measurement at all of {arms}",
    "report.summary_incomplete_failed": "; {n} failed: {cells}",
    "report.summary_incomplete_failed_item": "`{arm}` {scenario} c={c} ({reason})",
    "report.summary_incomplete_more": " and {n} more (see Failed and missing cells)",
    "report.summary_verify.confirmed": "- **Verified: the schedule of `{sweep}` is confirmed** — its realised gain over fixed K={k} is {gain}, shown, and K={k} beats it in no cell.",
    "report.summary_verify.no_gain": "- **Not confirmed: the schedule of `{sweep}` gains nothing shown** — {gain} over fixed K={k} is a tie within ±{band}%: fixed K={k} serves as well{cells}.",
    "report.summary_verify.refuted": "- **Refuted: fixed K={k} beats the schedule of `{sweep}`** — the schedule's realised gain is {gain}{cells}.",
    "report.summary_verify.unsure": "- **Not verified: the schedule of `{sweep}` is not shown better than fixed K={k}** — its realised gain is {gain}, unsure{cells}.",
    "report.summary_verify.single": "- **Not verified: single measurements** — the schedule of `{sweep}` over fixed K={k} is {gain}, a point estimate{cells}.",
    "report.summary_verify_cells": "; K={k} beats it at {cells}",
    "report.summary_verify_collapse": "- **⚠ Collapse at the schedule's boundaries**: at {cells} the schedule is below both neighbouring fixed K by more than the tie band ({moves}); see \u201cAt the schedule's boundaries\u201d. Not to be deployed as it is.",
    "report.summary_verify_move.up": 'move boundary {b}|{b1} up',
    "report.summary_verify_move.down": 'move boundary {b}|{b1} down',
    "report.summary_verify_move.conflict": 'boundary {b}|{b1}: cells disagree',
    "report.summary_verify_move.none": 'boundary {b}|{b1}: no direction shown',
    "report.run_status.completed": "completed",
    "report.run_status.aborted": "aborted",
    "report.run_status.interrupted": "interrupted",
    "report.run_status.failed": "failed",
    "report.run_status.running": "still running",
    "report.status_completed": "completed",
    "report.status_completed_skipped": "completed, {skipped} skipped",
    "report.status_incomplete": "incomplete",
    "report.chart.throughput": "Total tok/s vs concurrency",
    "report.chart.margin": "Margin with its interval",
    "report.chart.latency": "TPOT and TTFT vs concurrency",
    "report.chart.acceptance": "Acceptance by draft position",
    "report.charts_heading": "## Charts",
    "report.unsure_heading": "## Unsure cells",
    "report.unsure_lead": "These cells' intervals cross an edge of the tie band: neither a win nor a tie.",
    "report.unsure_item": "- `{scenario}` c={c}: `{leader}` leads by {margin} (interval {low} … {high}); {hint}",
    "report.unsure_more": "about {n} more round(s) would likely settle it",
    "report.unsure_edge": "the margin sits near the band's edge; more rounds are unlikely to settle it",
    "report.unsure_wide": "its interval is too wide for a few more rounds to settle it (the box's noise is the limit)",
    "report.verdict_col": "Verdict",
    "report.interval_col": "Margin interval",
    "report.verdict.wins": "wins",
    "report.verdict.tie": "tie",
    "report.verdict.unsure": "unsure",
    "report.verdict.single": "single",
    "report.title": "# {backend} {subject} comparison report",
    "report.result_dir": "- Result directory: `{path}`",
    "report.model": "- Model: `{model}`",
    "report.backend": "- Backend: {backend}",
    "report.compared": "- Compared: {settings}",
    "report.warmup": "- Warmup: {n} requests",
    "report.client": "- Benchmark client: `{client}`",
    "report.cells_line": "- Cells: {status} — {ok} ok, {skipped}{failed} failed, {missing} not run "
    "(of {total})",
    "report.cells_skipped": "{n} skipped, ",
    "report.server_line_none": "- Server metrics: none (this run did not scrape `/metrics`; "
    "no causes are inferred below)",
    "report.server_line_not_started": "- Server metrics: none (the server did not start: {reason})",
    "report.server_line_some": "- Server metrics: {n} cells carry a `/metrics` summary "
    "(acceptance length, KV cache, preemptions)",
    "report.source_line": "- Source: {source}",
    "report.pairs_line": "- Pairs compared: {n} arms; the winner table takes the highest Total tok/s of all "
    "arms, margin = first / second - 1; trends and outliers compare each arm with the "
    "baseline `{base}` ({pairs})",
    "report.core_heading": "## Core metrics",
    "report.server_heading": "## Server metrics",
    "report.winner_heading": "## Throughput winners",
    "report.margin_col": "Margin",
    "report.margin_note": "Margin: the geometric mean over rounds of the paired per-round ratio (the interval's centre), not the ratio of the mean Total tok/s in the same row; they differ where sessions moved the arms unevenly, most at {where}: margin {margin}, ratio of the means {means}.",
    "report.winner_col": "Winner (Total tok/s)",
    "report.runner_up_col": "Runner-up",
    "report.findings_heading": "## Key findings",
    "report.no_findings": "Not enough comparable cells (two or more arms must succeed at the same "
    "scenario and concurrency).",
    "report.band_heading_decisive": "### {n}. Concurrency decides",
    "report.band_heading_uniform": "### {n}. `{arm}` wins in every concurrency band",
    "report.band_heading_plain": "### {n}. Wins by concurrency band",
    "report.band.single": "Low concurrency",
    "report.band.low": "Low-to-mid concurrency",
    "report.band.mid": "Mid concurrency",
    "report.band.high": "High concurrency",
    "report.band_arm": "- **{name} ({label})**: `{arm}` wins {wins}/{cells} cells{range}{ties}{latency}.",
    "report.band_even": "- **{name} ({label})**: {both}about even, {ties}/{cells} cells within {tie}%{exceptions}.",
    "report.band_mixed": "- **{name} ({label})**: no consistent winner ({counts}).",
    "report.band_unsure_note": "{n} more of the band's {cells} cells are unsure, leaning {lean}{undecided}.",
    "report.band_undecided": "; too few are decided to name a setting for the band",
    "report.win_range": " (by {low}–{high}, most at {where})",
    "report.win_single": " (by {high}, {where})",
    "report.win_same": " (by {high} each)",
    "report.both.2": "",
    "report.both.n": "",
    "report.clause_sep": "; ",
    "report.ties_note": ", {n} more even",
    "report.latency_note": "; with a lower P99 E2E in {n}/{m}",
    "report.exceptions": "; exception: {items}",
    "report.exception_item": "{where} `{arm}` +{margin}",
    "report.counts_item": "`{arm}` wins {n}",
    "report.ties_item": "{n} even",
    "report.best_heading": "### {n}. Best setting per scenario",
    "report.best_lead_unanimous": "`{arm}` wins at every concurrency of {scenarios}.",
    "report.best_table_header": "| Scenario | Best {spec} | Evidence |",
    "report.best_even": "about even",
    "report.best_mixed": "depends on concurrency",
    "report.best_undecided": "not decided",
    "report.best_reason_arm": "wins {wins}/{cells} concurrencies{range}",
    "report.best_reason_even": "{ties}/{cells} concurrencies within {tie}%",
    "report.best_reason_mixed": "{counts}",
    "report.best_reason_undecided": "only {decided} of {cells} concurrencies decided ({counts})",
    "report.gap_heading": "### {n}. `{scenario}`: the gap moves most with concurrency",
    "report.gap_lead.widens": "As concurrency grows in `{scenario}`, the lead of `{leader}` over "
    "`{trailer}` widens ({first_text} at c={first}, {last_text} at c={last}):",
    "report.gap_lead.narrows": "As concurrency grows in `{scenario}`, the lead of `{leader}` over "
    "`{trailer}` narrows ({first_text} at c={first}, {last_text} at c={last}):",
    "report.gap_lead.reverses": "As concurrency grows in `{scenario}`, the winner flips "
    "({first_text} at c={first}, {last_text} at c={last}):",
    "report.gap_col_conc": "Concurrency",
    "report.gap_col_gap": "Gap",
    "report.gap_even": "about even",
    "report.gap_lead": "{arm} +{margin}",
    "report.gap_latency": "At c={c}, `{slow}` has a mean TPOT of {slow_tpot} ms and a P99 E2E of "
    "{slow_e2e} ms; `{fast}` has {fast_tpot} ms and {fast_e2e} ms.",
    "report.gap_no_server": "This run has no server metrics, so whether the gap comes from verification "
    "cost or KV-cache pressure was not measured.",
    "report.gap_others": "Other scenarios: {items}.",
    "report.gap_other_item": "`{scenario}` {first_text} → {last_text}",
    "report.outlier_heading": "### {n}. Outlier cells",
    "report.outlier_item": "- `{scenario} c={c}`: {leader} +{margin}, while {neighbours}; "
    "{deviation} (ln ratio) off the line through its neighbours, a clear outlier.",
    "report.outlier_neighbour": "c={c} is {text}",
    "report.outlier_no_server": "  This run has no server metrics, so the cause was not measured; "
    "repeat the cell to rule out noise.",
    "report.outlier_server": "  Server evidence: {evidence} (neighbours: {neighbours}).",
    "report.no_outliers": "No cell stands far from its neighbouring concurrencies "
    "(threshold: {threshold} in ln ratio).",
    "report.no_outliers_noise": "No cell stands far from the line through its neighbouring concurrencies (threshold: {threshold} in ln ratio, or {z} of the deviation's standard error from this run's own noise where that is larger: {noisy} here between evenly spaced concurrencies).",
    "report.evidence": "acceptance length {accept}; KV peak {kv}; preemptions {preempt}",
    "report.evidence_prefix": "Server evidence: ",
    "report.failed_heading": "## Failed and missing cells",
    "report.failed_item": "- `{arm}` / `{scenario}` / c={c}: failed — {reason}",
    "report.skipped_item": "- `{arm}` / `{scenario}` / c={c}: skipped — {reason}",
    "report.missing_item": "- `{arm}` / `{scenario}` / c={c}: missing (no result file)",
    "report.problem_item": "- `{path}`: {reason}",
    "report.problems_lead": "Files skipped while reading:",
    "report.advice_heading": "## Recommendations",
    "report.recommend_heading": "### Recommended setting",
    "report.recommend_header": "| Load | Recommended {setting} | Why |",
    "report.rec_band": "{names} ({label})",
    "report.rec_long_input": "Long input (input ≥ {n}): {scenarios}",
    "report.rec_long_output": "Long output (output ≥ {n}): {scenarios}",
    "report.rec_short": "Short input and output: {scenarios}",
    "report.rec_even": "{values}: either",
    "report.rec_mixed": "depends on concurrency",
    "report.rec_undecided": "not decided",
    "report.rec_note_arm": "wins {wins}/{cells} cells{range}{latency}{exceptions}",
    "report.rec_note_even": "{ties}/{cells} cells within {tie}%{exceptions}",
    "report.rec_note_mixed": "{counts}",
    "report.rec_note_undecided": "only {decided} of {cells} cells decided: too few to recommend a setting",
    "report.rec_note_overlap": "the concurrency rows above give these scenarios' cells another setting ({bands}): follow them",
    "report.rec_latency": "; lower P99 E2E in {n}/{m}",
    "report.next_heading": "### Next steps",
    "report.next_high": "If the traffic is mostly high-concurrency ({label}), make {setting} the default.",
    "report.next_uniform": "{setting} wins in every tested concurrency band: make it the default.",
    "report.next_high_sim": "On the simulator {setting} leads at high concurrency ({label}); run this plan on "
    "the GPU server and let that run decide the default.",
    "report.next_uniform_sim": "On the simulator {setting} leads in every tested concurrency band; run this "
    "plan on the GPU server and let that run decide the default.",
    "report.recommend_header_sim": "| Load | Simulator favours {setting} | Why |",
    "report.recommend_heading_sim": "### What the simulator favours per load",
    "report.next_route": "For mixed traffic, consider routing by concurrency or input length to "
    "server instances with different settings.",
    "report.next_outlier": "Repeat {cells} (at least 3 times) to see whether the outlier reproduces.",
    "report.next_unsure": "{n} cells are still unsure (see Unsure cells): re-run them with more "
    "`bench.rounds` or `bench.adaptive_rounds`, or accept that their gap is no larger than "
    "their interval shows.",
    "report.next_server": "Re-run with dspark-tui scraping `/metrics` (acceptance length, KV-cache usage, "
    "preemptions) to back the findings above with server-side evidence.",
    "report.next_resume": "Re-run the {n} failed or missing cells (`dspark-tui run --resume {path}`).",
    "report.next_none": "Not enough data for a recommendation.",
    "report.list_sep": ", ",
    # decision: a K sweep: what to deploy (the K schedule) and the K sweep section
    "decision.deploy_heading": "## What to deploy (K schedule)",
    "decision.deploy_simulated": "**Measured on the simulator**: this is the schedule the simulator "
    "(dspark_tui.sim) shows, not a setting to deploy; run this plan on the GPU server and let that "
    "run decide.",
    "decision.deploy_schedule_lead": "K by the running batch the server measured (`vllm:num_requests_running`):",
    "decision.deploy_schedule_lead_client": "This run has no `/metrics`, so the table is keyed on the client's "
    "concurrency, not the running batch; they differ once requests queue — check on a run with metrics:",
    "decision.deploy_table_header": "| Running batch | K | From cells |",
    "decision.deploy_overlap": "- Cells whose running-batch spreads overlap share one K: the one with the best "
    "traffic-weighted throughput relative to each cell's best (the smallest within the tie band); "
    "between anchors a batch takes the nearer anchor on a log2 scale.",
    "decision.deploy_beyond": "- The largest measured batch is {largest}; from {start} up to max_num_seqs = "
    "{max_seqs} "
    "({source}) the last measured choice, K = {k}, holds.",
    "decision.source.plan": "the plan's `--max-num-seqs`",
    "decision.source.vllm-default": "vLLM's default 256; the plan sets no `--max-num-seqs`",
    "decision.deploy_unverified": "- **Unverified**: some cells were measured in one round (no interval), so these "
    "choices are point estimates; rerun with `rounds >= 2`.",
    "decision.deploy_config_lead": "`--speculative-config` (needs a vLLM with `num_speculative_tokens_per_batc"
    "h_size`, "
    "see docs/decision.md):",
    "decision.deploy_no_spec": "- No speculation (K = 0) is not worse at any measured batch: leave out "
    "`--speculative-config`.",
    "decision.deploy_method_note": "- `method` comes from the {source} (`{method}`); check it against the "
    "drafter you serve.",
    "decision.method.model name": "model name",
    "decision.method.default": "default",
    "decision.deploy_command_lead": "The full serve command (from the plan's server command):",
    "decision.deploy_single_heading": "### Servers without dynamic K",
    "decision.deploy_traffic_plan": "Traffic weights from the plan's `[traffic]`.",
    "decision.deploy_traffic_equal": "The plan has no `[traffic]`: every scenario and concurrency weighs the same "
    "(add a `[traffic]` table to the plan to weigh your own mix).",
    "decision.deploy_single": "- Fixed K = {k}: {gains}",
    "decision.deploy_single_unsure": "- No fixed K is shown best: the leader is K = {k}, and K = {others} may still beat it by more than the tie band; {gains}",
    "decision.deploy_single_gain": "vs K = {other} {gain}",
    "decision.deploy_schedule_gain": "- The schedule's expected gain over fixed K = {k}: {gain}",
    "decision.deploy_routing": "- Routing: two instances, traffic at concurrency <= {threshold} on K = "
    "{low_k}, the rest on "
    "K = {high_k}; over fixed K = {k}: {gain} (assumes each class reaches its instance at the load it was "
    "measured at).",
    "decision.gain_fmt": "{value} ({low} … {high})",
    "decision.zero_note": " (not distinguishable from zero)",
    "decision.sweep_heading": "## K sweep",
    "decision.best_k_heading": "### Best K per cell",
    "decision.best_k_lead": "The smallest K shown to be within the tie band ({band}%) of the cell's fastest: "
    "its ratio's lower bound against the fastest is >= 1 − {band}%; the fastest itself when no "
    "cheaper K is.",
    "decision.best_k_header": "| Scenario | Concurrency | Running batch | Chosen K | Fastest K | Chosen/fastest | "
    "Chosen/K=0 | Fastest/runner-up | Status |",
    "decision.status.decided": "decided",
    "decision.status.unsure": "unsure",
    "decision.status.single": "single",
    "decision.yes": "yes",
    "decision.no": "no",
    "decision.deploy_verdict": "- Deployable as it stands: **{answer}**{why} (schedule.json's `deploy`).",
    "decision.deploy_why": " — {reasons}",
    "decision.why.no_schedule": "no schedule",
    "decision.why.missing_arms": "arms without a measurement",
    "decision.why.failed_cells": "failed cells",
    "decision.why.run_aborted": "the run was aborted",
    "decision.why.run_interrupted": "the run was interrupted",
    "decision.why.run_failed": "the run failed",
    "decision.why.run_running": "the run is still running",
    "decision.why.cells_not_run": "cells not run",
    "decision.why.unsure": "some choices are unsure",
    "decision.why.single": "single measurements",
    "decision.why.simulated": "measured on the simulator",
    "decision.break_heading": "### Break-even concurrency",
    "decision.break_item": "- `{scenario}` K={low_k}→{high_k}: {text}",
    "decision.break_at": "c ≈ {at} (interval {low} … {high})",
    "decision.break_at_single": "c ≈ {at} (single measurements, no interval)",
    "decision.break_never_high": "K={k} is faster at every measured concurrency (up to {c})",
    "decision.break_never_low": "K={k} is faster at every measured concurrency (from {c})",
    "decision.break_many": "; the ratio crosses 1 {n} times, the first is shown",
    "decision.stop_item": "- `{scenario}`: against K=0, speculation stops paying at {text}",
    "decision.stop_never": "- `{scenario}`: speculation pays at every measured concurrency (up to {c})",
    "decision.stop_always": "- `{scenario}`: speculation never pays at the measured concurrencies",
    "decision.counters_heading": "### Spec-decode counters (/metrics)",
    "decision.counters_header": "| Scenario | Concurrency | K | Accept len | Accepted by position (cumulative) | "
    "Conditional | Running batch mean (peak) | Drafted tok/s | Accepted tok/s | Wasted tok/s |",
    "decision.positions_heading": "### The marginal value of each draft position",
    "decision.positions_lead": "Gain = Total tok/s of K=j minus K=j−1 in the same cell; its interval is the "
    "interval "
    "of their ratio times K=j−1's throughput.",
    "decision.position_item": "- Position {j} is accepted {rate} of the time ({cond} when position {prev} "
    "was): {gains}",
    "decision.position_item_first": "- Position 1 is accepted {rate} of the time: {gains}",
    "decision.position_gain": "{sign} {value} tok/s at {scenario} c={c}",
    "decision.position_adds": "adds",
    "decision.position_costs": "costs",
    "decision.position_gain_zero": "{value} tok/s at {scenario} c={c} (not distinguishable from zero)",
    "decision.positions_header": "| Position | Accepted (cumulative) | Conditional | {columns} |",
    "decision.warn_heading": "### ⚠ Acceptance length and throughput disagree",
    "decision.warn_lead": "In these cells the larger K accepts more tokens per step yet serves fewer tokens per "
    "second: verification cost dominates at that batch.",
    "decision.warn_item": "- `{scenario}` K={low_k}→{high_k}: {cells}",
    "decision.warn_cell": "c={c} (accept length {low_accept}→{high_accept}, throughput {ratio})",
    # verification: a verification run's section: the schedule against the best fixed K
    "verification.heading": "## Verification of the K schedule",
    "verification.lead": "This run verifies the schedule `{schedule}` (keyed on {keyed}) recommended by `{sweep}` "
    "({path}) against its best fixed K = {k}: the same grid and rounds, each as one arm "
    "(`{schedule_arm}` and `{fixed_arm}`).",
    "verification.keyed.running_batch": "the running batch",
    "verification.keyed.client_concurrency": "client concurrency",
    "verification.header": "| Scenario | Concurrency | Running batch | Schedule's K | Traffic weight | "
    "Schedule / {fixed_arm} | Interval | Verdict |",
    "verification.gain": "- Realised gain of the schedule over {fixed_arm}, weighted by {traffic}: {gain}, "
    "**{verdict}** (tie band ±{band}%).",
    "verification.traffic.plan": "the plan's `[traffic]`",
    "verification.traffic.equal": "equal weights (the plan has no `[traffic]`)",
    "verification.gain_interval": "- Interval: the weighted mean of the cells' log-ratio interval ends (each the "
    "verdict analysis' t interval at {level}%, with its degrees of freedom); exact when the "
    "cells' errors move together, wider otherwise.",
    "verification.gain_single": "- Single measurements (one round): the gain has no interval, it is a "
    "point estimate; rerun with `rounds ≥ 2`.",
    "verification.fixed_wins": "- Cells where {fixed_arm} beats the schedule: {cells}.",
    "verification.no_fixed_wins": "- {fixed_arm} beats the schedule in no cell.",
    "verification.schedule_wins": "- Cells the schedule wins: {cells}.",
    "verification.verdict.wins": "wins",
    "verification.verdict.loses": "loses",
    "verification.verdict.tie": "tie",
    "verification.verdict.unsure": "unsure",
    "verification.verdict.single": "single",
    "verification.boundary_heading": "### At the schedule's boundaries",
    "verification.boundary_lead": "The rerun also ran {probes} in `{scenario}` (at and between the schedule's boundaries: each boundary's last and first batch, each inner range's geometric midpoint) and the fixed K on each side of every boundary beside the best fixed K ({arms}). Each cell is compared with the two K of the boundary nearest it: the K of the range below it and of the range above it. A **collapse** is the schedule below both by more than the tie band (±{band}%), by the verdict analysis' intervals: vLLM #49548, K keyed on a count that flips step to step at the boundary.",
    "verification.boundary_header": "| Scenario | Concurrency | Running batch | Schedule's K | Boundary | Schedule / K below | Schedule / K above | K above / K below | Drafted K (share at K above) | Collapse |",
    "verification.collapse_yes": '**collapse**',
    "verification.boundary_probe_note": "`*`: a concurrency the rerun added (not in the sweep's grid; left out of the gain above). Drafted K: drafted tokens per draft from /metrics, and the share of drafts at the K above the boundary it implies.",
    "verification.collapse": '- **Collapse at boundary {b}|{b1}** (K={lo}→K={hi}): {cells}, the schedule is below both fixed K. If it persists after moving the boundary, deploy the best fixed K.',
    "verification.move_down": '- Boundary {b}|{b1} (K={lo}→K={hi}): **move it down**, the lower range ending at {target} at most: K={hi} is faster at the batches above that.',
    "verification.move_up": '- Boundary {b}|{b1} (K={lo}→K={hi}): **move it up**, the lower range ending at {target} at least: K={lo} is faster up to there.',
    "verification.move_conflict": '- Boundary {b}|{b1} (K={lo}→K={hi}): its cells disagree on the way to move it; rerun with more rounds.',
    "verification.move_none": "- Boundary {b}|{b1} (K={lo}→K={hi}): keep it (no cell shows the other side's K faster, no collapse).",
    "verification.boundary_single": '- Single measurements: collapses and moves rest on point estimates (unverified); rerun with `rounds ≥ 2`.',
    "verification.flip_note": "- vLLM exposes no gauge of the K it runs, so flipping is inferred from the drafted tokens per draft, not read: a mix of two K at a boundary is also what a closed loop's batch moving by ±1 gives, so the mix alone flags nothing; the collapse is the flag.",
    # greedy: the greedy equivalence check, the report's first section
    "greedy.heading": "## Greedy equivalence check",
    "greedy.heading_bad": "## ⚠ Greedy equivalence check: an arm's output differs",
    "greedy.lead": "After warmup in each server session, every arm answered the same {n} prompts at "
    "temperature 0 ({tokens} tokens at most), twice; the answers are compared with `{ref}`'s "
    "token by token (character by character when the server returned no token ids). Real servers "
    "differ without a bug (FP8 KV cache, tensor-parallel numerics, batch shape), so a difference "
    "counts only when it comes earlier than the control's: a repeat of the same arm.",
    "greedy.same": "- `{arm}`: the same output as `{ref}` on all {n} prompts.",
    "greedy.within": "- `{arm}`: the same as `{ref}` within the control ({k} of {n} prompts differ, none "
    "earlier than a repeat of the same arm does).",
    "greedy.diverges": "- `{arm}`: **output differs** — on {k} of {n} prompts earlier than the control; "
    "the first at prompt {prompt}, {unit} {position}: `{ref}` “{expected}”, `{arm}` “{got}”.",
    "greedy.not_compared": "- `{arm}`: differs from `{ref}` in more than speculation: not compared.",
    "greedy.no_answers": "- `{arm}`: nothing to compare ({reason}).",
    "greedy.unit.token": "token",
    "greedy.unit.char": "character",
    "greedy.control": "- Control: {items}.",
    "greedy.control_item": "`{arm}` answered {k} of {n} prompts differently the second time "
    "({sessions} sessions)",
    "greedy.problem": "- Not read: {problem}",
    # slo: throughput under the plan's latency SLO ([slo], analysis/slo.py)
    "slo.heading": "## Under the SLO",
    "slo.lead": "Limits: {limits}. A request meets the SLO when it stays under every limit; attainment is the share of requests that do (failed requests count as misses), goodput the requests per second that do. Intervals: {level}% Wilson intervals on the requests over the design effect of the server sessions (docs/statistics.md, Attainment). An arm is shown to meet the SLO when each limit's interval lies at or above its share, shown to fail when one lies below it, and unsure otherwise.",
    "slo.limit_plain": "{label} for {share}% of requests",
    "slo.limit_pct": "{label}",
    "slo.scenario_limits": "`{scenario}`: {limits}",
    "slo.header": "| Scenario | Concurrency | Arm | Total tok/s | Attainment | Goodput (req/s) | Closest limit | SLO |",
    "slo.row": "| {scenario} | {c} | `{arm}` | {tput} | {att} | {goodput} | {worst} | {status} |",
    "slo.interval": "{value} ({low} … {high})",
    "slo.worst": "{metric} {observed} ms (limit {limit} ms)",
    "slo.status.meets": "meets",
    "slo.status.fails": "**fails**",
    "slo.status.unsure": "unsure",
    "slo.status.no_data": "no per-request data",
    "slo.left_out": "- {n} measurements have no per-request latencies here (another client, or a client that fell behind) and are left out.",
    "slo.one_session": "- {n} of {total} rows rest on one server session: their intervals cover the spread of requests within it, not how one server start differs from another (docs/statistics.md, Attainment); run `rounds >= 2`.",
    "slo.choices_heading": "### The choice under the SLO",
    "slo.objective_goodput": "The plan's objective is goodput: each choice is the arm with the most requests a second meeting the SLO among those shown to meet it (a point estimate; the tie band's rule for K is not applied).",
    "slo.choice_fastest": "- `{scenario}` c={c}: `{arm}` — the fastest arm, and it meets the SLO",
    "slo.choice_other": "- `{scenario}` c={c}: `{arm}` meets the SLO, {ratio} against the fastest, `{fastest}`, which {why}",
    "slo.fastest_fails": "fails it ({misses})",
    "slo.fastest_unsure": "is not shown to meet it ({att})",
    "slo.choice_unsure": "  - faster, attainment unsure: {items}",
    "slo.unsure_item": "`{arm}` {att}",
    "slo.choice_none": "- `{scenario}` c={c}: **no arm is shown to meet the SLO**; the closest, `{arm}`, {misses}",
    "slo.closest_fails": "misses it: {att} of requests meet it, {need}% needed{limits}",
    "slo.closest_unsure": "is not shown to meet it: {att} of requests meet it, {need}% needed{limits}",
    "slo.miss_item": "{metric} {observed} ms against {limit} ms",
    "slo.single": "- **Best fixed arm under the SLO**: `{arm}` (shown to meet it in every cell the traffic weighs{others})",
    "slo.single_others": "; also meeting it everywhere: {arms}",
    "slo.single_none": "- **No fixed arm is shown to meet the SLO in every cell** the traffic weighs: {items}",
    "slo.single_item": "`{arm}` not at {cells}",
    "slo.schedule": "- **K schedule under the SLO** ({keyed}): {ranges}{config}",
    "slo.schedule_config": "; `--speculative-config '{config}'`",
    "slo.schedule_no_spec": " (no speculation: no `--speculative-config`)",
    "slo.schedule_without": "  - No K meets the SLO at {cells}: the schedule takes the closest K there.",
    "slo.latency_heading": "### Latency, paired by round",
    "slo.latency_lead": "Each limit's metric as the client measured it per measurement ({metrics}), compared the way throughput is (docs/statistics.md): the paired log ratio over rounds, its {level}% interval, the tie band of ±{band}%. Ratio: the chosen arm's latency over the other's (below 1: lower).",
    "slo.latency_header": "| Scenario | Concurrency | Metric | Arm | Against | Ratio | Verdict |",
    "slo.latency_row": "| {scenario} | {c} | {metric} | `{arm}` | `{other}` | {ratio} | {verdict} |",
    "slo.lat.lower": "lower",
    "slo.lat.higher": "higher",
    "slo.lat.tie": "tie",
    "slo.lat.unsure": "unsure",
    "slo.lat.single": "single measurement",
    "slo.sep": "; ",
    "slo.summary_choice": "- **Under the SLO** ({limits}): {items}",
    "slo.summary_item": "{where} → `{arm}`{fastest}",
    "slo.summary_fastest_fails": " (the fastest, `{arm}`, fails it)",
    "slo.summary_fastest_unsure": " (the fastest, `{arm}`, is not shown to meet it)",
    "slo.summary_item_none": "{where} → none meets it (closest `{arm}`: {misses})",
    "slo.summary_fixed": "- **Best fixed arm under the SLO**: `{arm}`{fastest}",
    "slo.summary_fixed_differs": " (the fastest arm without the SLO, `{arm}`, is not shown to meet it everywhere)",
    "slo.summary_fixed_none": "- **No fixed arm is shown to meet the SLO everywhere** the traffic weighs",
    # categories: per category: category-pure scenarios and their best K per load
    "categories.heading": "## Per category",
    "categories.lead": "Each scenario below sends one category's prompts (category-pure cells), so the "
    "server's `/metrics` acceptance is that category's. The best K is the K sweep's choice "
    "per cell (the smaller K within the tie band).",
    "categories.best_item": "- **{category}** ({scenarios}): {runs}",
    "categories.run_to": "K={k} to c={c}",
    "categories.run_from": "K={k} from c={c}",
    "categories.run_between": "K={k} at c={lo}–{hi}",
    "categories.run_only": "K={k} at c={c}",
    "categories.run_all": "K={k} at every load (c={lo}–{hi})",
    "categories.unverified": " (some choices rest on one round: unverified)",
    "categories.unsure": " (unsure at c={cs}: the fastest K is not shown faster)",
    "categories.sep": "; ",
    "categories.header": "Category | c | {spec} | Total tok/s | TPOT(ms) | Accept len | "
    "Per-position acceptance",
    # compare: two runs compared (History's compare, `dspark-tui compare`)
    "compare.title": "# Two runs compared",
    "compare.a": "- A: `{name}` (`{path}`)",
    "compare.b": "- B: `{name}` (`{path}`)",
    "compare.ratio": "Ratio = B / A; a throughput ratio > 1 means B is faster, a latency ratio < 1 "
    "means B is faster.",
    "compare.matched": "- Matched cells: {n}; only in A: {only_a}; only in B: {only_b}",
    "compare.summary": "- Geometric mean Total tok/s ratio: {geo}; cells where B is faster: {faster}/{n}",
    "compare.none": "The two runs share no (arm, scenario, concurrency) cell.",
    "compare.arm": "- `{arm}`: geometric mean Total tok/s ratio {geo}; B faster in {faster}/{n} cells",
    "compare.differ": "- ⚠ {what} differ: {detail}",
    "compare.model": "models",
    "compare.command": "server commands",
    "compare.prompts": "prompts",
    "compare.warmup": "warmup requests",
    # the client's health (report header) and the running-batch schedule's notes (decision)
    "report.client_kept_up": "- Client health: kept up in all {n} measurements (event-loop lag p99 at "
    "most {lag} ms, token gaps read together at most {same})",
    "report.client_behind": "- Client fell behind in {k} of {n} measurements ({items}); their TTFT, TPOT, "
    "ITL and E2E are left out of the tables and latency comparisons (limits: over {same_limit} of "
    "token gaps read in one burst with the previous token while the event-loop lag p99 was at least "
    "{lag_fraction} of the mean ITL and {floor} ms; docs/client.md). {throughput}",
    "report.client_throughput_stands": "Their Total tok/s stands: a late read moves a request's end by "
    "at most the lag (p99 at most {lag} ms, against a mean E2E of {e2e} ms)",
    "report.client_throughput_doubtful": "Their Total tok/s is doubtful too: the lag (p99 up to {lag} ms) "
    "is {share} of the mean E2E ({e2e} ms), and in a closed loop each next request waits for it",
    "decision.deploy_schedule_lead_thin": "Some cells' running batch was read fewer than {min} times ({cells}), "
    "too few to tell its steady state from the ramp at the cell's ends, so the table is keyed on "
    "the client's concurrency; rerun with a smaller `scrape_interval_s` or longer cells:",
    "decision.deploy_unsure": "- **Unverified**: {n} of {total} choices are unsure (their intervals cross the "
    "tie band: {cells}); an interval that decides nothing verifies nothing — measure more rounds.",
    "decision.deploy_wide_merge": "- The anchor at batch {batch} joins cells whose concurrencies differ by more "
    "than {span}x ({cells}): their running batches overlapped, so one K = {k} serves both loads.",
    "decision.deploy_covered": "- The anchor at batch {batch} ({cells}, K = {k}) lies within one batch of the "
    "previous one, whose range covers it.",
    "decision.deploy_readings": "{n} readings",
}
