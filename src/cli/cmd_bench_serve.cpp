// `tessera bench serve`: the serving benchmark. Picks a backend from --target (an
// OpenAI-compatible http:// URL, inproc:MODEL for the in-process engine, or null), builds the
// prompt library (synthetic lengths, a JSONL file, or a trace), runs the scenario (or a sweep of
// them) through the harness in src/bench, and writes the records. Thin: the logic is in bench/.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "commands.h"
#include "spec_args.h"
#include "tessera/bench/spec_counters.h"
#include "common.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/engine_backend.h"
#include "tessera/bench/http_backend.h"
#include "tessera/bench/load_generator.h"
#include "tessera/bench/metrics.h"
#include "tessera/bench/null_backend.h"
#include "tessera/bench/report_html.h"
#include "tessera/bench/serve_printer.h"
#include "tessera/bench/serve_record.h"
#include "tessera/bench/sweep.h"
#include "tessera/bench/synthetic_prompts.h"
#include "tessera/bench/trace.h"
#include "tessera/engine/engine.h"


namespace tessera::cli {
namespace {

struct BenchServeArgs {
  std::string target;
  std::string model;
  std::string tokenizer;
  std::string api = "completions";
  std::string api_key;
  std::string scenario = "server";
  std::string request_rate = "inf";
  std::string arrival = "poisson";
  double burstiness = 1.0;
  std::string concurrency;
  int64_t num_prompts = 100;
  int64_t library_size = 0;
  double min_duration = 0.0;
  int32_t warmup = 1;
  std::string input_len = "128";
  std::string output_len = "128";
  std::string prompts;
  std::string trace;
  std::string trace_format;
  double time_scale = 1.0;
  int32_t max_input_len = 0;
  int32_t trace_block_tokens = 0;
  int32_t max_output_len = 0;
  uint64_t seed = 0;
  bool shuffle = false;
  std::string slo;
  double slo_attainment = 0.99;
  std::string out;
  double timeout = 600.0;
  int io_threads = 1;
  bool ignore_eos = false;
  bool no_usage = false;
  std::string body_variants;  // JSONL of objects merged into the request bodies, cycled
  int threads = 0;
  int parallel = engine::EngineOptions{}.max_running;
  int64_t ctx_size = 0;
  bool no_progress = false;
  std::string chartjs;
  SpecArgs spec;  // inproc
};

// The backend and what it needs kept alive.
struct Target {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<bench::SystemUnderTest> sut;
  std::string name;
};

// One JSON object per non-empty line. Errors: kNotFound (unreadable), kInvalidArgument naming the
// line that is not a JSON object, or a file with none.
Result<std::vector<nlohmann::json>> read_body_variants(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(ErrorCode::kNotFound, "--body-variants: cannot read '" + path + "'");
  std::vector<nlohmann::json> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return invalid_argument(
          fmt::format("--body-variants: {} line {} is not a JSON object", path, n));
    }
    out.push_back(std::move(j));
  }
  if (out.empty()) return invalid_argument("--body-variants: " + path + " has no JSON object");
  return out;
}

