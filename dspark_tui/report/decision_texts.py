"""The K decision's sentences, in Chinese (the report's default) and English. Kept apart from
texts.py so that the sections other work adds there and these never collide."""

from __future__ import annotations

from dspark_tui.report.texts import Texts

_ZH: dict[str, str] = {
    "deploy_heading": "## 部署建议（K 调度）",
    "deploy_simulated": "**模拟器上的结果**：下面是模拟器（dspark_tui.sim）给出的调度，"
    "不是可以直接部署的设置；在 GPU 服务器上运行这个计划，由那次运行决定。",
    "deploy_schedule_lead": "按服务端实测的运行 batch（`vllm:num_requests_running`）选择 K：",
    "deploy_schedule_lead_client": "本次没有 `/metrics`，下表按客户端并发（而非运行 batch）给出；"
    "请求排队时两者不同，部署前请在带指标的运行上复核：",
    "deploy_table_header": "| 运行 batch | K | 依据的单元 |",
    "deploy_overlap": "- 运行 batch 分布重叠的单元共用一个 K：取按流量加权、相对各单元最佳吞吐最高的 K"
    "（在持平带内取较小者）；相邻锚点之间按 log2 尺度就近划分。",
    "deploy_beyond": "- 最大实测 batch 为 {largest}；从 {start} 到 max_num_seqs={max_seqs}（{source}"
    "）沿用最后一个实测选择 K={k}。",
    "source.plan": "取自计划的 `--max-num-seqs`",
    "source.vllm-default": "vLLM 默认值 256；计划未设 `--max-num-seqs`",
    "deploy_unverified": "- **未验证**：有单元只测了一轮（没有区间），这些选择只是点估计；用 `rounds "
    "≥ 2` 重跑。",
    "deploy_schedule_lead_thin": "有单元的运行 batch 只读到不足 {min} 次（{cells}），分不清稳态和两端的爬升，"
    "下表改按客户端并发给出；把 `scrape_interval_s` 调小或让单元更长后重跑：",
    "deploy_unsure": "- **未验证**：{n}/{total} 个选择未定（区间跨过持平带：{cells}）；区间存在不等于判定，"
    "多测几轮再部署。",
    "deploy_wide_merge": "- batch {batch} 处的锚点合并了并发相差超过 {span} 倍的单元（{cells}）："
    "它们的运行 batch 重叠，所以共用 K={k}。",
    "deploy_covered": "- 锚点 batch {batch}（{cells}，K={k}）离前一个锚点不到一个 batch，由前一个范围覆盖。",
    "deploy_readings": "{n} 次读数",
    "deploy_config_lead": "`--speculative-config`（需要支持 `num_speculative_tokens_per_batch_size` "
    "的 vLLM，见 docs/decision.md）：",
    "deploy_no_spec": "- 在所有实测 batch 上不投机（K=0）都不差：不加 `--speculative-config`。",
    "deploy_method_note": "- `method` 取自{source}（`{method}`）；请与实际使用的 draft 方法核对。",
    "method.model name": "模型名",
    "method.default": "默认值",
    "deploy_command_lead": "完整启动命令（由计划的服务端命令生成）：",
    "deploy_single_heading": "### 不支持动态 K 的服务端",
    "deploy_traffic_plan": "流量权重取自计划的 `[traffic]`。",
    "deploy_traffic_equal": "计划没有 `[traffic]`：各场景、各并发等权（可在计划中加入 `[traffic]`）。",
    "deploy_single": "- 固定 K={k}：{gains}",
    "deploy_single_gain": "比 K={other} {gain}",
    "deploy_schedule_gain": "- 调度相对固定 K={k} 的预期收益：{gain}",
    "deploy_routing": "- 分流方案：两个实例，并发 ≤ {threshold} 的流量用 K={low_k}，其余用 K={high_k}；"
    "相对固定 K={k}：{gain}（假设各类流量到达其实例时的负载与实测相同）。",
    "gain_fmt": "{value}（{low} … {high}）",
    "sweep_heading": "## K 扫描",
    "best_k_heading": "### 各单元的最佳 K",
    "best_k_lead": "取已证明与最优者相差不超过持平带（{band}%）的最小 K：其相对最优者比值的区间下界 ≥ "
    "1 − {band}%；没有这样的 K 时取最优者本身。",
    "best_k_header": "| 场景 | 并发 | 运行 batch | 选择 K | 最快 K | 选择/最快 | 选择/K=0 | "
    "最快/第二 | 已验证 |",
    "yes": "是",
    "no": "否（单次）",
    "break_heading": "### 盈亏平衡并发",
    "break_item": "- `{scenario}` K={low_k}→{high_k}：{text}",
    "break_at": "c≈{at}（区间 {low} … {high}）",
    "break_at_single": "c≈{at}（单次测量，无区间）",
    "break_never_high": "在实测并发（≤ {c}）内 K={k} 一直更快",
    "break_never_low": "在实测并发（≥ {c}）内 K={k} 一直更快",
    "break_many": "；比值多次穿过 1（{n} 次），只给出第一次",
    "stop_item": "- `{scenario}`：相对 K=0，投机在 {text} 不再划算",
    "stop_never": "- `{scenario}`：在实测并发（≤ {c}）内投机一直划算",
    "stop_always": "- `{scenario}`：在实测并发内投机从不划算",
    "counters_heading": "### 服务端投机计数（/metrics）",
    "counters_header": "| 场景 | 并发 | K | 接受长度 | 各位置接受率（累计） | 条件接受率 | 运行 "
    "batch 均值（峰值） | draft tok/s | 接受 tok/s | 浪费 tok/s |",
    "positions_heading": "### 每个 draft 位置的边际价值",
    "positions_lead": "增益 = 同一单元中 K=j 与 K=j−1 的 Total tok/s "
    "之差，区间来自两者比值的区间乘以 K=j−1 的吞吐。",
    "position_item": "- 位置 {j} 被接受的比例为 {rate}（在前一位置被接受时为 {cond}）：{gains}",
    "position_item_first": "- 位置 1 被接受的比例为 {rate}：{gains}",
    "position_gain": "{scenario} c={c} {sign}{value} tok/s",
    "position_adds": "增加",
    "position_costs": "减少",
    "positions_header": "| 位置 | 累计接受率 | 条件接受率 | {columns} |",
    "warn_heading": "### ⚠ 接受长度与吞吐不一致",
    "warn_lead": "以下单元中更大的 K 每步接受更多 token，吞吐却更低：该 batch 下验证开销占主导。",
    "warn_item": "- `{scenario}` K={low_k}→{high_k}：{cells}",
    "warn_cell": "c={c}（接受长度 {low_accept}→{high_accept}，吞吐 {ratio}）",
}

