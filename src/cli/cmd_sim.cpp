// `tessera sim`: the fleet simulator's flags. The run itself (workload, deployments, policies,
// reports) is sim::run_sim_setup (sim/sim_setup.h); this file only declares the flags.
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "tessera/sim/sim_setup.h"

namespace tessera::cli {

void add_sim_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand(
      "sim", "Simulate a fleet serving many models under each idle/scaling policy (the live "
             "server's own FleetController over cost models)");
  auto a = std::make_shared<sim::SimSetupOptions>();
  auto chartjs = std::make_shared<std::string>();
  cmd->add_option("--servegen", a->servegen, "ServeGen traces (a root or one category folder)")
      ->capture_default_str();
  cmd->add_option("--trace", a->trace, "Replay one recorded trace (azure, mooncake, splitwise) instead");
  cmd->add_option("--schedule", a->schedule,
                  "Replay an exact schedule (`tessera bench fleet --arrivals-out`) instead");
  cmd->add_option("--schedule-span", a->schedule_s,
                  "--schedule: seconds simulated (0: to the last arrival + 1 s)");
  cmd->add_option("--models", a->models, "Models (ServeGen clients replayed with day offsets)")
      ->capture_default_str();
  cmd->add_option("--hours", a->hours, "Simulated hours")->capture_default_str();
  cmd->add_option("--rate-scale", a->rate_scale, "Multiplies every ServeGen rate")->capture_default_str();
  cmd->add_option("--max-peak-rps", a->max_peak_rps, "Cap each model's busiest window (0: none)");
  cmd->add_option("--time-scale", a->time_scale, "--trace: divide its times by this");
  cmd->add_option("--lengths", a->lengths, "Request lengths sampled from this trace")->capture_default_str();
  cmd->add_option("--fixed-lengths", a->fixed_input, "Fixed prompt tokens instead of a length trace");
  cmd->add_option("--fixed-output", a->fixed_output, "Fixed output tokens (with --fixed-lengths)");
  cmd->add_option("--max-input", a->max_input, "Clip prompts")->capture_default_str();
  cmd->add_option("--max-output", a->max_output, "Clip outputs")->capture_default_str();
  cmd->add_option("--accelerator", a->accelerator, "h100, h200 or tpu-v5e")->capture_default_str();
  cmd->add_option("--accelerator-json", a->accelerator_json, "An accelerator spec (JSON) instead");
  cmd->add_option("--shape", a->shape, "One model shape for every model (default: by ServeGen category)");
  cmd->add_option("--dtype", a->dtype, "Weight type of the shapes")->capture_default_str();
  cmd->add_option("--bench-record", a->bench_record,
                  "This machine's costs: a `tessera bench model --json` record (every model one replica)");
  cmd->add_option("--resume-record", a->resume_record, "With --bench-record: a `bench resume --json` record");
  cmd->add_option("--decode-step-s", a->decode_step_s,
                  "With --bench-record: seconds of a one-row step instead of the record's (e.g. "
                  "fitted to a live run's device accounting, `bench fleet --json`)");
  cmd->add_option("--row-s", a->row_s,
                  "With --bench-record: seconds per further row of a step instead of the record's");
  cmd->add_option("--resume-s", a->resume_s,
                  "With --bench-record: seconds per resume instead of the resume record's");
  cmd->add_option("--suspend-s", a->suspend_s,
                  "With --bench-record: seconds per suspension instead of the resume record's");
  cmd->add_option("--step-multipliers", a->step_multipliers,
                  "With --device-arbitration: CSV of measured iteration time / cost-model time "
                  "(header, then 'multiplier,switch,prompt' rows, the last two 0/1); each "
                  "iteration's time is multiplied by a seeded draw from the rows of its kind "
                  "(prompt rows or not; another replica ran the previous iteration or not)");
  cmd->add_option("--device-speed", a->device_speed,
                  "With --device-arbitration: CSV of the device's speed over time (header, then "
                  "'t_s,factor' rows, times increasing): an iteration granted at t takes its "
                  "cost times the factor of the last row at or before t (e.g. measured per "
                  "window in a live run, scripts/sim_validate_compare.py)");
  cmd->add_option("--switch-s", a->switch_s,
                  "With --device-arbitration: seconds an iteration takes longer when another "
                  "replica ran the device's previous iteration (a hand-off; e.g. fitted to a live "
                  "run's iterations, `bench fleet --iterations-out`)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--step-block", a->step_block,
                  "With --step-multipliers: take them in blocks of this many iterations of the "
                  "file's order (a block bootstrap: keeps its slow and fast stretches) instead of "
                  "independent draws; 0: independent")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--iterations-out", a->iterations_out,
                  "With --device-arbitration: write every iteration of the shared device as CSV "
                  "(policy, model, asked, granted, released, prompt and decode rows)");
  cmd->add_option("--requests-out", a->requests_out,
                  "Write every request's outcome (policy,model,t_s,ttft_s,cold; ttft -1: refused), "
                  "for small runs compared with `bench fleet --requests-out`");
  cmd->add_option("--max-running", a->max_running, "With --bench-record: the engine's batch limit");
  cmd->add_flag("--round-robin", a->round_robin,
                "Route among a model's replicas in turn (the cluster router's --routing round-robin)");
  cmd->add_option("--slo-window", a->slo_window,
                  "Halve a model's replica cap while any of its last N answers missed the TTFT SLO "
                  "(the cluster router's --slo-window; 0: never)")
      ->capture_default_str();
  cmd->add_flag("--shared-device", a->shared_device,
                "Every replica time-shares one device (as `serve --models` does on one machine)");
  cmd->add_flag("--device-arbitration", a->device_arbitration,
                "With --shared-device: grant the device one iteration at a time by the live "
                "DeviceScheduler's rule (deadlines, then least service) instead of sharing it");
  cmd->add_option("--max-batch-tokens", a->max_batch_tokens,
                  "With --bench-record: the engine's rows per iteration (the engine's default: 512)");
  cmd->add_option("--active-bytes", a->active_bytes,
                  "With --bench-record: weights + KV pool of a replica (as the live fleet reports)");
  cmd->add_option("--policy", a->policies,
                  "all, or a comma list of dedicated, search, keep-alive, adaptive, scaling, pooled")
      ->capture_default_str();
  cmd->add_option("--histogram-bin", a->histogram_bin_s,
                  "adaptive: idle-time histogram bin, seconds (240 bins)")->capture_default_str();
  cmd->add_option("--headroom", a->headroom,
                  "Replicas are sized for this multiple of a model's busiest 10-minute rate")
      ->capture_default_str();
  cmd->add_option("--keep-alive", a->keep_alive_s, "Seconds idle before a suspend")->capture_default_str();
  cmd->add_option("--ttft-slo", a->ttft_slo_s, "TTFT SLO, seconds")->capture_default_str();
  cmd->add_option("--tpot-slo", a->tpot_slo_s, "TPOT SLO for the deployment search, seconds")
      ->capture_default_str();
  cmd->add_option("--pool-accelerators", a->pool_accelerators, "pooled: accelerators per node")
      ->capture_default_str();
  cmd->add_option("--pool-max-models", a->pool_max_models, "pooled: model replicas per node at most")
      ->capture_default_str();
  cmd->add_option("--pool-overcommit", a->pool_overcommit,
                  "pooled: active bytes of a node's replicas over its memory, at most")
      ->capture_default_str();
  cmd->add_option("--pool-fill", a->pool_fill,
                  "pooled: expected resident bytes of a node's replicas over its memory, at most")
      ->capture_default_str();
  cmd->add_option("--deadline", a->deadline_s, "Seconds a queued request waits for its model")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Workload seed")->capture_default_str();
  cmd->add_option("--json", a->json_out, "Write the report as JSON");
  cmd->add_option("--html", a->html_out, "Write the report as HTML with charts");
  cmd->add_option("--chartjs", *chartjs, "Chart.js UMD file for --html");
  cmd->add_option("--chrome-trace", a->trace_out, "Write lifecycle moves as a Chrome trace (small runs)");
  cmd->add_option("--trace-events", a->trace_events, "Transitions kept per policy for --chrome-trace")
      ->capture_default_str();
  cmd->callback([a, chartjs, &run] {
    a->chart_js = [chartjs] { return load_chart_js(*chartjs); };
    run = [a] {
      const Status st = sim::run_sim_setup(*a);
      return st.is_ok() ? 0 : fail(st);
    };
  });
}

}  // namespace tessera::cli