Result<Target> make_target(const BenchServeArgs& a) {
  Target t;
  const std::string& s = a.target;
  if (s == "null" || s.rfind("null:", 0) == 0) {
    TS_ASSIGN_OR_RETURN(auto o, bench::parse_null_options(s.size() > 5 ? s.substr(5) : ""));
    t.sut = std::make_unique<bench::NullBackend>(o);
    t.name = s;
  } else if (s.rfind("inproc:", 0) == 0) {
    const std::string path = s.substr(7);
    TS_ASSIGN_OR_RETURN(LoadedModel loaded, load_model_and_tokenizer(path, a.tokenizer));
    t.model = std::shared_ptr<model::Model>(std::move(loaded.model));
    t.tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(loaded.tokenizer));
    engine::EngineOptions eo;
    eo.n_threads = a.threads > 0 ? a.threads : hardware_threads();
    eo.max_running = a.parallel;
    eo.ctx_size = a.ctx_size;
    eo.max_waiting = 1 << 20;  // the harness, not the queue limit, decides the load
    TS_ASSIGN_OR_RETURN(eo.spec, spec_options(a.spec, a.tokenizer, t.model, t.tokenizer));
    TS_ASSIGN_OR_RETURN(t.engine, engine::Engine::create(t.model, t.tokenizer, eo));
    t.engine->start();
    bench::EngineBackendOptions bo;
    bo.ignore_eos = true;
    t.sut = std::make_unique<bench::EngineBackend>(
        t.engine.get(), bo,
        nlohmann::json{{"model_path", path},
                       {"threads", eo.n_threads},
                       {"max_running", eo.max_running},
                       {"speculation", std::string(engine::spec_method_name(eo.spec.method))},
                       {"ctx_size", t.engine->options().ctx_size},
                       {"kv_blocks", t.engine->options().n_blocks},
                       {"kv_block_size", t.engine->options().block_size}});
    t.name = "inproc:" + std::filesystem::path(path).filename().string();
  } else if (s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0) {
    bench::HttpBackendOptions o;
    o.url = s;
    o.model = a.model;
    if (a.api == "chat") {
      o.api = bench::HttpApi::kChat;
    } else if (a.api != "completions") {
      return invalid_argument("--api must be completions or chat, got '" + a.api + "'");
    }
    o.api_key = a.api_key;
    if (o.api_key.empty()) {
      if (const char* k = std::getenv("OPENAI_API_KEY")) o.api_key = k;
    }
    o.timeout_s = a.timeout;
    o.io_threads = a.io_threads;
    o.ignore_eos = a.ignore_eos;
    o.include_usage = !a.no_usage;
    if (!a.body_variants.empty()) {
      TS_ASSIGN_OR_RETURN(o.body_variants, read_body_variants(a.body_variants));
    }
    TS_ASSIGN_OR_RETURN(t.sut, bench::HttpBackend::create(o));
    if (!a.tokenizer.empty()) {
      TS_ASSIGN_OR_RETURN(auto f, model::open_model_file(a.tokenizer));
      TS_ASSIGN_OR_RETURN(auto tok, model::make_tokenizer(f.metadata));
      t.tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(tok));
    }
    t.name = s;
  } else {
    return invalid_argument("--target '" + s +
                            "': expected an http:// URL, inproc:MODEL_PATH or null[:ttft_ms=..,"
                            "itl_ms=..]");
  }
  return t;
}

struct Workload {
  bench::InMemoryLibrary library;
  std::vector<double> trace_times_s;
  nlohmann::json description;
};

Result<Workload> make_workload(const BenchServeArgs& a, const model::Tokenizer* tokenizer) {
  Workload w;
  bench::PromptSynthesizer synth(tokenizer);
  TS_ASSIGN_OR_RETURN(bench::LengthSpec out_len, bench::parse_length_spec(a.output_len));
  if (!a.trace.empty()) {
    bench::TraceFormat f;
    if (a.trace_format.empty()) {
      TS_ASSIGN_OR_RETURN(f, bench::detect_trace_format(a.trace));
    } else {
      TS_ASSIGN_OR_RETURN(f, bench::parse_trace_format(a.trace_format));
    }
    TS_ASSIGN_OR_RETURN(auto entries, bench::load_trace(a.trace, f, a.num_prompts));
    bench::ReplayOptions ro;
    ro.time_scale = a.time_scale;
    ro.max_input_tokens = a.max_input_len;
    ro.scaled_block_tokens = a.trace_block_tokens;
    ro.max_output_tokens = a.max_output_len;
    ro.seed = a.seed;
    bench::Replay r = bench::build_replay(entries, ro, synth);
    w.library = std::move(r.library);
    w.trace_times_s = std::move(r.times_s);
    w.description = {{"source", "trace"}, {"path", a.trace},
                     {"format", bench::trace_format_name(f)}, {"time_scale", a.time_scale},
                     {"entries", entries.size()}, {"max_input_len", a.max_input_len},
                     {"trace_block_tokens", a.trace_block_tokens},
                     {"max_output_len", a.max_output_len}};
  } else if (!a.prompts.empty()) {
    TS_ASSIGN_OR_RETURN(w.library, bench::load_prompt_file(a.prompts, out_len, a.seed, tokenizer));
    w.description = {{"source", "prompts"}, {"path", a.prompts}, {"output_len", a.output_len}};
  } else {
    bench::SyntheticOptions so;
    TS_ASSIGN_OR_RETURN(so.input_len, bench::parse_length_spec(a.input_len));
    so.output_len = out_len;
    so.n_prompts = a.library_size > 0 ? a.library_size : std::min<int64_t>(a.num_prompts, 4096);
    so.seed = a.seed;
    w.library = bench::make_synthetic_library(so, synth);
    w.description = {{"source", "synthetic"}, {"input_len", bench::format_length_spec(so.input_len)},
                     {"output_len", bench::format_length_spec(so.output_len)},
                     {"prompts", so.n_prompts},
                     {"exact_token_ids", tokenizer != nullptr}};
  }
  return w;
}

