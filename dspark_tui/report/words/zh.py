"""Chinese (the seed's language): every sentence the reports and the comparison of two runs
say, one entry a key, namespaced by section (`section.key`). words/__init__.py reads it; en.py has
the same keys with the same placeholders (tests/report/test_words.py)."""

from __future__ import annotations

WORDS: dict[str, str] = {
    # report: the report's body: title, header, summary, findings, advice, unsure cells, failed cells
    "report.summary_heading": "## 结论",
    "report.summary_deploy": "- **{where}**：部署 {setting}（{cells} 个已判定单元中胜 {wins} 个{extra}）",
    "report.summary_even": "- **{where}**：两者相当（{cells} 个已判定单元中 {ties} 个持平{extra}），任选其一",
    "report.summary_mixed": "- **{where}**：没有一致的胜者（{cells} 个已判定单元{extra}），按场景看下文",
    "report.summary_unsure": "- **{where}**：太接近，无法判定（{n} 个单元未定）",
    "report.summary_unsure_extra": "；另有 {n} 个未定",
    "report.summary_single": "- 把握：每个单元只测了一次，没有置信区间；差距小于 {band}% 记为持平，"
    "更大的差距也可能只是噪声。用 `rounds ≥ 2` 重跑以得到判定。",
    "report.summary_sure": "- 把握：{total} 个对比中 {wins} 个胜出、{ties} 个持平（区间在 ±{band}% 以内）、"
    "{unsure} 个未定{below}；区间为 {level}% 配对 t 区间，基于 {rounds} 轮服务端会话"
    "（方法见 docs/statistics.md）。",
    "report.summary_below": "（见下文）",
    "report.summary_sure_external": "- 把握：{total} 个对比中 {wins} 个胜出、{ties} 个持平（区间在 ±{band}% 以内）、"
    "{unsure} 个未定{below}；区间为 {level}% 配对 t 区间，基于每个配置 {rounds} 轮测量"
    "（方法见 docs/statistics.md）。",
    "report.summary_prior": "会话间噪声用了声明的先验（{prior}）。",
    "report.summary_nodes": "各轮分布在 {nodes} 个节点上，每轮的各配置都在同一节点上测量、在节点内配对{unpaired}；"
    "区间针对的是这 {nodes} 个节点。",
    "report.summary_nodes_unpaired": "（配置不在同一节点、未配对的轮次：{n}）",
    "report.summary_node_differs": "- 注意：`{b}` / `{a}` 的比值在节点之间不同（节点均值最多相差 {spread}；"
    "{nodes} 个节点的轮次效应 F 检验，p {p}），可能有节点与其他节点不一样；判定不变，只对这些节点整体成立。",
    "report.summary_unreplicated": "没有会话重复：{arms} 的服务端在轮次之间没有重启（外部服务端），"
    "区间只覆盖会话内噪声。",
    "report.summary_unreplicated_prior": "{arms} 的服务端在轮次之间没有重启（外部服务端）：其会话偏移不会随轮次"
    "平均掉，区间按声明的先验（{prior}）计入了这一项。",
    "report.external_server": "- 外部服务端 `{arm}`：{url}{details}（不由 dspark-tui 启动或停止）",
    "report.nodes_line": "- 节点：{nodes}",
    "report.node_rounds": "`{node}`（第 {rounds} 轮）",
    "report.summary_simulated": "- 注意：本次在模拟器（dspark_tui.sim）上测得，数字来自模型而非真实 GPU；"
    "部署哪个配置，要由 GPU 服务器上的一次运行来决定。",
    "report.summary_sim_favours": "- **{where}**：模拟器上 {setting} 更优"
    "（{cells} 个已判定单元中胜 {wins} 个{extra}）",
    "report.summary_k_range": "{lo}–{hi} → K={k}",
    "report.summary_k_keyed_batch": "按服务端实测的运行 batch",
    "report.summary_k_keyed_client": "按客户端并发，本次没有 `/metrics`",
    "report.summary_k_deploy": "- **部署 K 调度**（{keyed}）：{ranges}（`--speculative-config` 见下文）",
    "report.summary_k_sim": "- **模拟器给出的 K 调度**（{keyed}）：{ranges}",
    "report.summary_k_single": "- 只能用一个固定 K 时：K={k}",
    "report.summary_k_single_sim": "- 模拟器上最好的固定 K：K={k}",
    "report.summary_charts": "- 图表：{links}",
    "report.status_completed": "已完成",
    "report.status_completed_skipped": "已完成，{skipped} 个跳过",
    "report.status_incomplete": "未完成",
    "report.chart.throughput": "Total tok/s 随并发",
    "report.chart.margin": "提升及其区间",
    "report.chart.latency": "TPOT 与 TTFT 随并发",
    "report.chart.acceptance": "各位置接受率",
    "report.charts_heading": "## 图表",
    "report.unsure_heading": "## 未定单元",
    "report.unsure_lead": "以下单元的区间跨过了持平带的边界：既不能判胜，也不能判持平。",
    "report.unsure_item": "- `{scenario}` c={c}：`{leader}` 领先 {margin}（区间 {low} … {high}），{hint}",
    "report.unsure_more": "再测约 {n} 轮可能判定",
    "report.unsure_edge": "差距贴近持平带边界，多测也难以判定",
    "report.verdict_col": "判定",
    "report.interval_col": "提升区间",
    "report.verdict.wins": "胜出",
    "report.verdict.tie": "持平",
    "report.verdict.unsure": "未定",
    "report.verdict.single": "单次",
    "report.title": "# {backend} {subject} 对比报告",
    "report.result_dir": "- 结果目录：`{path}`",
    "report.model": "- 模型：`{model}`",
    "report.backend": "- 后端：{backend}",
    "report.compared": "- 对比参数：{settings}",
    "report.warmup": "- Warmup：{n} 条",
    "report.client": "- 压测客户端：`{client}`",
    "report.cells_line": "- 单元：{status} — {ok} 个完成，{skipped}{failed} 个失败，{missing} 个未测"
    "（共 {total} 个）",
    "report.cells_skipped": "{n} 个跳过，",
    "report.server_line_none": "- 服务端指标：无（本次运行没有采集 `/metrics`，下文不推断原因）",
    "report.server_line_not_started": "- 服务端指标：无（服务没有启动：{reason}）",
    "report.server_line_some": "- 服务端指标：{n} 个单元带有 `/metrics` 摘要（接受长度、KV cache、抢占）",
    "report.source_line": "- 数据来源：{source}",
    "report.pairs_line": "- 对比方式：共 {n} 个 arm；winner 表在全部 arm 中取 Total tok/s 最高者，"
    "提升 = 第一 / 第二 − 1；趋势和异常按每个 arm 对基线 `{base}` 计算（{pairs}）",
    "report.core_heading": "## 核心指标对比",
    "report.server_heading": "## 服务端指标",
    "report.winner_heading": "## 吞吐 winner 统计",
    "report.margin_col": "提升",
    "report.winner_col": "Winner (Total tok/s)",
    "report.runner_up_col": "第二",
    "report.findings_heading": "## 关键发现",
    "report.no_findings": "可比较的单元不足（需要同一场景、同一并发下至少两个 arm 都成功）。",
    "report.band_heading_decisive": "### {n}. 并发是决定性因素",
    "report.band_heading_uniform": "### {n}. `{arm}` 在所有并发区间都更优",
    "report.band_heading_plain": "### {n}. 按并发区间的胜负",
    "report.band.single": "低并发",
    "report.band.low": "中低并发",
    "report.band.mid": "中并发",
    "report.band.high": "高并发",
    "report.band_arm": "- **{name}（{label}）**：`{arm}` 赢 {wins}/{cells} 个单元{range}{ties}{latency}。",
    "report.band_even": "- **{name}（{label}）**：{both}基本持平，"
    "{ties}/{cells} 个单元差异在 {tie}% 以内{exceptions}。",
    "report.band_mixed": "- **{name}（{label}）**：没有一致的 winner（{counts}）。",
    "report.win_range": "（提升 {low}–{high}，最大在 {where}）",
    "report.win_single": "（提升 {high}，{where}）",
    "report.win_same": "（每个都提升 {high}）",
    "report.both.2": "两者",
    "report.both.n": "各 arm ",
    "report.clause_sep": "；",
    "report.ties_note": "，另有 {n} 个持平",
    "report.latency_note": "；其中 P99 E2E 也更低的有 {n}/{m}",
    "report.exceptions": "；例外：{items}",
    "report.exception_item": "{where} `{arm}` 高 {margin}",
    "report.counts_item": "`{arm}` 赢 {n}",
    "report.ties_item": "持平 {n}",
    "report.best_heading": "### {n}. 各场景的最佳配置",
    "report.best_lead_unanimous": "`{arm}` 在 {scenarios} 的每个并发下都胜出。",
    "report.best_table_header": "| 场景 | 最佳 {spec} | 依据 |",
    "report.best_even": "基本持平",
    "report.best_mixed": "随并发变化",
    "report.best_reason_arm": "赢 {wins}/{cells} 个并发{range}",
    "report.best_reason_even": "{ties}/{cells} 个并发差异在 {tie}% 以内",
    "report.best_reason_mixed": "{counts}",
    "report.gap_heading": "### {n}. `{scenario}` 的差距随并发变化最大",
    "report.gap_lead.widens": "`{scenario}` 随并发增加，`{leader}` 对 `{trailer}` 的领先拉大"
    "（c={first} 时 {first_text}，c={last} 时 {last_text}）：",
    "report.gap_lead.narrows": "`{scenario}` 随并发增加，`{leader}` 对 `{trailer}` 的领先缩小"
    "（c={first} 时 {first_text}，c={last} 时 {last_text}）：",
    "report.gap_lead.reverses": "`{scenario}` 随并发增加发生反转"
    "（c={first} 时 {first_text}，c={last} 时 {last_text}）：",
    "report.gap_col_conc": "并发",
    "report.gap_col_gap": "差距",
    "report.gap_even": "基本持平",
    "report.gap_lead": "{arm} 高 {margin}",
    "report.gap_latency": "c={c} 时，`{slow}` 的 Mean TPOT 为 {slow_tpot} ms、P99 E2E 为 {slow_e2e} ms，"
    "`{fast}` 为 {fast_tpot} ms、{fast_e2e} ms。",
    "report.gap_no_server": "本次运行没有服务端指标，无法判断差距来自验证开销还是 KV cache 压力（未测量）。",
    "report.gap_others": "其他场景：{items}。",
    "report.gap_other_item": "`{scenario}` {first_text} → {last_text}",
    "report.outlier_heading": "### {n}. 异常单元",
    "report.outlier_item": "- `{scenario} c={c}`：{leader} 高 {margin}，而相邻的 {neighbours}，"
    "偏离邻居连线 {deviation}（ln 比值），是一个明显的 outlier。",
    "report.outlier_neighbour": "c={c} 是 {text}",
    "report.outlier_no_server": "  本次运行没有服务端指标，原因未测量；建议重复测量该单元以确认它不是噪声。",
    "report.outlier_server": "  服务端证据：{evidence}（邻居：{neighbours}）。",
    "report.no_outliers": "没有发现明显偏离相邻并发的单元（阈值：ln 比值偏离 {threshold}）。",
    "report.evidence": "接受长度 {accept}；KV 峰值 {kv}；抢占 {preempt}",
    "report.evidence_prefix": "服务端证据：",
    "report.failed_heading": "## 失败与缺失的单元",
    "report.failed_item": "- `{arm}` / `{scenario}` / c={c}：失败 — {reason}",
    "report.skipped_item": "- `{arm}` / `{scenario}` / c={c}：跳过 — {reason}",
    "report.missing_item": "- `{arm}` / `{scenario}` / c={c}：缺失（没有结果文件）",
    "report.problem_item": "- `{path}`：{reason}",
    "report.problems_lead": "读取时跳过的文件：",
    "report.advice_heading": "## 优化建议",
    "report.recommend_heading": "### 推荐配置",
    "report.recommend_header": "| 负载特征 | 推荐 {setting} | 说明 |",
    "report.rec_band": "{names}（{label}）",
    "report.rec_long_input": "长输入（input ≥ {n}）：{scenarios}",
    "report.rec_long_output": "长输出（output ≥ {n}）：{scenarios}",
    "report.rec_short": "短输入短输出：{scenarios}",
    "report.rec_even": "{values} 均可",
    "report.rec_mixed": "看并发",
    "report.rec_note_arm": "赢 {wins}/{cells} 个单元{range}{latency}{exceptions}",
    "report.rec_note_even": "{ties}/{cells} 个单元差异在 {tie}% 以内{exceptions}",
    "report.rec_note_mixed": "{counts}",
    "report.rec_latency": "；P99 E2E 更低 {n}/{m}",
    "report.next_heading": "### 下一步",
    "report.next_high": "如果业务以高并发为主（{label}），将默认服务改为 {setting}。",
    "report.next_uniform": "在所有测试的并发区间 {setting} 都更优：将默认服务改为 {setting}。",
    "report.next_high_sim": "模拟器上高并发（{label}）{setting} 领先；在 GPU 服务器上运行这个计划，"
    "由那次运行决定默认配置。",
    "report.next_uniform_sim": "模拟器上所有测试的并发区间 {setting} 都领先；在 GPU 服务器上运行这个计划，"
    "由那次运行决定默认配置。",
    "report.recommend_header_sim": "| 负载特征 | 模拟器上更优的 {setting} | 说明 |",
    "report.recommend_heading_sim": "### 模拟器上各负载的结果",
    "report.next_route": "如果业务混合，可考虑按并发度或输入长度把请求路由到不同配置的服务实例。",
    "report.next_outlier": "重复测量 {cells}（至少 3 次），确认 outlier 是否可复现。",
    "report.next_unsure": "{n} 个单元仍未定（见“未定单元”）：增加 `bench.rounds` 或 "
    "`bench.adaptive_rounds` 后对它们重跑，或接受它们的差距不超过区间所示。",
    "report.next_server": "用 dspark-tui 重跑并采集 `/metrics`（接受长度、KV cache 使用率、抢占），"
    "为上面的结论补上服务端证据。",
    "report.next_resume": "补跑 {n} 个失败或缺失的单元（`dspark-tui run --resume {path}`）。",
    "report.next_none": "数据不足以给出建议。",
    "report.list_sep": "、",
    # decision: a K sweep: what to deploy (the K schedule) and the K sweep section
    "decision.deploy_heading": "## 部署建议（K 调度）",
    "decision.deploy_simulated": "**模拟器上的结果**：下面是模拟器（dspark_tui.sim）给出的调度，"
    "不是可以直接部署的设置；在 GPU 服务器上运行这个计划，由那次运行决定。",
    "decision.deploy_schedule_lead": "按服务端实测的运行 batch（`vllm:num_requests_running`）选择 K：",
    "decision.deploy_schedule_lead_client": "本次没有 `/metrics`，下表按客户端并发（而非运行 batch）给出；"
    "请求排队时两者不同，部署前请在带指标的运行上复核：",
    "decision.deploy_table_header": "| 运行 batch | K | 依据的单元 |",
    "decision.deploy_overlap": "- 运行 batch 分布重叠的单元共用一个 K：取按流量加权、相对各单元最佳吞吐最高的 K"
    "（在持平带内取较小者）；相邻锚点之间按 log2 尺度就近划分。",
    "decision.deploy_beyond": "- 最大实测 batch 为 {largest}；从 {start} 到 max_num_seqs={max_seqs}（{source}"
    "）沿用最后一个实测选择 K={k}。",
    "decision.source.plan": "取自计划的 `--max-num-seqs`",
    "decision.source.vllm-default": "vLLM 默认值 256；计划未设 `--max-num-seqs`",
    "decision.deploy_unverified": "- **未验证**：有单元只测了一轮（没有区间），这些选择只是点估计；用 `rounds "
    "≥ 2` 重跑。",
    "decision.deploy_config_lead": "`--speculative-config`（需要支持 `num_speculative_tokens_per_batch_size` "
    "的 vLLM，见 docs/decision.md）：",
    "decision.deploy_no_spec": "- 在所有实测 batch 上不投机（K=0）都不差：不加 `--speculative-config`。",
    "decision.deploy_method_note": "- `method` 取自{source}（`{method}`）；请与实际使用的 draft 方法核对。",
    "decision.method.model name": "模型名",
    "decision.method.default": "默认值",
    "decision.deploy_command_lead": "完整启动命令（由计划的服务端命令生成）：",
    "decision.deploy_single_heading": "### 不支持动态 K 的服务端",
    "decision.deploy_traffic_plan": "流量权重取自计划的 `[traffic]`。",
    "decision.deploy_traffic_equal": "计划没有 `[traffic]`：各场景、各并发等权（可在计划中加入 `[traffic]`）。",
    "decision.deploy_single": "- 固定 K={k}：{gains}",
    "decision.deploy_single_gain": "比 K={other} {gain}",
    "decision.deploy_schedule_gain": "- 调度相对固定 K={k} 的预期收益：{gain}",
    "decision.deploy_routing": "- 分流方案：两个实例，并发 ≤ {threshold} 的流量用 K={low_k}，其余用 K={high_k}；"
    "相对固定 K={k}：{gain}（假设各类流量到达其实例时的负载与实测相同）。",
    "decision.gain_fmt": "{value}（{low} … {high}）",
    "decision.sweep_heading": "## K 扫描",
    "decision.best_k_heading": "### 各单元的最佳 K",
    "decision.best_k_lead": "取已证明与最优者相差不超过持平带（{band}%）的最小 K：其相对最优者比值的区间下界 ≥ "
    "1 − {band}%；没有这样的 K 时取最优者本身。",
    "decision.best_k_header": "| 场景 | 并发 | 运行 batch | 选择 K | 最快 K | 选择/最快 | 选择/K=0 | "
    "最快/第二 | 已验证 |",
    "decision.yes": "是",
    "decision.no": "否（单次）",
    "decision.break_heading": "### 盈亏平衡并发",
    "decision.break_item": "- `{scenario}` K={low_k}→{high_k}：{text}",
    "decision.break_at": "c≈{at}（区间 {low} … {high}）",
    "decision.break_at_single": "c≈{at}（单次测量，无区间）",
    "decision.break_never_high": "在实测并发（≤ {c}）内 K={k} 一直更快",
    "decision.break_never_low": "在实测并发（≥ {c}）内 K={k} 一直更快",
    "decision.break_many": "；比值多次穿过 1（{n} 次），只给出第一次",
    "decision.stop_item": "- `{scenario}`：相对 K=0，投机在 {text} 不再划算",
    "decision.stop_never": "- `{scenario}`：在实测并发（≤ {c}）内投机一直划算",
    "decision.stop_always": "- `{scenario}`：在实测并发内投机从不划算",
    "decision.counters_heading": "### 服务端投机计数（/metrics）",
    "decision.counters_header": "| 场景 | 并发 | K | 接受长度 | 各位置接受率（累计） | 条件接受率 | 运行 "
    "batch 均值（峰值） | draft tok/s | 接受 tok/s | 浪费 tok/s |",
    "decision.positions_heading": "### 每个 draft 位置的边际价值",
    "decision.positions_lead": "增益 = 同一单元中 K=j 与 K=j−1 的 Total tok/s "
    "之差，区间来自两者比值的区间乘以 K=j−1 的吞吐。",
    "decision.position_item": "- 位置 {j} 被接受的比例为 {rate}（在前一位置被接受时为 {cond}）：{gains}",
    "decision.position_item_first": "- 位置 1 被接受的比例为 {rate}：{gains}",
    "decision.position_gain": "{scenario} c={c} {sign}{value} tok/s",
    "decision.position_adds": "增加",
    "decision.position_costs": "减少",
    "decision.positions_header": "| 位置 | 累计接受率 | 条件接受率 | {columns} |",
    "decision.warn_heading": "### ⚠ 接受长度与吞吐不一致",
    "decision.warn_lead": "以下单元中更大的 K 每步接受更多 token，吞吐却更低：该 batch 下验证开销占主导。",
    "decision.warn_item": "- `{scenario}` K={low_k}→{high_k}：{cells}",
    "decision.warn_cell": "c={c}（接受长度 {low_accept}→{high_accept}，吞吐 {ratio}）",
    # verification: a verification run's section: the schedule against the best fixed K
    "verification.heading": "## K 调度验证",
    "verification.lead": "本次运行复核 `{sweep}`（{path}）推荐的调度 `{schedule}`（按{keyed}）与其固定 K 最佳值 "
    "K={k}：同一网格、同样的轮数，两者各为一个 arm（`{schedule_arm}` 与 `{fixed_arm}`）。",
    "verification.keyed.running_batch": "运行 batch",
    "verification.keyed.client_concurrency": "客户端并发",
    "verification.header": "| 场景 | 并发 | 运行 batch | 调度的 K | 流量权重 | 调度 / {fixed_arm} | 区间 | 判定 |",
    "verification.gain": "- 按{traffic}加权，调度相对 {fixed_arm} 的实际收益：{gain}，判定 **{verdict}**"
    "（持平带 ±{band}%）。",
    "verification.traffic.plan": "计划的 `[traffic]`",
    "verification.traffic.equal": "等权（计划没有 `[traffic]`）",
    "verification.gain_interval": "- 区间：各单元 log 比值区间端点的加权平均（每个单元是判定分析的 t 区间，"
    "置信水平 {level}%，自由度同判定分析）；单元误差完全同向时准确，否则偏宽。",
    "verification.gain_single": "- 只有单次测量（只有一轮）：收益没有区间，只是点估计；用 `rounds ≥ 2` 重跑。",
    "verification.fixed_wins": "- {fixed_arm} 胜过调度的单元：{cells}。",
    "verification.no_fixed_wins": "- 没有任何单元 {fixed_arm} 胜过调度。",
    "verification.schedule_wins": "- 调度胜出的单元：{cells}。",
    "verification.verdict.wins": "胜出",
    "verification.verdict.loses": "落后",
    "verification.verdict.tie": "持平",
    "verification.verdict.unsure": "不确定",
    "verification.verdict.single": "单次",
    # greedy: the greedy equivalence check, the report's first section
    "greedy.heading": "## 贪心输出一致性检查",
    "greedy.heading_bad": "## ⚠ 贪心输出一致性检查：有 arm 的输出不同",
    "greedy.lead": "每个 arm 在每次服务端会话预热后，以 temperature 0 回答同样的 {n} 个提示（最多 {tokens} "
    "个 token），每个会话答两遍；与 `{ref}` 的回答逐 token 比较（服务端不返回 token id 时逐字符）。"
    "真实服务端没有 bug 也会有差异（FP8 KV cache、张量并行数值、batch 形状），所以只有比对照"
    "（同一 arm 自己的重复回答）更早出现的差异才算。",
    "greedy.same": "- `{arm}`：与 `{ref}` 在全部 {n} 个提示上输出相同。",
    "greedy.within": "- `{arm}`：与 `{ref}` 在对照范围内相同（{k}/{n} 个提示有差异，但不早于同一 arm "
    "自身重复回答的差异）。",
    "greedy.diverges": "- `{arm}`：**输出不同** —— {k}/{n} 个提示的差异早于对照；第一个在提示 {prompt} 的"
    "第 {position} 个{unit}：`{ref}` 为「{expected}」，`{arm}` 为「{got}」。",
    "greedy.not_compared": "- `{arm}`：与 `{ref}` 的差别不止投机解码设置：不比较。",
    "greedy.no_answers": "- `{arm}`：没有可比较的回答（{reason}）。",
    "greedy.unit.token": " token",
    "greedy.unit.char": "字符",
    "greedy.control": "- 对照：{items}。",
    "greedy.control_item": "`{arm}` {k}/{n} 个提示两次回答不同（{sessions} 个会话）",
    "greedy.problem": "- 未读取：{problem}",
    # categories: per category: category-pure scenarios and their best K per load
    "categories.heading": "## 按类别",
    "categories.lead": "下列场景每个只发送一个类别的提示词（类别纯净的单元），所以服务端 `/metrics` "
    "的接受率就是该类别的。最佳 K 取自 K 扫描的逐单元选择（持平带内取较小的 K）。",
    "categories.best_item": "- **{category}**（{scenarios}）：{runs}",
    "categories.run_to": "K={k} 到 c={c}",
    "categories.run_from": "K={k} 从 c={c} 起",
    "categories.run_between": "K={k} 在 c={lo}–{hi}",
    "categories.run_only": "K={k} 在 c={c}",
    "categories.run_all": "所有负载都是 K={k}（c={lo}–{hi}）",
    "categories.unverified": "（有选择只测了一轮，未验证）",
    "categories.unsure": "（c={cs} 的选择未定：最快的 K 没有被证明更快）",
    "categories.sep": "；",
    "categories.header": "类别 | 并发 | {spec} | Total tok/s | TPOT(ms) | 接受长度 | 逐位置接受率",
    # compare: two runs compared (History's compare, `dspark-tui compare`)
    "compare.title": "# 两次运行对比",
    "compare.a": "- A：`{name}`（`{path}`）",
    "compare.b": "- B：`{name}`（`{path}`）",
    "compare.ratio": "比值 = B / A；吞吐比值 > 1 表示 B 更快，延迟比值 < 1 表示 B 更快。",
    "compare.matched": "- 匹配的单元：{n}；只在 A 中：{only_a}；只在 B 中：{only_b}",
    "compare.summary": "- Total tok/s 几何平均比值：{geo}；B 更快的单元：{faster}/{n}",
    "compare.none": "两次运行没有相同的 (arm, scenario, concurrency) 单元可比。",
    "compare.arm": "- `{arm}`：Total tok/s 几何平均比值 {geo}，B 更快 {faster}/{n} 个单元",
    "compare.differ": "- ⚠ {what}不同：{detail}",
    "compare.model": "模型",
    "compare.command": "服务命令",
    "compare.prompts": "提示词",
    "compare.warmup": "Warmup 请求数",
    # the client's health (report header) and the running-batch schedule's notes (decision)
    "report.client_kept_up": "- 客户端状态：{n} 次测量全部跟上（事件循环延迟 p99 最高 {lag} ms，"
    "同一次读取到的 token 间隔最多 {same}）",
    "report.client_behind": "- 客户端落后：{k}/{n} 次测量（{items}）；这些测量的 TTFT、TPOT、ITL、E2E "
    "不进表格和延迟比较（阈值：超过 {same_limit} 的 token 间隔与前一个 token 在同一次读取中成批到达，"
    "且事件循环延迟 p99 不低于平均 ITL 的 {lag_fraction} 与 {floor} ms；"
    "见 docs/client.md）。{throughput}",
    "report.client_throughput_stands": "它们的 Total tok/s 仍然成立：迟读只把请求结束推迟至多一个延迟"
    "（p99 最高 {lag} ms，平均 E2E {e2e} ms）",
    "report.client_throughput_doubtful": "它们的 Total tok/s 也可疑：延迟（p99 最高 {lag} ms）达到平均 E2E "
    "（{e2e} ms）的 {share}，闭环中每个请求都晚发出这么久",
    "decision.deploy_schedule_lead_thin": "有单元的运行 batch 只读到不足 {min} 次（{cells}），分不清稳态和两端的爬升，"
    "下表改按客户端并发给出；把 `scrape_interval_s` 调小或让单元更长后重跑：",
    "decision.deploy_unsure": "- **未验证**：{n}/{total} 个选择未定（区间跨过持平带：{cells}）；区间存在不等于判定，"
    "多测几轮再部署。",
    "decision.deploy_wide_merge": "- batch {batch} 处的锚点合并了并发相差超过 {span} 倍的单元（{cells}）："
    "它们的运行 batch 重叠，所以共用 K={k}。",
    "decision.deploy_covered": "- 锚点 batch {batch}（{cells}，K={k}）离前一个锚点不到一个 batch，由前一个范围覆盖。",
    "decision.deploy_readings": "{n} 次读数",
}
