"""Every sentence the report can say, in Chinese (the seed's language) and English.

Templates take only computed values; nothing here states a fact on its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from dspark_tui.model import UserError

LANGS = ("zh", "en")

_ZH: dict[str, str] = {
    "summary_heading": "## 结论",
    "summary_deploy": "- **{where}**：部署 {setting}（{cells} 个已判定单元中胜 {wins} 个{extra}）",
    "summary_even": "- **{where}**：两者相当（{cells} 个已判定单元中 {ties} 个持平{extra}），任选其一",
    "summary_mixed": "- **{where}**：没有一致的胜者（{cells} 个已判定单元{extra}），按场景看下文",
    "summary_unsure": "- **{where}**：太接近，无法判定（{n} 个单元未定）",
    "summary_unsure_extra": "；另有 {n} 个未定",
    "summary_single": "- 把握：每个单元只测了一次，没有置信区间；差距小于 {band}% 记为持平，"
    "更大的差距也可能只是噪声。用 `rounds ≥ 2` 重跑以得到判定。",
    "summary_sure": "- 把握：{total} 个对比中 {wins} 个胜出、{ties} 个持平（区间在 ±{band}% 以内）、"
    "{unsure} 个未定{below}；区间为 {level}% 配对 t 区间，基于 {rounds} 轮服务端会话"
    "（方法见 docs/statistics.md）。",
    "summary_below": "（见下文）",
    "summary_sure_external": "- 把握：{total} 个对比中 {wins} 个胜出、{ties} 个持平（区间在 ±{band}% 以内）、"
    "{unsure} 个未定{below}；区间为 {level}% 配对 t 区间，基于每个配置 {rounds} 轮测量"
    "（方法见 docs/statistics.md）。",
    "summary_prior": "会话间噪声用了声明的先验（{prior}）。",
    "summary_nodes": "各轮分布在 {nodes} 个节点上，每轮的各配置都在同一节点上测量、在节点内配对{unpaired}；"
    "区间针对的是这 {nodes} 个节点。",
    "summary_nodes_unpaired": "（配置不在同一节点、未配对的轮次：{n}）",
    "summary_node_differs": "- 注意：`{b}` / `{a}` 的比值在节点之间不同（节点均值最多相差 {spread}；"
    "{nodes} 个节点的轮次效应 F 检验，p {p}），可能有节点与其他节点不一样；判定不变，只对这些节点整体成立。",
    "summary_unreplicated": "没有会话重复：{arms} 的服务端在轮次之间没有重启（外部服务端），"
    "区间只覆盖会话内噪声。",
    "summary_unreplicated_prior": "{arms} 的服务端在轮次之间没有重启（外部服务端）：其会话偏移不会随轮次"
    "平均掉，区间按声明的先验（{prior}）计入了这一项。",
    "external_server": "- 外部服务端 `{arm}`：{url}{details}（不由 dspark-tui 启动或停止）",
    "nodes_line": "- 节点：{nodes}",
    "node_rounds": "`{node}`（第 {rounds} 轮）",
    "summary_simulated": "- 注意：本次在模拟器（dspark_tui.sim）上测得，数字来自模型而非真实 GPU；"
    "部署哪个配置，要由 GPU 服务器上的一次运行来决定。",
    "summary_sim_favours": "- **{where}**：模拟器上 {setting} 更优"
    "（{cells} 个已判定单元中胜 {wins} 个{extra}）",
    "summary_k_range": "{lo}–{hi} → K={k}",
    "summary_k_keyed_batch": "按服务端实测的运行 batch",
    "summary_k_keyed_client": "按客户端并发，本次没有 `/metrics`",
    "summary_k_deploy": "- **部署 K 调度**（{keyed}）：{ranges}（`--speculative-config` 见下文）",
    "summary_k_sim": "- **模拟器给出的 K 调度**（{keyed}）：{ranges}",
    "summary_k_single": "- 只能用一个固定 K 时：K={k}",
    "summary_k_single_sim": "- 模拟器上最好的固定 K：K={k}",
    "summary_charts": "- 图表：{links}",
    "status_completed": "已完成",
    "status_completed_skipped": "已完成，{skipped} 个跳过",
    "status_incomplete": "未完成",
    "chart.throughput": "Total tok/s 随并发",
    "chart.margin": "提升及其区间",
    "chart.latency": "TPOT 与 TTFT 随并发",
    "chart.acceptance": "各位置接受率",
    "charts_heading": "## 图表",
    "unsure_heading": "## 未定单元",
    "unsure_lead": "以下单元的区间跨过了持平带的边界：既不能判胜，也不能判持平。",
    "unsure_item": "- `{scenario}` c={c}：`{leader}` 领先 {margin}（区间 {low} … {high}），{hint}",
    "unsure_more": "再测约 {n} 轮可能判定",
    "unsure_edge": "差距贴近持平带边界，多测也难以判定",
    "verdict_col": "判定",
    "interval_col": "提升区间",
    "verdict.wins": "胜出",
    "verdict.tie": "持平",
    "verdict.unsure": "未定",
    "verdict.single": "单次",
    "title": "# {backend} {subject} 对比报告",
    "result_dir": "- 结果目录：`{path}`",
    "model": "- 模型：`{model}`",
    "backend": "- 后端：{backend}",
    "compared": "- 对比参数：{settings}",
    "warmup": "- Warmup：{n} 条",
    "client": "- 压测客户端：`{client}`",
    "cells_line": "- 单元：{status} — {ok} 个完成，{skipped}{failed} 个失败，{missing} 个未测"
    "（共 {total} 个）",
    "cells_skipped": "{n} 个跳过，",
    "server_line_none": "- 服务端指标：无（本次运行没有采集 `/metrics`，下文不推断原因）",
    "server_line_not_started": "- 服务端指标：无（服务没有启动：{reason}）",
    "server_line_some": "- 服务端指标：{n} 个单元带有 `/metrics` 摘要（接受长度、KV cache、抢占）",
    "source_line": "- 数据来源：{source}",
    "client_kept_up": "- 客户端状态：{n} 次测量全部跟上（事件循环延迟 p99 最高 {lag} ms，"
    "同一次读取到的 token 间隔最多 {same}）",
    "client_behind": "- 客户端落后：{k}/{n} 次测量（{items}）；这些测量的 TTFT、TPOT、ITL、E2E "
    "不进表格和延迟比较（阈值：超过 {same_limit} 的 token 间隔与前一个 token 在同一次读取中到达，"
    "或事件循环延迟 p99 超过中位 ITL 的 {lag_fraction} 且不低于 {floor} ms；"
    "见 docs/client.md）。{throughput}",
    "client_throughput_stands": "它们的 Total tok/s 仍然成立：迟读只把请求结束推迟至多一个延迟"
    "（p99 最高 {lag} ms，平均 E2E {e2e} ms）",
    "client_throughput_doubtful": "它们的 Total tok/s 也可疑：延迟（p99 最高 {lag} ms）达到平均 E2E "
    "（{e2e} ms）的 {share}，闭环中每个请求都晚发出这么久",
    "pairs_line": "- 对比方式：共 {n} 个 arm；winner 表在全部 arm 中取 Total tok/s 最高者，"
    "提升 = 第一 / 第二 − 1；趋势和异常按每个 arm 对基线 `{base}` 计算（{pairs}）",
    "core_heading": "## 核心指标对比",
    "server_heading": "## 服务端指标",
    "winner_heading": "## 吞吐 winner 统计",
    "margin_col": "提升",
    "winner_col": "Winner (Total tok/s)",
    "runner_up_col": "第二",
    "findings_heading": "## 关键发现",
    "no_findings": "可比较的单元不足（需要同一场景、同一并发下至少两个 arm 都成功）。",
    "band_heading_decisive": "### {n}. 并发是决定性因素",
    "band_heading_uniform": "### {n}. `{arm}` 在所有并发区间都更优",
    "band_heading_plain": "### {n}. 按并发区间的胜负",
    "band.single": "低并发",
    "band.low": "中低并发",
    "band.mid": "中并发",
    "band.high": "高并发",
    "band_arm": "- **{name}（{label}）**：`{arm}` 赢 {wins}/{cells} 个单元{range}{ties}{latency}。",
    "band_even": "- **{name}（{label}）**：{both}基本持平，"
    "{ties}/{cells} 个单元差异在 {tie}% 以内{exceptions}。",
    "band_mixed": "- **{name}（{label}）**：没有一致的 winner（{counts}）。",
    "win_range": "（提升 {low}–{high}，最大在 {where}）",
    "win_single": "（提升 {high}，{where}）",
    "win_same": "（每个都提升 {high}）",
    "both.2": "两者",
    "both.n": "各 arm ",
    "clause_sep": "；",
    "ties_note": "，另有 {n} 个持平",
    "latency_note": "；其中 P99 E2E 也更低的有 {n}/{m}",
    "exceptions": "；例外：{items}",
    "exception_item": "{where} `{arm}` 高 {margin}",
    "counts_item": "`{arm}` 赢 {n}",
    "ties_item": "持平 {n}",
    "best_heading": "### {n}. 各场景的最佳配置",
    "best_lead_unanimous": "`{arm}` 在 {scenarios} 的每个并发下都胜出。",
    "best_table_header": "| 场景 | 最佳 {spec} | 依据 |",
    "best_even": "基本持平",
    "best_mixed": "随并发变化",
    "best_reason_arm": "赢 {wins}/{cells} 个并发{range}",
    "best_reason_even": "{ties}/{cells} 个并发差异在 {tie}% 以内",
    "best_reason_mixed": "{counts}",
    "gap_heading": "### {n}. `{scenario}` 的差距随并发变化最大",
    "gap_lead.widens": "`{scenario}` 随并发增加，`{leader}` 对 `{trailer}` 的领先拉大"
    "（c={first} 时 {first_text}，c={last} 时 {last_text}）：",
    "gap_lead.narrows": "`{scenario}` 随并发增加，`{leader}` 对 `{trailer}` 的领先缩小"
    "（c={first} 时 {first_text}，c={last} 时 {last_text}）：",
    "gap_lead.reverses": "`{scenario}` 随并发增加发生反转"
    "（c={first} 时 {first_text}，c={last} 时 {last_text}）：",
    "gap_col_conc": "并发",
    "gap_col_gap": "差距",
    "gap_even": "基本持平",
    "gap_lead": "{arm} 高 {margin}",
    "gap_latency": "c={c} 时，`{slow}` 的 Mean TPOT 为 {slow_tpot} ms、P99 E2E 为 {slow_e2e} ms，"
    "`{fast}` 为 {fast_tpot} ms、{fast_e2e} ms。",
    "gap_no_server": "本次运行没有服务端指标，无法判断差距来自验证开销还是 KV cache 压力（未测量）。",
    "gap_others": "其他场景：{items}。",
    "gap_other_item": "`{scenario}` {first_text} → {last_text}",
    "outlier_heading": "### {n}. 异常单元",
    "outlier_item": "- `{scenario} c={c}`：{leader} 高 {margin}，而相邻的 {neighbours}，"
    "偏离邻居连线 {deviation}（ln 比值），是一个明显的 outlier。",
    "outlier_neighbour": "c={c} 是 {text}",
    "outlier_no_server": "  本次运行没有服务端指标，原因未测量；建议重复测量该单元以确认它不是噪声。",
    "outlier_server": "  服务端证据：{evidence}（邻居：{neighbours}）。",
    "no_outliers": "没有发现明显偏离相邻并发的单元（阈值：ln 比值偏离 {threshold}）。",
    "evidence": "接受长度 {accept}；KV 峰值 {kv}；抢占 {preempt}",
    "evidence_prefix": "服务端证据：",
    "failed_heading": "## 失败与缺失的单元",
    "failed_item": "- `{arm}` / `{scenario}` / c={c}：失败 — {reason}",
    "skipped_item": "- `{arm}` / `{scenario}` / c={c}：跳过 — {reason}",
    "missing_item": "- `{arm}` / `{scenario}` / c={c}：缺失（没有结果文件）",
    "problem_item": "- `{path}`：{reason}",
    "problems_lead": "读取时跳过的文件：",
    "advice_heading": "## 优化建议",
    "recommend_heading": "### 推荐配置",
    "recommend_header": "| 负载特征 | 推荐 {setting} | 说明 |",
    "rec_band": "{names}（{label}）",
    "rec_long_input": "长输入（input ≥ {n}）：{scenarios}",
    "rec_long_output": "长输出（output ≥ {n}）：{scenarios}",
    "rec_short": "短输入短输出：{scenarios}",
    "rec_even": "{values} 均可",
    "rec_mixed": "看并发",
    "rec_note_arm": "赢 {wins}/{cells} 个单元{range}{latency}{exceptions}",
    "rec_note_even": "{ties}/{cells} 个单元差异在 {tie}% 以内{exceptions}",
    "rec_note_mixed": "{counts}",
    "rec_latency": "；P99 E2E 更低 {n}/{m}",
    "next_heading": "### 下一步",
    "next_high": "如果业务以高并发为主（{label}），将默认服务改为 {setting}。",
    "next_uniform": "在所有测试的并发区间 {setting} 都更优：将默认服务改为 {setting}。",
    "next_high_sim": "模拟器上高并发（{label}）{setting} 领先；在 GPU 服务器上运行这个计划，"
    "由那次运行决定默认配置。",
    "next_uniform_sim": "模拟器上所有测试的并发区间 {setting} 都领先；在 GPU 服务器上运行这个计划，"
    "由那次运行决定默认配置。",
    "recommend_header_sim": "| 负载特征 | 模拟器上更优的 {setting} | 说明 |",
    "recommend_heading_sim": "### 模拟器上各负载的结果",
    "next_route": "如果业务混合，可考虑按并发度或输入长度把请求路由到不同配置的服务实例。",
    "next_outlier": "重复测量 {cells}（至少 3 次），确认 outlier 是否可复现。",
    "next_unsure": "{n} 个单元仍未定（见“未定单元”）：增加 `bench.rounds` 或 "
    "`bench.adaptive_rounds` 后对它们重跑，或接受它们的差距不超过区间所示。",
    "next_server": "用 dspark-tui 重跑并采集 `/metrics`（接受长度、KV cache 使用率、抢占），"
    "为上面的结论补上服务端证据。",
    "next_resume": "补跑 {n} 个失败或缺失的单元（`dspark-tui run --resume {path}`）。",
    "next_none": "数据不足以给出建议。",
    "list_sep": "、",
    "and": "和",
}

_EN: dict[str, str] = {
    "summary_heading": "## Summary",
    "summary_deploy": "- **{where}**: deploy {setting} (wins {wins} of {cells} decided cells{extra})",
    "summary_even": "- **{where}**: either ({ties} of {cells} decided cells are ties{extra})",
    "summary_mixed": "- **{where}**: no consistent winner ({cells} decided cells{extra}); see the "
    "scenarios below",
    "summary_unsure": "- **{where}**: too close to call ({n} unsure)",
    "summary_unsure_extra": "; {n} more unsure",
    "summary_single": "- How sure: one measurement per cell, so no intervals; margins under "
    "{band}% count as ties and larger ones may still be noise. Re-run with `rounds >= 2` "
    "for verdicts.",
    "summary_sure": "- How sure: of {total} comparisons, {wins} are wins and {ties} ties (the "
    "interval inside ±{band}%), {unsure} unsure{below}; intervals are {level}% paired t "
    "intervals over {rounds} server sessions per arm (method: docs/statistics.md).",
    "summary_below": " (listed below)",
    "summary_sure_external": "- How sure: of {total} comparisons, {wins} are wins and {ties} ties "
    "(the interval inside ±{band}%), {unsure} unsure{below}; intervals are {level}% paired t "
    "intervals over {rounds} rounds per arm (method: docs/statistics.md).",
    "summary_prior": "The session noise leans on a stated prior ({prior}).",
    "summary_nodes": "Rounds ran on {nodes} nodes, both arms of each round on one node and paired "
    "within it{unpaired}; the intervals are for these {nodes} nodes.",
    "summary_nodes_unpaired": " (rounds left unpaired, arms on different nodes: {n})",
    "summary_node_differs": "- Caveat: the ratio `{b}` / `{a}` differs between nodes (their means "
    "by up to {spread}; F test of the round effects on {nodes} nodes, p {p}); a node may be "
    "unlike the others. The verdicts stand, for these nodes together.",
    "summary_unreplicated": "No session replication: the server of {arms} was not restarted "
    "between rounds (an external server); intervals cover within-session noise only.",
    "summary_unreplicated_prior": "The server of {arms} was not restarted between rounds (an "
    "external server): its session offset does not average out over rounds, so the intervals add "
    "it from the stated prior ({prior}).",
    "nodes_line": "- Nodes: {nodes}",
    "node_rounds": "`{node}` (rounds {rounds})",
    "external_server": "- External server `{arm}`: {url}{details} (not started or stopped by "
    "dspark-tui)",
    "summary_simulated": "- Caveat: measured on the simulator (dspark_tui.sim), not on a GPU: these are "
    "the model's numbers, and a run of this plan on the GPU server decides what to deploy.",
    "summary_sim_favours": "- **{where}**: the simulator favours {setting} (wins {wins} of {cells} "
    "decided cells{extra})",
    "summary_k_range": "{lo}–{hi} → K={k}",
    "summary_k_keyed_batch": "by the running batch the server saw",
    "summary_k_keyed_client": "by client concurrency; this run has no `/metrics`",
    "summary_k_deploy": "- **Deploy the K schedule** ({keyed}): {ranges} (`--speculative-config` "
    "below)",
    "summary_k_sim": "- **The simulator's K schedule** ({keyed}): {ranges}",
    "summary_k_single": "- With one fixed K for all traffic: K={k}",
    "summary_k_single_sim": "- The simulator's best fixed K: K={k}",
    "summary_charts": "- Charts: {links}",
    "status_completed": "completed",
    "status_completed_skipped": "completed, {skipped} skipped",
    "status_incomplete": "incomplete",
    "chart.throughput": "Total tok/s vs concurrency",
    "chart.margin": "Margin with its interval",
    "chart.latency": "TPOT and TTFT vs concurrency",
    "chart.acceptance": "Acceptance by draft position",
    "charts_heading": "## Charts",
    "unsure_heading": "## Unsure cells",
    "unsure_lead": "These cells' intervals cross an edge of the tie band: neither a win nor a tie.",
    "unsure_item": "- `{scenario}` c={c}: `{leader}` leads by {margin} (interval {low} … {high}); {hint}",
    "unsure_more": "about {n} more round(s) would likely settle it",
    "unsure_edge": "the margin sits near the band's edge; more rounds are unlikely to settle it",
    "verdict_col": "Verdict",
    "interval_col": "Margin interval",
    "verdict.wins": "wins",
    "verdict.tie": "tie",
    "verdict.unsure": "unsure",
    "verdict.single": "single",
    "title": "# {backend} {subject} comparison report",
    "result_dir": "- Result directory: `{path}`",
    "model": "- Model: `{model}`",
    "backend": "- Backend: {backend}",
    "compared": "- Compared: {settings}",
    "warmup": "- Warmup: {n} requests",
    "client": "- Benchmark client: `{client}`",
    "cells_line": "- Cells: {status} — {ok} ok, {skipped}{failed} failed, {missing} not run "
    "(of {total})",
    "cells_skipped": "{n} skipped, ",
    "server_line_none": "- Server metrics: none (this run did not scrape `/metrics`; "
    "no causes are inferred below)",
    "server_line_not_started": "- Server metrics: none (the server did not start: {reason})",
    "server_line_some": "- Server metrics: {n} cells carry a `/metrics` summary "
    "(acceptance length, KV cache, preemptions)",
    "source_line": "- Source: {source}",
    "client_kept_up": "- Client health: kept up in all {n} measurements (event-loop lag p99 at "
    "most {lag} ms, token gaps read together at most {same})",
    "client_behind": "- Client fell behind in {k} of {n} measurements ({items}); their TTFT, TPOT, "
    "ITL and E2E are left out of the tables and latency comparisons (limits: over {same_limit} of "
    "token gaps read together with the previous token, or event-loop lag p99 over {lag_fraction} "
    "of the median ITL and at least {floor} ms; docs/client.md). {throughput}",
    "client_throughput_stands": "Their Total tok/s stands: a late read moves a request's end by "
    "at most the lag (p99 at most {lag} ms, against a mean E2E of {e2e} ms)",
    "client_throughput_doubtful": "Their Total tok/s is doubtful too: the lag (p99 up to {lag} ms) "
    "is {share} of the mean E2E ({e2e} ms), and in a closed loop each next request waits for it",
    "pairs_line": "- Pairs compared: {n} arms; the winner table takes the highest Total tok/s of all "
    "arms, margin = first / second - 1; trends and outliers compare each arm with the "
    "baseline `{base}` ({pairs})",
    "core_heading": "## Core metrics",
    "server_heading": "## Server metrics",
    "winner_heading": "## Throughput winners",
    "margin_col": "Margin",
    "winner_col": "Winner (Total tok/s)",
    "runner_up_col": "Runner-up",
    "findings_heading": "## Key findings",
    "no_findings": "Not enough comparable cells (two or more arms must succeed at the same "
    "scenario and concurrency).",
    "band_heading_decisive": "### {n}. Concurrency decides",
    "band_heading_uniform": "### {n}. `{arm}` wins in every concurrency band",
    "band_heading_plain": "### {n}. Wins by concurrency band",
    "band.single": "Low concurrency",
    "band.low": "Low-to-mid concurrency",
    "band.mid": "Mid concurrency",
    "band.high": "High concurrency",
    "band_arm": "- **{name} ({label})**: `{arm}` wins {wins}/{cells} cells{range}{ties}{latency}.",
    "band_even": "- **{name} ({label})**: about even, {ties}/{cells} cells within {tie}%{exceptions}.",
    "band_mixed": "- **{name} ({label})**: no consistent winner ({counts}).",
    "win_range": " (by {low}–{high}, most at {where})",
    "win_single": " (by {high}, {where})",
    "win_same": " (by {high} each)",
    "both.2": "",
    "both.n": "",
    "clause_sep": "; ",
    "ties_note": ", {n} more even",
    "latency_note": "; with a lower P99 E2E in {n}/{m}",
    "exceptions": "; exception: {items}",
    "exception_item": "{where} `{arm}` +{margin}",
    "counts_item": "`{arm}` wins {n}",
    "ties_item": "{n} even",
    "best_heading": "### {n}. Best setting per scenario",
    "best_lead_unanimous": "`{arm}` wins at every concurrency of {scenarios}.",
    "best_table_header": "| Scenario | Best {spec} | Evidence |",
    "best_even": "about even",
    "best_mixed": "depends on concurrency",
    "best_reason_arm": "wins {wins}/{cells} concurrencies{range}",
    "best_reason_even": "{ties}/{cells} concurrencies within {tie}%",
    "best_reason_mixed": "{counts}",
    "gap_heading": "### {n}. `{scenario}`: the gap moves most with concurrency",
    "gap_lead.widens": "As concurrency grows in `{scenario}`, the lead of `{leader}` over "
    "`{trailer}` widens ({first_text} at c={first}, {last_text} at c={last}):",
    "gap_lead.narrows": "As concurrency grows in `{scenario}`, the lead of `{leader}` over "
    "`{trailer}` narrows ({first_text} at c={first}, {last_text} at c={last}):",
    "gap_lead.reverses": "As concurrency grows in `{scenario}`, the winner flips "
    "({first_text} at c={first}, {last_text} at c={last}):",
    "gap_col_conc": "Concurrency",
    "gap_col_gap": "Gap",
    "gap_even": "about even",
    "gap_lead": "{arm} +{margin}",
    "gap_latency": "At c={c}, `{slow}` has a mean TPOT of {slow_tpot} ms and a P99 E2E of "
    "{slow_e2e} ms; `{fast}` has {fast_tpot} ms and {fast_e2e} ms.",
    "gap_no_server": "This run has no server metrics, so whether the gap comes from verification "
    "cost or KV-cache pressure was not measured.",
    "gap_others": "Other scenarios: {items}.",
    "gap_other_item": "`{scenario}` {first_text} → {last_text}",
    "outlier_heading": "### {n}. Outlier cells",
    "outlier_item": "- `{scenario} c={c}`: {leader} +{margin}, while {neighbours}; "
    "{deviation} (ln ratio) off the line through its neighbours, a clear outlier.",
    "outlier_neighbour": "c={c} is {text}",
    "outlier_no_server": "  This run has no server metrics, so the cause was not measured; "
    "repeat the cell to rule out noise.",
    "outlier_server": "  Server evidence: {evidence} (neighbours: {neighbours}).",
    "no_outliers": "No cell stands far from its neighbouring concurrencies "
    "(threshold: {threshold} in ln ratio).",
    "evidence": "acceptance length {accept}; KV peak {kv}; preemptions {preempt}",
    "evidence_prefix": "Server evidence: ",
    "failed_heading": "## Failed and missing cells",
    "failed_item": "- `{arm}` / `{scenario}` / c={c}: failed — {reason}",
    "skipped_item": "- `{arm}` / `{scenario}` / c={c}: skipped — {reason}",
    "missing_item": "- `{arm}` / `{scenario}` / c={c}: missing (no result file)",
    "problem_item": "- `{path}`: {reason}",
    "problems_lead": "Files skipped while reading:",
    "advice_heading": "## Recommendations",
    "recommend_heading": "### Recommended setting",
    "recommend_header": "| Load | Recommended {setting} | Why |",
    "rec_band": "{names} ({label})",
    "rec_long_input": "Long input (input ≥ {n}): {scenarios}",
    "rec_long_output": "Long output (output ≥ {n}): {scenarios}",
    "rec_short": "Short input and output: {scenarios}",
    "rec_even": "{values}: either",
    "rec_mixed": "depends on concurrency",
    "rec_note_arm": "wins {wins}/{cells} cells{range}{latency}{exceptions}",
    "rec_note_even": "{ties}/{cells} cells within {tie}%{exceptions}",
    "rec_note_mixed": "{counts}",
    "rec_latency": "; lower P99 E2E in {n}/{m}",
    "next_heading": "### Next steps",
    "next_high": "If the traffic is mostly high-concurrency ({label}), make {setting} the default.",
    "next_uniform": "{setting} wins in every tested concurrency band: make it the default.",
    "next_high_sim": "On the simulator {setting} leads at high concurrency ({label}); run this plan on "
    "the GPU server and let that run decide the default.",
    "next_uniform_sim": "On the simulator {setting} leads in every tested concurrency band; run this "
    "plan on the GPU server and let that run decide the default.",
    "recommend_header_sim": "| Load | Simulator favours {setting} | Why |",
    "recommend_heading_sim": "### What the simulator favours per load",
    "next_route": "For mixed traffic, consider routing by concurrency or input length to "
    "server instances with different settings.",
    "next_outlier": "Repeat {cells} (at least 3 times) to see whether the outlier reproduces.",
    "next_unsure": "{n} cells are still unsure (see Unsure cells): re-run them with more "
    "`bench.rounds` or `bench.adaptive_rounds`, or accept that their gap is no larger than "
    "their interval shows.",
    "next_server": "Re-run with dspark-tui scraping `/metrics` (acceptance length, KV-cache usage, "
    "preemptions) to back the findings above with server-side evidence.",
    "next_resume": "Re-run the {n} failed or missing cells (`dspark-tui run --resume {path}`).",
    "next_none": "Not enough data for a recommendation.",
    "list_sep": ", ",
    "and": "and",
}

_TEXTS = {"zh": _ZH, "en": _EN}


class Texts:
    """The sentence table of one language; `t("key", name=value)` fills a template."""

    def __init__(self, lang: str) -> None:
        if lang not in _TEXTS:
            raise UserError(f"unknown report language {lang!r} (choose from {', '.join(LANGS)})")
        self.lang = lang
        self._table = _TEXTS[lang]

    def __call__(self, key: str, **values: object) -> str:
        return self._table[key].format(**values)

    def join(self, items: Iterable[str]) -> str:
        return self._table["list_sep"].join(items)