Result<double> parse_rate(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  TS_ASSIGN_OR_RETURN(auto v, bench::parse_series(s));
  if (v.size() != 1) return invalid_argument("--request-rate: one value unless --scenario sweep");
  return v[0];
}

int run_bench_serve(const BenchServeArgs& a) {
  const bool sweep = a.scenario == "sweep";
  bench::TestSettings base;
  if (!sweep) {
    auto sc = bench::parse_scenario(a.scenario);
    if (!sc.is_ok()) return fail(sc.status());
    base.scenario = *sc;
  }
  auto slo = bench::parse_slo(a.slo);
  if (!slo.is_ok()) return fail(slo.status());
  auto kind = bench::parse_arrival_kind(a.arrival);
  if (!kind.is_ok()) return fail(kind.status());
  // As in vLLM: a burstiness other than 1 means gamma arrivals.
  base.arrivals.kind = (a.burstiness != 1.0 && *kind == bench::ArrivalKind::kPoisson)
                           ? bench::ArrivalKind::kGamma
                           : *kind;
  base.arrivals.burstiness = a.burstiness;
  base.min_queries = a.num_prompts;
  base.min_duration_s = a.min_duration;
  base.warmup_queries = a.warmup;
  base.seed = a.seed;
  base.shuffle_samples = a.shuffle;

  // The points to run: one, or a sweep over rates or concurrencies.
  std::vector<std::pair<std::string, bench::TestSettings>> points;
  if (sweep) {
    const bool by_rate = a.concurrency.empty() || a.request_rate != "inf";
    auto series = bench::parse_series(by_rate ? a.request_rate : a.concurrency);
    if (!series.is_ok()) return fail(series.status().with_context("--scenario sweep"));
    for (double v : *series) {
      bench::TestSettings s = base;
      if (by_rate) {
        s.scenario = bench::Scenario::kServer;
        s.arrivals.rate = v;
        if (!a.concurrency.empty()) s.concurrency = std::stoi(a.concurrency);
        points.emplace_back(fmt::format("rate={:g}", v), s);
      } else {
        s.scenario = bench::Scenario::kConcurrency;
        s.concurrency = static_cast<int32_t>(v);
        points.emplace_back(fmt::format("concurrency={:g}", v), s);
      }
    }
  } else {
    bench::TestSettings s = base;
    if (s.scenario == bench::Scenario::kServer) {
      auto r = parse_rate(a.request_rate);
      if (!r.is_ok()) return fail(r.status());
      s.arrivals.rate = *r;
    }
    if (!a.concurrency.empty()) {
      char* end = nullptr;
      const long c = std::strtol(a.concurrency.c_str(), &end, 10);
      if (*end != '\0' || c < 1) return fail("--concurrency: expected an integer >= 1");
      s.concurrency = static_cast<int32_t>(c);
    }
    points.emplace_back("", s);
  }

  auto target = make_target(a);
  if (!target.is_ok()) return fail(target.status());
  auto work = make_workload(a, target->tokenizer.get());
  if (!work.is_ok()) return fail(work.status());
  for (auto& [label, s] : points) {
    if (!work->trace_times_s.empty() && s.scenario == bench::Scenario::kTrace) {
      s.trace_times_s = work->trace_times_s;
    } else if (s.scenario == bench::Scenario::kTrace) {
      return fail("--scenario trace needs --trace FILE");
    }
  }

  // Speculation counters before and after (in-process engine, or a Tessera server's /metrics).
  const auto read_spec = [&]() -> std::optional<bench::SpecCounters> {
    if (target->engine) {
      const engine::EngineStats st = target->engine->stats();
      return bench::SpecCounters{static_cast<double>(st.spec_draft_tokens),
                                 static_cast<double>(st.spec_accepted_tokens)};
    }
    if (a.target.rfind("http://", 0) == 0) return bench::scrape_spec_counters(a.target, 5.0);
    return std::nullopt;
  };
  const std::optional<bench::SpecCounters> spec_before = read_spec();
  const bool tty = isatty(2);
  bench::RealSleeper sleeper;
  bench::LoadGenerator gen(target->sut.get(), &work->library, &sleeper);
  std::vector<bench::ServePoint> results;
  for (auto& [label, s] : points) {
    if (!a.no_progress) {
      s.progress_interval_s = tty ? 0.25 : 5.0;
      s.on_progress = [tty, label = label](const bench::Progress& p) {
        const std::string line = (label.empty() ? "" : label + ": ") + bench::format_progress(p);
        if (tty) {
          std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
        } else {
          std::fprintf(stderr, "%s\n", line.c_str());
        }
      };
    }
    auto run = gen.run(s);
    if (tty && !a.no_progress) std::fprintf(stderr, "\n");
    if (!run.is_ok()) return fail(run.status());
    bench::ServePoint p;
    p.label = label;
    p.settings = s;
    p.settings.on_progress = nullptr;
    p.slo = *slo;
    p.metrics = bench::compute_metrics(*run, *slo);
    p.run = std::move(run).value();
    if (!label.empty()) std::printf("== %s\n", label.c_str());
    std::printf("%s\n", bench::format_summary(p, target->name).c_str());
    results.push_back(std::move(p));
  }
  if (sweep) std::printf("%s", bench::format_sweep(results, a.slo_attainment).c_str());
  std::optional<bench::SpecCounters> spec_delta;
  if (const std::optional<bench::SpecCounters> after = read_spec(); after && spec_before) {
    spec_delta = bench::SpecCounters{after->draft_tokens - spec_before->draft_tokens,
                                     after->accepted_tokens - spec_before->accepted_tokens};
    if (spec_delta->draft_tokens > 0) {
      std::printf("speculative decoding: %.0f of %.0f draft tokens accepted (%.1f%%)\n",
                  spec_delta->accepted_tokens, spec_delta->draft_tokens,
                  100.0 * spec_delta->acceptance());
    }
  }

  if (!a.out.empty()) {
    std::fflush(stdout);  // the tables first, then what was written (stderr)
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec) return fail("cannot create --out directory " + a.out + ": " + ec.message());
    nlohmann::json backend = target->sut->describe();
    backend["workload"] = work->description;
    if (spec_delta) {
      backend["spec_draft_tokens"] = spec_delta->draft_tokens;
      backend["spec_accepted_tokens"] = spec_delta->accepted_tokens;
      backend["spec_acceptance_rate"] = spec_delta->acceptance();
    }
    const int threads = a.threads > 0 ? a.threads : hardware_threads();
    const nlohmann::json summary = bench::summary_json(bench::describe_environment(threads),
                                                       backend, a.model, results,
                                                       a.slo_attainment);
    const std::string dir = a.out + "/";
    Status st = bench::write_text_file(dir + "summary.json", summary.dump(2) + "\n");
    if (st.is_ok()) st = bench::write_requests_jsonl(dir + "requests.jsonl", results);
    std::string mlperf;
    for (const auto& p : results) {
      if (!p.label.empty()) mlperf += "# " + p.label + "\n";
      mlperf += bench::format_mlperf_summary(p, target->name) + "\n";
    }
    if (st.is_ok()) st = bench::write_text_file(dir + "mlperf_log_summary.txt", mlperf);
    std::string chartjs_path;
    const std::string chartjs = load_chart_js(a.chartjs, &chartjs_path);
    if (chartjs.empty()) {
      std::fprintf(stderr,
                   "tessera: chart.js not found (%s): report.html has tables only; run "
                   "scripts/fetch-chartjs.sh or pass --chartjs FILE\n",
                   chartjs_path.empty() ? "no path" : chartjs_path.c_str());
    }
    if (st.is_ok()) {
      st = bench::write_text_file(dir + "report.html",
                                  bench::render_report_html(summary, results, chartjs));
    }
    if (!st.is_ok()) return fail(st);
    std::fprintf(stderr,
                 "tessera: wrote %ssummary.json, requests.jsonl, mlperf_log_summary.txt, "
                 "report.html\n",
                 dir.c_str());
  }
  return 0;
}

}  // namespace

