// Simulation reports: what a run of run_simulation() per policy turns into on disk and on the
// terminal - the results as JSON (one record per policy under the caller's setup), the headline
// table, one self-contained report.html (the bench report's conventions: Chart.js inlined from a
// string, #render-status with data-ok/data-charts, tables without charts when Chart.js is absent)
// and the lifecycle transitions as a Chrome trace (chrome://tracing, ui.perfetto.dev).
// Thread-safety: pure functions of their arguments; any thread may call them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/sim/simulator.h"

namespace tessera::sim {

// Every field of `r` under its own name, plus the derived utilization, slo_attainment,
// events_per_s (events / wall_s, 0 when wall_s is 0) and savings_vs_dedicated
// (1 - accelerator_hours / dedicated_accelerator_hours, 0 when there are no dedicated hours).
// The transitions are left out: they go to chrome_trace_json().
nlohmann::json sim_result_json(const SimResult& r);

// {"setup": setup, "policies": [sim_result_json(r) for r in results]}. `setup` is the caller's
// description of the run (command line, workload, accelerator, SLO, commit, ...), kept as given.
nlohmann::json sim_report_json(const nlohmann::json& setup, const std::vector<SimResult>& results);

// The terminal summary, one row per result (bench::Table, a Markdown pipe table): policy,
// accelerator-hours, percent fewer than dedicated, utilization, SLO attainment, TTFT p50/p99,
// cold starts, events/s and wall seconds. The dedicated reference is the accelerator-hours of the
// first result whose policy is "dedicated", else each result's own dedicated_accelerator_hours.
std::string headline_table(const std::vector<SimResult>& results);

// One self-contained HTML page for `report` (what sim_report_json() returned): the setup, the
// headline table, and three charts - accelerators in use over time per policy (hours on x, from
// accelerators_in_use with a sample period of duration / its length), accelerator-hours per
// policy and SLO attainment per policy. `chart_js`: the Chart.js UMD source, "" for a page with
// tables only (it says why there are no charts). Keys missing from `report` read as 0 / empty.
std::string render_sim_report_html(const nlohmann::json& report, const std::string& chart_js);

// The Chrome trace event format: {"traceEvents": [...], "displayTimeUnit": "ms"} with one
// process named `process_name`, one thread per slot (thread_name metadata, threads in order of
// first appearance) and one complete event ("ph":"X") per stay in a state: from a transition of
// a slot to its next, the last stay ending at the latest transition of the whole trace; name =
// the state, args = {"reason": ...}. ts and dur are whole microseconds; times shift so that the
// earliest is >= 0 (Perfetto drops negative timestamps; warm-up transitions happen before 0), the
// simulated time that ts 0 stands for recorded as otherData.time_origin_s. Each slot's
// transitions are taken in time order (a stable sort, so equal times keep their given order).
nlohmann::json chrome_trace_json(const std::vector<SimTransition>& transitions,
                                 const std::string& process_name = "tessera sim");

}  // namespace tessera::sim
