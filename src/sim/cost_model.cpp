#include "tessera/sim/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/kernels/dtype.h"

namespace tessera::sim {
namespace {

// From each model's published config.json (hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, intermediate_size, vocab_size, max_position_embeddings) and its model
// card's parameter count. bytes_per_weight is filled in from the dtype.
const std::array<ModelShape, 6>& builtin_shapes() {
  static const std::array<ModelShape, 6> kShapes = {{
      // name, n_params, layers, d_model, heads, kv heads, d_ff, vocab, bytes/w, kv bytes, ctx
      {"llama-3-8b", 8'030'261'248, 32, 4096, 32, 8, 14336, 128256, 2.0, 2.0, 8192},
      {"llama-2-13b", 13'015'864'320, 40, 5120, 40, 40, 13824, 32000, 2.0, 2.0, 4096},
      {"qwen2.5-32b", 32'763'876'352, 64, 5120, 40, 8, 27648, 152064, 2.0, 2.0, 32768},
      {"llama-3-70b", 70'553'706'496, 80, 8192, 64, 8, 28672, 128256, 2.0, 2.0, 8192},
      {"tinyllama-1.1b", 1'100'048'384, 22, 2048, 32, 4, 5632, 32000, 2.0, 2.0, 2048},
      {"smollm2-135m", 134'515'008, 30, 576, 9, 3, 1536, 49152, 2.0, 2.0, 8192},
  }};
  return kShapes;
}

Status validate_shape(const ModelShape& m) {
  if (m.n_params <= 0 || m.n_layers <= 0 || m.d_model <= 0 || m.n_heads <= 0 ||
      m.n_kv_heads <= 0 || m.d_model % m.n_heads != 0 || !(m.bytes_per_weight > 0.0) ||
      !(m.kv_bytes_per_elem > 0.0)) {
    return invalid_argument(fmt::format(
        "model shape '{}': expected positive n_params, n_layers, d_model, n_heads, n_kv_heads, "
        "bytes per weight and per KV element with d_model a multiple of n_heads; found {} params, "
        "{} layers, d_model {}, {} heads, {} kv heads, {} B/weight, {} B/KV element",
        m.name, m.n_params, m.n_layers, m.d_model, m.n_heads, m.n_kv_heads, m.bytes_per_weight,
        m.kv_bytes_per_elem));
  }
  return Status::ok();
}

std::string dtype_label(double bytes_per_weight) {
  return fmt::format("{:.4g} B/weight", bytes_per_weight);
}

class RooflineCost final : public CostModel {
 public:
  RooflineCost(ModelShape m, AcceleratorSpec a, RooflineOptions o, std::string dtype)
      : m_(std::move(m)), a_(std::move(a)), o_(o), dtype_(std::move(dtype)),
        weight_bytes_(m_.weight_bytes()), kv_per_token_(m_.kv_bytes_per_token()) {
    const double tp = o_.tp;
    mem_Bps_ = tp * a_.memory_bw_Bps * a_.bw_efficiency;
    flops_ = tp * a_.flops * a_.flops_efficiency;
    ring_factor_ = o_.tp > 1 ? 2.0 * (tp - 1.0) / tp : 0.0;
    kv_capacity_ = static_cast<int64_t>(std::floor(
        (tp * a_.memory_bytes - static_cast<double>(weight_bytes_)) * o_.kv_memory_fraction /
        static_cast<double>(kv_per_token_)));
  }

  std::string describe() const override {
    return fmt::format("roofline {} {} on {} x {}", m_.name, dtype_, o_.tp, a_.name);
  }

  double step_s(const StepWork& w) const override {
    const double tokens = w.tokens();
    const double ctx = static_cast<double>(w.context_tokens);
    if (tokens <= 0) return 0.0;
    const double kv = static_cast<double>(kv_per_token_);
    const double bytes = static_cast<double>(weight_bytes_) +
                         (static_cast<double>(w.kv_read_tokens) + tokens) * kv;
    const double flops = 2.0 * static_cast<double>(m_.n_params) * tokens +
                         4.0 * m_.n_layers * static_cast<double>(m_.d_model) * ctx;
    const double comm = ring_factor_ * 2.0 * m_.n_layers * tokens * m_.d_model * 2.0 /
                        a_.interconnect_Bps;
    return a_.step_overhead_s + std::max(bytes / mem_Bps_, flops / flops_) + comm;
  }

  int64_t weight_bytes() const override { return weight_bytes_; }
  int64_t kv_bytes_per_token() const override { return kv_per_token_; }
  int64_t kv_capacity_tokens() const override { return kv_capacity_; }
  double load_s() const override {
    return static_cast<double>(weight_bytes_) / a_.disk_Bps + o_.load_overhead_s;
  }
  double resume_s() const override {
    return static_cast<double>(weight_bytes_) / (o_.tp * a_.host_link_Bps);
  }
  double suspend_s() const override { return resume_s(); }
  int32_t accelerators() const override { return o_.tp; }

 private:
  const ModelShape m_;
  const AcceleratorSpec a_;
  const RooflineOptions o_;
  const std::string dtype_;
  const int64_t weight_bytes_;
  const int64_t kv_per_token_;
  double mem_Bps_ = 0.0;
  double flops_ = 0.0;
  double ring_factor_ = 0.0;
  int64_t kv_capacity_ = 0;
};

class MeasuredCost final : public CostModel {
 public:
  struct Fit {
    double tg_step_s = 0.0;
    double per_row_s = 0.0;
    double per_position_s = 0.0;
    double per_attn_s = 0.0;
  };
  MeasuredCost(Fit fit, MeasuredCostOptions o) : fit_(overridden(fit, o)), o_(std::move(o)) {}
  static Fit overridden(Fit f, const MeasuredCostOptions& o) {
    if (o.tg_step_s > 0) f.tg_step_s = o.tg_step_s;
    if (o.per_row_s > 0) f.per_row_s = o.per_row_s;
    return f;
  }

  std::string describe() const override {
    return fmt::format("measured {} on this machine ({:.3f} ms/decode step, {:.3f} ms/extra row{})",
                       o_.name, fit_.tg_step_s * 1e3, fit_.per_row_s * 1e3,
                       o_.tg_step_s > 0 || o_.per_row_s > 0 ? ", given" : "");
  }
  double step_s(const StepWork& w) const override {
    const int32_t tokens = w.tokens();
    if (tokens <= 0) return 0.0;
    return fit_.tg_step_s + (tokens - 1) * fit_.per_row_s +
           context_s(fit_, static_cast<double>(w.kv_read_tokens),
                     static_cast<double>(w.context_tokens));
  }
  // The larger of reading `kv_read` positions' KV and attending `context` positions.
  static double context_s(const Fit& f, double kv_read, double context) {
    return std::max(kv_read * f.per_position_s, context * f.per_attn_s);
  }
  int64_t weight_bytes() const override { return o_.weight_bytes; }
  int64_t kv_bytes_per_token() const override { return o_.kv_bytes_per_token; }
  int64_t kv_capacity_tokens() const override { return o_.kv_capacity_tokens; }
  double load_s() const override { return o_.load_s; }
  double resume_s() const override { return o_.resume_s; }
  double suspend_s() const override { return o_.suspend_s; }
  int32_t accelerators() const override { return 1; }

 private:
  const Fit fit_;
  const MeasuredCostOptions o_;
};

// One pp or tg entry of a `bench model --json` record.
struct BenchEntry {
  bool present = false;
  double n_tokens = 0.0;
  double tokens_per_s = 0.0;
  double bytes_per_run = 0.0;
  double flops_per_run = 0.0;
};

Result<BenchEntry> find_entry(const nlohmann::json& results, char prefix) {
  BenchEntry e;
  for (const auto& r : results) {
    if (!r.is_object()) continue;
    auto test = r.find("test");
    if (test == r.end() || !test->is_string()) continue;
    const std::string name = test->get<std::string>();
    if (name.size() < 3 || name[0] != prefix || name[1] != (prefix == 'p' ? 'p' : 'g')) continue;
    auto num = [&](const char* key) -> const nlohmann::json* {
      auto it = r.find(key);
      return it != r.end() && it->is_number() ? &*it : nullptr;
    };
    const nlohmann::json* tps = num("tokens_per_second_median");
    if (tps == nullptr) tps = num("tokens_per_second_mean");
    const nlohmann::json* n = num("n_tokens");
    const nlohmann::json* bytes = num("bytes_per_run");
    if (tps == nullptr || n == nullptr || bytes == nullptr) {
      return invalid_argument(fmt::format(
          "bench model record: result '{}' lacks tokens_per_second_median (or _mean), n_tokens "
          "or bytes_per_run",
          name));
    }
    e.present = true;
    e.tokens_per_s = tps->get<double>();
    e.n_tokens = n->get<double>();
    e.bytes_per_run = bytes->get<double>();
    if (const nlohmann::json* f = num("flops_per_run")) e.flops_per_run = f->get<double>();
    if (!(e.tokens_per_s > 0.0) || !(e.n_tokens >= 1.0)) {
      return invalid_argument(fmt::format(
          "bench model record: result '{}' has {} tokens/s over {} tokens; expected both > 0",
          name, e.tokens_per_s, e.n_tokens));
    }
    return e;
  }
  return e;
}

double positions(double n) { return n * (n + 1.0) / 2.0; }

double median_of(const nlohmann::json& a) {
  std::vector<double> v;
  for (const auto& x : a) {
    if (x.is_number()) v.push_back(x.get<double>());
  }
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

int64_t ModelShape::weight_bytes() const {
  return static_cast<int64_t>(std::llround(static_cast<double>(n_params) * bytes_per_weight));
}

int64_t ModelShape::kv_bytes_per_token() const {
  return static_cast<int64_t>(std::llround(2.0 * n_layers * n_kv_heads * head_dim() *
                                           kv_bytes_per_elem));
}

std::vector<std::string> model_shape_names() {
  std::vector<std::string> out;
  for (const auto& s : builtin_shapes()) out.push_back(s.name);
  return out;
}

Result<ModelShape> find_model_shape(std::string_view name, std::string_view dtype) {
  const ModelShape* found = nullptr;
  for (const auto& s : builtin_shapes()) {
    if (s.name == name) found = &s;
  }
  if (found == nullptr) {
    std::string known;
    for (const auto& n : model_shape_names()) known += (known.empty() ? "" : ", ") + n;
    return invalid_argument(fmt::format("unknown model shape '{}'; known: {}", name, known));
  }
  const auto t = kernels::dtype_from_name(dtype);
  if (!t.has_value()) {
    return invalid_argument(fmt::format(
        "unknown weight dtype '{}'; use a GGML type name such as f32, bf16, f16, q8_0, q4_0, q4_k",
        dtype));
  }
  const kernels::DTypeInfo& info = kernels::dtype_info(*t);
  ModelShape s = *found;
  s.bytes_per_weight = static_cast<double>(info.block_bytes) / static_cast<double>(info.block_size);
  return s;
}

Result<std::unique_ptr<CostModel>> make_roofline_cost(const ModelShape& shape,
                                                      const AcceleratorSpec& spec,
                                                      const RooflineOptions& options) {
  TS_RETURN_IF_ERROR(validate_shape(shape));
  TS_RETURN_IF_ERROR(validate_accelerator(spec));
  if (options.tp < 1) {
    return invalid_argument(fmt::format("tensor-parallel degree must be >= 1, got {}", options.tp));
  }
  if (!(options.kv_memory_fraction > 0.0 && options.kv_memory_fraction <= 1.0)) {
    return invalid_argument(fmt::format("kv_memory_fraction must be in (0, 1], got {}",
                                        options.kv_memory_fraction));
  }
  if (!(options.load_overhead_s >= 0.0)) {
    return invalid_argument(fmt::format("load_overhead_s must be >= 0, got {}",
                                        options.load_overhead_s));
  }
  const double weights = static_cast<double>(shape.weight_bytes());
  const double memory = options.tp * spec.memory_bytes;
  const double kv_room = (memory - weights) * options.kv_memory_fraction;
  if (kv_room < static_cast<double>(shape.kv_bytes_per_token())) {
    const int needed = static_cast<int>(std::floor(weights / spec.memory_bytes)) + 1;
    return resource_exhausted(fmt::format(
        "{} ({:.1f} GB of weights at {}) does not fit {} x {} ({:.1f} GB) with room for KV; "
        "use tp >= {} or a smaller dtype",
        shape.name, weights / 1e9, dtype_label(shape.bytes_per_weight), options.tp, spec.name,
        memory / 1e9, needed));
  }
  std::string dtype = dtype_label(shape.bytes_per_weight);
  for (const char* n : {"f32", "bf16", "q8_0", "q4_0", "q4_K", "q3_K", "q2_K"}) {
    const auto& info = kernels::dtype_info(*kernels::dtype_from_name(n));
    if (static_cast<double>(info.block_bytes) / static_cast<double>(info.block_size) ==
        shape.bytes_per_weight) {
      dtype = n;  // bf16 and f16 share 2 bytes; "bf16" names both here
      break;
    }
  }
  return std::unique_ptr<CostModel>(
      std::make_unique<RooflineCost>(shape, spec, options, std::move(dtype)));
}

Result<std::unique_ptr<CostModel>> measured_cost_from_json(const nlohmann::json& rec,
                                                           const MeasuredCostOptions& options) {
  if (!rec.is_object() || !rec.contains("results") || !rec["results"].is_array()) {
    return invalid_argument(
        "not a `tessera bench model --json` record: expected an object with a results array");
  }
  if (options.kv_capacity_tokens <= 0) {
    return invalid_argument(fmt::format(
        "measured cost: kv_capacity_tokens must be > 0 (the engine's KV pool), got {}",
        options.kv_capacity_tokens));
  }
  if (options.tg_step_s < 0 || options.per_row_s < 0 || !std::isfinite(options.tg_step_s) ||
      !std::isfinite(options.per_row_s)) {
    return invalid_argument("measured cost: tg_step_s and per_row_s must be >= 0 (0: the record's)");
  }
  TS_ASSIGN_OR_RETURN(BenchEntry pp, find_entry(rec["results"], 'p'));
  TS_ASSIGN_OR_RETURN(BenchEntry tg, find_entry(rec["results"], 't'));
  if (!tg.present) {
    return invalid_argument(
        "bench model record has no tg result; run `tessera bench model` with -n > 0");
  }
  const nlohmann::json model = rec.value("model", nlohmann::json::object());

  // A per-position constant c: recorded (top level or under "model"), or solved from the two
  // results, pp_total = a_pp X + Ppp c and tg_total = N_tg X + Ptg c, whose per-step term X is
  // the same (bytes: the weights once per step, a_pp = 1; FLOPs: 2P per token, a_pp = N_pp).
  auto per_position = [&](const char* key, double a_pp, double pp_total, double tg_total) {
    for (const nlohmann::json* where : {&rec, &model}) {
      auto it = where->find(key);
      if (it != where->end() && it->is_number()) return std::max(0.0, it->get<double>());
    }
    if (!pp.present) return 0.0;
    const double r = tg.n_tokens / a_pp;
    const double det = positions(tg.n_tokens) - r * positions(pp.n_tokens);
    if (det == 0.0) return 0.0;
    return std::max(0.0, (tg_total - r * pp_total) / det);
  };
  const double k =
      per_position("kv_bytes_per_position", 1.0, pp.bytes_per_run, tg.bytes_per_run);
  const double attn = per_position("attn_flops_per_position", pp.n_tokens, pp.flops_per_run,
                                   tg.flops_per_run);

  MeasuredCost::Fit fit;
  const double tg_mean_s = 1.0 / tg.tokens_per_s;
  const double tg_run_s = tg.n_tokens * tg_mean_s;
  fit.per_position_s = tg.bytes_per_run > 0.0 ? k * tg_run_s / tg.bytes_per_run : 0.0;
  double pp_s = 0.0;
  if (pp.present) {
    pp_s = pp.n_tokens / pp.tokens_per_s;
    fit.per_attn_s = pp.flops_per_run > 0.0 ? attn * pp_s / pp.flops_per_run : 0.0;
  }
  const double tg_mean_ctx = (tg.n_tokens + 1.0) / 2.0;
  fit.tg_step_s =
      std::max(0.0, tg_mean_s - MeasuredCost::context_s(fit, tg_mean_ctx, tg_mean_ctx));
  if (pp.present && pp.n_tokens > 1.0) {
    const double pp_ctx = MeasuredCost::context_s(fit, pp.n_tokens, positions(pp.n_tokens));
    fit.per_row_s = std::max(0.0, (pp_s - pp_ctx - fit.tg_step_s) / (pp.n_tokens - 1.0));
  } else {
    fit.per_row_s = fit.tg_step_s;
  }

  MeasuredCostOptions o = options;
  if (o.weight_bytes <= 0) {
    for (const char* key : {"repacked_bytes", "bytes"}) {
      if (model.contains(key) && model[key].is_number() && model[key].get<double>() > 0) {
        o.weight_bytes = model[key].get<int64_t>();
        break;
      }
    }
  }
  if (o.kv_bytes_per_token <= 0) o.kv_bytes_per_token = std::llround(k);
  if (o.name.empty()) o.name = model.value("name", std::string("model"));
  return std::unique_ptr<CostModel>(std::make_unique<MeasuredCost>(fit, std::move(o)));
}

Status apply_resume_record(const nlohmann::json& rec, MeasuredCostOptions& options) {
  if (!rec.is_object() || !rec.contains("weight_bytes") || !rec["weight_bytes"].is_number() ||
      !rec.contains("host_resume_s") || !rec["host_resume_s"].is_array() ||
      rec["host_resume_s"].empty()) {
    return invalid_argument(
        "not a `tessera bench resume --json` record: expected weight_bytes and a non-empty "
        "host_resume_s array");
  }
  options.weight_bytes = rec["weight_bytes"].get<int64_t>();
  options.resume_s = median_of(rec["host_resume_s"]);
  if (rec.contains("suspend_s") && rec["suspend_s"].is_array() && !rec["suspend_s"].empty()) {
    options.suspend_s = median_of(rec["suspend_s"]);
  }
  if (rec.contains("disk_resume_s") && rec["disk_resume_s"].is_array() &&
      !rec["disk_resume_s"].empty()) {
    options.load_s = median_of(rec["disk_resume_s"]);
  }
  return Status::ok();
}

}  // namespace tessera::sim
