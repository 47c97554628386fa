// `tessera bench serve`: the serving benchmark. Picks a backend from --target (an
// OpenAI-compatible http:// URL, inproc:MODEL for the in-process engine, or null), builds the
// prompt library (synthetic lengths, a JSONL file, or a trace), runs the scenario (or a sweep of
// them) through the harness in src/bench, and writes the records. Thin: the logic is in bench/.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "spec_args.h"
#include "common.h"
#include "tessera/bench/serve_bench.h"
#include "tessera/bench/serve_printer.h"

namespace tessera::cli {
namespace {

struct BenchServeArgs {
  bench::ServeBenchOptions bench;
  std::string out;
  bool no_progress = false;
  std::string chartjs;
  SpecArgs spec;  // inproc
};

// Progress on stderr, rewritten in place on a terminal; each point's summary on stdout.
bench::ServeBenchHooks print_hooks(const BenchServeArgs& a) {
  bench::ServeBenchHooks hooks;
  const bool tty = isatty(2);
  if (!a.no_progress) {
    hooks.progress_interval_s = tty ? 0.25 : 5.0;
    hooks.on_progress = [tty](const std::string& label, const bench::Progress& p) {
      const std::string line = (label.empty() ? "" : label + ": ") + bench::format_progress(p);
      if (tty) {
        std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
    };
    if (tty) hooks.after_run = [] { std::fprintf(stderr, "\n"); };
  }
  hooks.on_point = [](const bench::ServePoint& p, const std::string& target_name) {
    if (!p.label.empty()) std::printf("== %s\n", p.label.c_str());
    std::printf("%s\n", bench::format_summary(p, target_name).c_str());
  };
  return hooks;
}

int write_records(const BenchServeArgs& a, const bench::ServeBenchResult& r) {
  std::fflush(stdout);  // the tables first, then what was written (stderr)
  if (Status s = bench::make_out_dir(a.out); !s.is_ok()) return fail(s);
  std::string chartjs_path;
  const std::string chartjs = load_chart_js(a.chartjs, &chartjs_path);
  if (chartjs.empty()) {
    std::fprintf(stderr,
                 "tessera: chart.js not found (%s): report.html has tables only; run "
                 "scripts/fetch-chartjs.sh or pass --chartjs FILE\n",
                 chartjs_path.empty() ? "no path" : chartjs_path.c_str());
  }
  if (Status s = bench::write_serve_bench_records(a.out, a.bench, r, chartjs); !s.is_ok()) {
    return fail(s);
  }
  std::fprintf(stderr,
               "tessera: wrote %s/summary.json, requests.jsonl, mlperf_log_summary.txt, "
               "report.html\n",
               a.out.c_str());
  return 0;
}

int run_bench_serve(const BenchServeArgs& args) {
  BenchServeArgs a = args;
  a.bench.load_inproc = [&a](const std::string& path) -> Result<bench::InprocModel> {
    TS_ASSIGN_OR_RETURN(SpecTarget t, load_spec_target(path, a.bench.tokenizer, a.spec));
    return bench::InprocModel{std::move(t.model), std::move(t.tokenizer), std::move(t.spec)};
  };
  auto result = bench::run_serve_benchmark(a.bench, print_hooks(a));
  if (!result.is_ok()) return fail(result.status());
  if (a.bench.scenario == "sweep") {
    std::printf("%s", bench::format_sweep(result->points, a.bench.slo_attainment).c_str());
  }
  if (const auto& d = result->spec_delta; d && d->draft_tokens > 0) {
    std::printf("speculative decoding: %.0f of %.0f draft tokens accepted (%.1f%%)\n",
                d->accepted_tokens, d->draft_tokens, 100.0 * d->acceptance());
  }
  if (const auto& c = result->constraint_delta; c && c->tokens > 0) {
    std::printf("%s\n", bench::format_constraint_cost(*c).c_str());
  }
  return a.out.empty() ? 0 : write_records(a, *result);
}

// The system under test and how to reach it.
void add_target_flags(CLI::App* c, BenchServeArgs* a) {
  bench::ServeBenchOptions& b = a->bench;
  c->add_option("--target", b.target,
                "http://HOST:PORT (OpenAI-compatible), inproc:MODEL_PATH, or "
                "null[:ttft_ms=MS,itl_ms=MS,chunk=N]")
      ->required();
  c->add_option("--model", b.model, "Model name sent in requests (HTTP)");
  c->add_option("--tokenizer", b.tokenizer,
                "Tokenizer file: llama2.c checkpoints (inproc); with HTTP, a GGUF whose vocabulary "
                "makes synthetic prompts exact");
  c->add_option("--api", b.api, "HTTP API: completions or chat")->capture_default_str();
  c->add_option("--api-key", b.api_key, "Bearer token (default: $OPENAI_API_KEY)");
}

// The scenario and the prompts: rates, arrivals, lengths, traces.
void add_load_flags(CLI::App* c, BenchServeArgs* a) {
  bench::ServeBenchOptions& b = a->bench;
  c->add_option("--scenario", b.scenario,
                "offline, server, single-stream, concurrency, trace or sweep")
      ->capture_default_str();
  c->add_option("--request-rate", b.request_rate,
                "Requests/s for server (inf: all at once); sweep: a list like 1,2,4")
      ->capture_default_str();
  c->add_option("--arrival", b.arrival, "poisson, gamma or constant")->capture_default_str();
  c->add_option("--burstiness", b.burstiness,
                "Gamma shape (1 = Poisson; < 1 burstier); != 1 implies gamma")
      ->capture_default_str();
  c->add_option("--concurrency", b.concurrency,
                "concurrency: N in flight; server/offline: cap on in flight; sweep: a list");
  c->add_option("--num-prompts,-n", b.num_prompts, "Minimum measured queries")
      ->capture_default_str();
  c->add_option("--min-duration", b.min_duration, "Minimum measured seconds")
      ->capture_default_str();
  c->add_option("--warmup", b.warmup, "Warm-up queries (run first, not counted)")
      ->capture_default_str();
  c->add_option("--library-size", b.library_size,
                "Distinct synthetic prompts (default: min(num-prompts, 4096))");
  c->add_option("--input-len", b.input_len,
                "Prompt tokens: N, uniform:LO:HI, normal:MEAN:STD or exp:MEAN")
      ->capture_default_str();
  c->add_option("--output-len", b.output_len, "Max output tokens, same forms")
      ->capture_default_str();
  c->add_option("--prompts", b.prompts, "JSONL of {\"prompt\": ..., \"max_tokens\": N}");
  c->add_option("--trace", b.trace, "Trace to replay (azure CSV, mooncake JSONL, splitwise CSV)");
  c->add_option("--trace-format", b.trace_format, "azure, mooncake or splitwise (default: detect)");
  c->add_option("--time-scale", b.time_scale, "Trace time compression (2 = twice as fast)")
      ->capture_default_str();
  c->add_option("--max-input-len", b.max_input_len, "Clip trace prompts to N tokens");
  c->add_option("--trace-block-tokens", b.trace_block_tokens,
                "Replay each Mooncake hash block as N tokens instead of 512, prompt lengths "
                "scaled alike: the same prefix sharing at a fraction of the prefill")
      ->check(CLI::Range(1, 4096));
  c->add_option("--max-output-len", b.max_output_len, "Clip trace outputs to N tokens");
}

// SLOs, records, the HTTP client, the in-process engine and progress.
void add_run_flags(CLI::App* c, BenchServeArgs* a) {
  bench::ServeBenchOptions& b = a->bench;
  c->add_option("--seed", b.seed, "Seed of the schedule and the prompts")->capture_default_str();
  c->add_flag("--shuffle", b.shuffle, "Draw samples at random instead of in order");
  c->add_option("--slo", b.slo, "SLOs for goodput: ttft=MS,tpot=MS,e2e=MS (any subset)");
  c->add_option("--slo-attainment", b.slo_attainment,
                "Sweep: a point passes when this fraction meets the SLO")
      ->capture_default_str();
  c->add_option("--out", a->out,
                "Directory for summary.json, requests.jsonl, mlperf_log_summary.txt, report.html");
  c->add_option("--timeout", b.timeout, "HTTP: seconds without a byte before a query fails")
      ->capture_default_str();
  c->add_option("--io-threads", b.io_threads, "HTTP client threads (1 or 2)")
      ->capture_default_str();
  c->add_flag("--ignore-eos", b.ignore_eos, "HTTP: send ignore_eos (exact output lengths)");
  c->add_option("--body-variants", b.body_variants,
                 "HTTP: JSONL file of objects merged into the request bodies, query i taking line "
                 "i mod N (e.g. {\"model\": \"base:a1\"} per line to spread requests over adapters)");
  c->add_option("--response-format", b.response_format,
                "JSON file: an OpenAI response_format object, or a JSON Schema (sent as "
                "json_schema), applied to every query; the run then reports the constraint "
                "engine's time per constrained output token (inproc, or a Tessera server's "
                "/metrics)");
  c->add_flag("--no-usage", b.no_usage,
              "HTTP: do not ask for stream usage (count one token per chunk)");
  c->add_option("--threads,-t", b.threads, "inproc: compute threads (default: all cores)");
  c->add_option("--parallel", b.parallel,
                "inproc: sequences running at once at most (admission is by KV blocks)")
      ->capture_default_str();
  c->add_option("--ctx-size", b.ctx_size, "inproc: context per sequence (0: the model's)");
  add_spec_options(c, &a->spec);
  c->add_flag("--no-progress", a->no_progress, "No progress line on stderr");
  c->add_option("--chartjs", a->chartjs,
                "chart.js UMD file to inline in report.html (default: $TESSERA_CHARTJS or the "
                "build's cache)");
}

}  // namespace

void add_bench_serve_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<BenchServeArgs>();
  CLI::App* c = bench->add_subcommand(
      "serve", "Serving benchmark (LoadGen rules) against an OpenAI-compatible URL, the "
               "in-process engine, or the null backend");
  add_target_flags(c, a.get());
  add_load_flags(c, a.get());
  add_run_flags(c, a.get());
  c->callback([&run, a] { run = [a] { return run_bench_serve(*a); }; });
}

}  // namespace tessera::cli