_EN: dict[str, str] = {
    "deploy_heading": "## What to deploy (K schedule)",
    "deploy_simulated": "**Measured on the simulator**: this is the schedule the simulator "
    "(dspark_tui.sim) shows, not a setting to deploy; run this plan on the GPU server and let that "
    "run decide.",
    "deploy_schedule_lead": "K by the running batch the server measured (`vllm:num_requests_running`):",
    "deploy_schedule_lead_client": "This run has no `/metrics`, so the table is keyed on the client's "
    "concurrency, not the running batch; they differ once requests queue — check on a run with metrics:",
    "deploy_table_header": "| Running batch | K | From cells |",
    "deploy_overlap": "- Cells whose running-batch spreads overlap share one K: the one with the best "
    "traffic-weighted throughput relative to each cell's best (the smallest within the tie band); "
    "between anchors a batch takes the nearer anchor on a log2 scale.",
    "deploy_beyond": "- The largest measured batch is {largest}; from {start} up to max_num_seqs = "
    "{max_seqs} "
    "({source}) the last measured choice, K = {k}, holds.",
    "source.plan": "the plan's `--max-num-seqs`",
    "source.vllm-default": "vLLM's default 256; the plan sets no `--max-num-seqs`",
    "deploy_unverified": "- **Unverified**: some cells were measured in one round (no interval), so these "
    "choices are point estimates; rerun with `rounds >= 2`.",
    "deploy_schedule_lead_thin": "Some cells' running batch was read fewer than {min} times ({cells}), "
    "too few to tell its steady state from the ramp at the cell's ends, so the table is keyed on "
    "the client's concurrency; rerun with a smaller `scrape_interval_s` or longer cells:",
    "deploy_unsure": "- **Unverified**: {n} of {total} choices are unsure (their intervals cross the "
    "tie band: {cells}); an interval that decides nothing verifies nothing — measure more rounds.",
    "deploy_wide_merge": "- The anchor at batch {batch} joins cells whose concurrencies differ by more "
    "than {span}x ({cells}): their running batches overlapped, so one K = {k} serves both loads.",
    "deploy_covered": "- The anchor at batch {batch} ({cells}, K = {k}) lies within one batch of the "
    "previous one, whose range covers it.",
    "deploy_readings": "{n} readings",
    "deploy_config_lead": "`--speculative-config` (needs a vLLM with `num_speculative_tokens_per_batc"
    "h_size`, "
    "see docs/decision.md):",
    "deploy_no_spec": "- No speculation (K = 0) is not worse at any measured batch: leave out "
    "`--speculative-config`.",
    "deploy_method_note": "- `method` comes from the {source} (`{method}`); check it against the "
    "drafter you serve.",
    "method.model name": "model name",
    "method.default": "default",
    "deploy_command_lead": "The full serve command (from the plan's server command):",
    "deploy_single_heading": "### Servers without dynamic K",
    "deploy_traffic_plan": "Traffic weights from the plan's `[traffic]`.",
    "deploy_traffic_equal": "The plan has no `[traffic]`: every scenario and concurrency weighs the same "
    "(add a `[traffic]` table to the plan to weigh your own mix).",
    "deploy_single": "- Fixed K = {k}: {gains}",
    "deploy_single_gain": "vs K = {other} {gain}",
    "deploy_schedule_gain": "- The schedule's expected gain over fixed K = {k}: {gain}",
    "deploy_routing": "- Routing: two instances, traffic at concurrency <= {threshold} on K = "
    "{low_k}, the rest on "
    "K = {high_k}; over fixed K = {k}: {gain} (assumes each class reaches its instance at the load it was "
    "measured at).",
    "gain_fmt": "{value} ({low} … {high})",
    "sweep_heading": "## K sweep",
    "best_k_heading": "### Best K per cell",
    "best_k_lead": "The smallest K shown to be within the tie band ({band}%) of the cell's fastest: "
    "its ratio's lower bound against the fastest is >= 1 − {band}%; the fastest itself when no "
    "cheaper K is.",
    "best_k_header": "| Scenario | Concurrency | Running batch | Chosen K | Fastest K | Chosen/fastest | "
    "Chosen/K=0 | Fastest/runner-up | Verified |",
    "yes": "yes",
    "no": "no (single)",
    "break_heading": "### Break-even concurrency",
    "break_item": "- `{scenario}` K={low_k}→{high_k}: {text}",
    "break_at": "c ≈ {at} (interval {low} … {high})",
    "break_at_single": "c ≈ {at} (single measurements, no interval)",
    "break_never_high": "K={k} is faster at every measured concurrency (up to {c})",
    "break_never_low": "K={k} is faster at every measured concurrency (from {c})",
    "break_many": "; the ratio crosses 1 {n} times, the first is shown",
    "stop_item": "- `{scenario}`: against K=0, speculation stops paying at {text}",
    "stop_never": "- `{scenario}`: speculation pays at every measured concurrency (up to {c})",
    "stop_always": "- `{scenario}`: speculation never pays at the measured concurrencies",
    "counters_heading": "### Spec-decode counters (/metrics)",
    "counters_header": "| Scenario | Concurrency | K | Accept len | Accepted by position (cumulative) | "
    "Conditional | Running batch mean (peak) | Drafted tok/s | Accepted tok/s | Wasted tok/s |",
    "positions_heading": "### The marginal value of each draft position",
    "positions_lead": "Gain = Total tok/s of K=j minus K=j−1 in the same cell; its interval is the "
    "interval "
    "of their ratio times K=j−1's throughput.",
    "position_item": "- Position {j} is accepted {rate} of the time ({cond} when position {prev} "
    "was): {gains}",
    "position_item_first": "- Position 1 is accepted {rate} of the time: {gains}",
    "position_gain": "{sign} {value} tok/s at {scenario} c={c}",
    "position_adds": "adds",
    "position_costs": "costs",
    "positions_header": "| Position | Accepted (cumulative) | Conditional | {columns} |",
    "warn_heading": "### ⚠ Acceptance length and throughput disagree",
    "warn_lead": "In these cells the larger K accepts more tokens per step yet serves fewer tokens per "
    "second: verification cost dominates at that batch.",
    "warn_item": "- `{scenario}` K={low_k}→{high_k}: {cells}",
    "warn_cell": "c={c} (accept length {low_accept}→{high_accept}, throughput {ratio})",
}

_TABLES = {"zh": _ZH, "en": _EN}


class DecisionTexts:
    """Like Texts (same call), for the decision sections."""

    def __init__(self, t: Texts) -> None:
        self.lang = t.lang
        self.base = t
        self._table = _TABLES[t.lang]

    def __call__(self, key: str, **values: object) -> str:
        return self._table[key].format(**values)
