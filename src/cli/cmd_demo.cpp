// `tessera demo`: the main job on an embedded default, needing no data. Synthesizes a
// SmolLM2-135M-shaped Q8_0 model (random weights, generated vocabulary) once into a cache
// directory, then generates from it and reports speed. The text is meaningless by design: the
// weights are random; this shows the pipeline end to end and measures it.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/generator.h"
#include "tessera/model/synth.h"

namespace tessera::cli {
namespace {

struct DemoArgs {
  std::string dir;
  std::string shape = "smollm2-135m";
  std::string dtype = "q8_0";
  int32_t max_tokens = 64;
  int threads = 0;
};

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::string(x) + "/tessera";
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.cache/tessera";
  return "/tmp/tessera-cache";
}

int run_demo(const DemoArgs& a) {
  const std::string dir = a.dir.empty() ? default_cache_dir() : a.dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", dir, ec.message()));
  const std::string path = fmt::format("{}/synth-{}-{}.gguf", dir, a.shape, a.dtype);
  if (!std::filesystem::exists(path)) {
    auto shape = model::find_synth_shape(a.shape);
    auto dtype = kernels::dtype_from_name(a.dtype);
    if (!shape || !dtype) return fail("unknown --shape or --dtype");
    std::fprintf(stderr, "tessera: synthesizing a %s-shaped %s model at %s ...\n", a.shape.c_str(),
                 a.dtype.c_str(), path.c_str());
    model::SynthOptions o;
    o.shape = *shape;
    o.dtype = *dtype;
    Status s = model::write_synthetic_model(o, path);
    if (!s.is_ok()) return fail(s);
  }
  auto loaded = load_model_and_tokenizer(path, "");
  if (!loaded.is_ok()) return fail(loaded.status());
  const auto& cfg = loaded->model->config();
  std::fprintf(stderr, "tessera: model %s: %lld layers, dim %lld, vocab %lld (random weights)\n",
               path.c_str(), (long long)cfg.n_layers, (long long)cfg.dim, (long long)cfg.n_vocab);
  const std::string prompt = "Once upon a time";
  std::vector<int32_t> ids = loaded->tokenizer->encode(prompt, true, false);
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  engine::Generator gen(*loaded->model, loaded->tokenizer.get(), &pool);
  engine::GenerateOptions opts;
  opts.max_tokens = a.max_tokens;
  opts.sampling.temperature = 0.0f;
  opts.stop_at_end_of_generation = false;
  std::printf("%s", prompt.c_str());
  auto r = gen.generate(ids, opts, [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!r.is_ok()) return fail(r.status());
  std::printf("\n");
  std::printf("prompt: %zu tokens, %.1f tokens/s | generation: %zu tokens, %.2f tokens/s | %d threads\n",
              ids.size(), r->prefill_seconds > 0 ? ids.size() / r->prefill_seconds : 0.0,
              r->tokens.size(), r->decode_seconds > 0 ? r->decode_steps / r->decode_seconds : 0.0,
              pool.size());
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Synthesize a small model (once, cached) and generate from it, printing tokens/s");
  cmd->add_option("--dir", a->dir, "Cache directory (default: ~/.cache/tessera)");
  cmd->add_option("--shape", a->shape, "Synthetic shape")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "Weight type")->capture_default_str();
  cmd->add_option("--max-tokens,-n", a->max_tokens, "Tokens to generate")->capture_default_str();
  cmd->add_option("--threads,-t", a->threads, "Threads (default: all cores)");
  cmd->callback([&run, a] { run = [a] { return run_demo(*a); }; });
}

}  // namespace tessera::cli