void add_bench_serve_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<BenchServeArgs>();
  CLI::App* c = bench->add_subcommand(
      "serve", "Serving benchmark (LoadGen rules) against an OpenAI-compatible URL, the "
               "in-process engine, or the null backend");
  c->add_option("--target", a->target,
                "http://HOST:PORT (OpenAI-compatible), inproc:MODEL_PATH, or "
                "null[:ttft_ms=MS,itl_ms=MS,chunk=N]")
      ->required();
  c->add_option("--model", a->model, "Model name sent in requests (HTTP)");
  c->add_option("--tokenizer", a->tokenizer,
                "Tokenizer file: llama2.c checkpoints (inproc); with HTTP, a GGUF whose vocabulary "
                "makes synthetic prompts exact");
  c->add_option("--api", a->api, "HTTP API: completions or chat")->capture_default_str();
  c->add_option("--api-key", a->api_key, "Bearer token (default: $OPENAI_API_KEY)");
  c->add_option("--scenario", a->scenario,
                "offline, server, single-stream, concurrency, trace or sweep")
      ->capture_default_str();
  c->add_option("--request-rate", a->request_rate,
                "Requests/s for server (inf: all at once); sweep: a list like 1,2,4")
      ->capture_default_str();
  c->add_option("--arrival", a->arrival, "poisson, gamma or constant")->capture_default_str();
  c->add_option("--burstiness", a->burstiness,
                "Gamma shape (1 = Poisson; < 1 burstier); != 1 implies gamma")
      ->capture_default_str();
  c->add_option("--concurrency", a->concurrency,
                "concurrency: N in flight; server/offline: cap on in flight; sweep: a list");
  c->add_option("--num-prompts,-n", a->num_prompts, "Minimum measured queries")
      ->capture_default_str();
  c->add_option("--min-duration", a->min_duration, "Minimum measured seconds")
      ->capture_default_str();
  c->add_option("--warmup", a->warmup, "Warm-up queries (run first, not counted)")
      ->capture_default_str();
  c->add_option("--library-size", a->library_size,
                "Distinct synthetic prompts (default: min(num-prompts, 4096))");
  c->add_option("--input-len", a->input_len,
                "Prompt tokens: N, uniform:LO:HI, normal:MEAN:STD or exp:MEAN")
      ->capture_default_str();
  c->add_option("--output-len", a->output_len, "Max output tokens, same forms")
      ->capture_default_str();
  c->add_option("--prompts", a->prompts, "JSONL of {\"prompt\": ..., \"max_tokens\": N}");
  c->add_option("--trace", a->trace, "Trace to replay (azure CSV, mooncake JSONL, splitwise CSV)");
  c->add_option("--trace-format", a->trace_format, "azure, mooncake or splitwise (default: detect)");
  c->add_option("--time-scale", a->time_scale, "Trace time compression (2 = twice as fast)")
      ->capture_default_str();
  c->add_option("--max-input-len", a->max_input_len, "Clip trace prompts to N tokens");
  c->add_option("--trace-block-tokens", a->trace_block_tokens,
                "Replay each Mooncake hash block as N tokens instead of 512, prompt lengths "
                "scaled alike: the same prefix sharing at a fraction of the prefill")
      ->check(CLI::Range(1, 4096));
  c->add_option("--max-output-len", a->max_output_len, "Clip trace outputs to N tokens");
  c->add_option("--seed", a->seed, "Seed of the schedule and the prompts")->capture_default_str();
  c->add_flag("--shuffle", a->shuffle, "Draw samples at random instead of in order");
  c->add_option("--slo", a->slo, "SLOs for goodput: ttft=MS,tpot=MS,e2e=MS (any subset)");
  c->add_option("--slo-attainment", a->slo_attainment,
                "Sweep: a point passes when this fraction meets the SLO")
      ->capture_default_str();
  c->add_option("--out", a->out,
                "Directory for summary.json, requests.jsonl, mlperf_log_summary.txt, report.html");
  c->add_option("--timeout", a->timeout, "HTTP: seconds without a byte before a query fails")
      ->capture_default_str();
  c->add_option("--io-threads", a->io_threads, "HTTP client threads (1 or 2)")
      ->capture_default_str();
  c->add_flag("--ignore-eos", a->ignore_eos, "HTTP: send ignore_eos (exact output lengths)");
  c->add_option("--body-variants", a->body_variants,
                 "HTTP: JSONL file of objects merged into the request bodies, query i taking line "
                 "i mod N (e.g. {\"model\": \"base:a1\"} per line to spread requests over adapters)");
  c->add_flag("--no-usage", a->no_usage,
              "HTTP: do not ask for stream usage (count one token per chunk)");
  c->add_option("--threads,-t", a->threads, "inproc: compute threads (default: all cores)");
  c->add_option("--parallel", a->parallel,
                "inproc: sequences running at once at most (admission is by KV blocks)")
      ->capture_default_str();
  c->add_option("--ctx-size", a->ctx_size, "inproc: context per sequence (0: the model's)");
  add_spec_options(c, &a->spec);
  c->add_flag("--no-progress", a->no_progress, "No progress line on stderr");
  c->add_option("--chartjs", a->chartjs,
                "chart.js UMD file to inline in report.html (default: $TESSERA_CHARTJS or the "
                "build's cache)");
  c->callback([&run, a] { run = [a] { return run_bench_serve(*a); }; });
}

}  // namespace tessera::cli
