#include "tessera/model/lora_adapter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_reader.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/hf_names.h"
#include "tessera/model/format/safetensors.h"
#include "tessera/model/model_config.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using kernels::DType;

// A tensor as f32 values in its memory order. Errors: kUnsupported for types without kernels.
Result<std::vector<float>> to_f32(const TensorInfo& t) {
  if (!kernels::dtype_info(t.dtype).supported) {
    return unsupported(fmt::format("tensor '{}' has type {}, which Tessera cannot read",
                                   t.name, kernels::dtype_name(t.dtype)));
  }
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  kernels::kernels_for(kernels::scalar_kernel_table(), t.dtype)
      .to_float(t.data, out.data(), t.n_elements());
  for (float v : out) {
    if (!std::isfinite(v)) {
      return corrupt_data(fmt::format("tensor '{}' holds a non-finite value", t.name));
    }
  }
  return out;
}

struct Pair {
  const TensorInfo* a = nullptr;
  const TensorInfo* b = nullptr;
};

// adapter_config.json is a few hundred bytes; anything past this is not one.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// The text of a small regular file: opened without blocking (a FIFO or a device fails here
// instead of waiting for a writer), checked to be a regular file before any read, and read up
// to `max_bytes`.
Result<std::string> read_text(const fs::path& p, size_t max_bytes = kMaxConfigBytes) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return not_found(fmt::format("cannot read {}", p.string()));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return invalid_argument(fmt::format("{} is not a regular file", p.string()));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return invalid_argument(fmt::format("{} has {} bytes; at most {} are read", p.string(),
                                        static_cast<long long>(st.st_size), max_bytes));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the file shrank: read what is there
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

struct PeftConfig {
  int64_t r = 0;
  double alpha = 0.0;
  bool rslora = false;
};

Result<PeftConfig> parse_peft_config(const fs::path& path) {
  TS_ASSIGN_OR_RETURN(const std::string text, read_text(path));
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string where = path.string();
  if (j.is_discarded() || !j.is_object()) {
    return corrupt_data(fmt::format("{}: not a JSON object", where));
  }
  auto str = [&](const char* key, const char* fallback) -> std::string {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  auto truthy = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  auto non_empty = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && !it->is_null() &&
           !((it->is_object() || it->is_array()) && it->empty());
  };
  const std::string peft_type = str("peft_type", "");
  if (peft_type != "LORA") {
    return unsupported(fmt::format("{}: peft_type '{}' is not LORA", where, peft_type));
  }
  if (truthy("use_dora")) return unsupported(fmt::format("{}: DoRA adapters are not applied yet", where));
  if (truthy("fan_in_fan_out")) {
    return unsupported(fmt::format("{}: fan_in_fan_out (Conv1D layouts) is not supported", where));
  }
  if (const std::string bias = str("bias", "none"); bias != "none") {
    return unsupported(fmt::format("{}: bias '{}' (trained biases) is not supported", where, bias));
  }
  if (non_empty("modules_to_save")) {
    return unsupported(fmt::format("{}: modules_to_save (fully trained modules) is not supported", where));
  }
  if (non_empty("alpha_pattern")) {
    return unsupported(fmt::format("{}: alpha_pattern (per-module alpha) is not supported yet", where));
  }
  PeftConfig c;
  const auto r = j.find("r");
  const auto alpha = j.find("lora_alpha");
  if (r == j.end() || !r->is_number_integer() || r->get<int64_t>() < 1) {
    return corrupt_data(fmt::format("{}: 'r' must be a positive integer", where));
  }
  if (alpha == j.end() || !alpha->is_number() || !std::isfinite(alpha->get<double>())) {
    return corrupt_data(fmt::format("{}: 'lora_alpha' must be a number", where));
  }
  c.r = r->get<int64_t>();
  c.alpha = alpha->get<double>();
  c.rslora = truthy("use_rslora");
  return c;
}

// "...layers.N.<module>.lora_A.weight" -> ("blk.N.<tensor>.weight", is_a). Errors name the key.
Result<std::pair<std::string, bool>> map_peft_name(const std::string& key) {
  if (key.find("lora_magnitude_vector") != std::string::npos) {
    return unsupported(fmt::format("tensor '{}': DoRA magnitudes are not applied yet", key));
  }
  bool is_a = false;
  std::string_view rest;
  if (key.ends_with(".lora_A.weight")) {
    is_a = true;
    rest = std::string_view(key).substr(0, key.size() - 14);
  } else if (key.ends_with(".lora_B.weight")) {
    rest = std::string_view(key).substr(0, key.size() - 14);
  } else {
    return unsupported(fmt::format("tensor '{}' is not a LoRA A/B weight (embeddings, biases and "
                                   "fully trained modules are not applied)", key));
  }
  const size_t at = rest.find("layers.");
  if (at == std::string_view::npos || (at > 0 && rest[at - 1] != '.')) {
    return invalid_argument(fmt::format("tensor '{}': targets no decoder layer (only q/k/v/o and "
                                        "gate/up/down projections are supported)", key));
  }
  std::string_view after = rest.substr(at + 7);
  size_t digits = 0;
  while (digits < after.size() && digits < 6 && after[digits] >= '0' && after[digits] <= '9') ++digits;
  if (digits == 0 || digits >= after.size() || after[digits] != '.') {
    return invalid_argument(fmt::format("tensor '{}': no layer number after 'layers.'", key));
  }
  const std::string layer(after.substr(0, digits));
  const std::string_view module = after.substr(digits + 1);
  if (const auto gguf = hf_projection_to_gguf(module)) {
    return std::pair{fmt::format("blk.{}.{}.weight", layer, *gguf), is_a};
  }
  return invalid_argument(fmt::format("tensor '{}': target module '{}' is not supported (q_proj, "
                                      "k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj are)",
                                      key, module));
}

// B (n_out x rank, as files hold it) -> Bt (rank x n_out).
std::vector<float> transpose_b(const std::vector<float>& b, int64_t n_out, int64_t rank) {
  std::vector<float> bt(b.size());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t k = 0; k < rank; ++k) bt[static_cast<size_t>(k * n_out + o)] = b[static_cast<size_t>(o * rank + k)];
  }
  return bt;
}

// Fills m from the pair after checking it against the base; B comes back in `b` (n_out x rank)
// for the caller to reorder (RoPE rows) before it is stored transposed.
Status check_and_fill(const ModelFile& base, const std::string& target, const Pair& p,
                      LoraMatrix& m, std::vector<float>& b) {
  const TensorInfo* w = base.find_tensor(target);
  if (w == nullptr) {
    return invalid_argument(fmt::format("the base model has no tensor '{}' (another model's adapter?)", target));
  }
  if (p.a == nullptr || p.b == nullptr) {
    return invalid_argument(fmt::format("the pair for '{}' lacks its {}", target, p.a == nullptr ? "A" : "B"));
  }
  // A: ne = {in, r}; B: ne = {r, out} (both formats, GGUF order).
  if (p.a->n_dims != 2 || p.b->n_dims != 2) {
    return invalid_argument(fmt::format("'{}': A and B must be matrices, got {} and {}", target,
                                        p.a->shape_string(), p.b->shape_string()));
  }
  m.target = target;
  m.n_in = p.a->ne[0];
  m.rank = p.a->ne[1];
  m.n_out = p.b->ne[1];
  if (p.b->ne[0] != m.rank) {
    return invalid_argument(fmt::format("'{}': A has rank {} but B {} (B {})", target, m.rank,
                                        p.b->ne[0], p.b->shape_string()));
  }
  if (m.rank < 1 || m.rank > kMaxLoraRank) {
    return unsupported(fmt::format("'{}': rank {} (1 to {} supported)", target, m.rank, kMaxLoraRank));
  }
  if (w->n_dims != 2 || w->ne[0] != m.n_in || w->ne[1] != m.n_out) {
    return invalid_argument(fmt::format("'{}': the adapter updates a {} x {} matrix but the base's is {}",
                                        target, m.n_out, m.n_in, w->shape_string()));
  }
  TS_ASSIGN_OR_RETURN(m.a, to_f32(*p.a));
  TS_ASSIGN_OR_RETURN(b, to_f32(*p.b));
  return Status::ok();
}

// A and B both f16 (or both bf16) in the file: hold them so (their f32 values convert back
// exactly); otherwise f32.
void keep_file_dtype(const Pair& p, LoraMatrix& m) {
  const kernels::DType t = p.a->dtype;
  if (t != p.b->dtype || (t != kernels::DType::kF16 && t != kernels::DType::kBF16)) return;
  const auto& k = kernels::kernels_for(kernels::scalar_kernel_table(), t);
  m.a16.resize(m.a.size());
  m.bt16.resize(m.bt.size());
  k.from_float(m.a.data(), m.a16.data(), static_cast<int64_t>(m.a.size()));
  k.from_float(m.bt.data(), m.bt16.data(), static_cast<int64_t>(m.bt.size()));
  m.dtype = t;
  std::vector<float>().swap(m.a);
  std::vector<float>().swap(m.bt);
}

void sort_by_base_order(const ModelFile& base, std::vector<LoraMatrix>& ms) {
  std::map<std::string_view, size_t> order;
  for (size_t i = 0; i < base.tensors.size(); ++i) order[base.tensors[i].name] = i;
  std::sort(ms.begin(), ms.end(), [&](const LoraMatrix& x, const LoraMatrix& y) {
    return order[x.target] < order[y.target];
  });
}

Result<LoraAdapter> load_peft(const fs::path& dir, const fs::path& weights, const ModelFile& base) {
  TS_ASSIGN_OR_RETURN(const PeftConfig cfg, parse_peft_config(dir / "adapter_config.json"));
  auto mapped = MappedFile::open(weights.string());
  if (!mapped.is_ok()) return mapped.status();
  TS_ASSIGN_OR_RETURN(const ModelFile st, read_safetensors(*mapped));
  TS_ASSIGN_OR_RETURN(const std::string arch, base.metadata.get_string_or("general.architecture", "llama"));
  const Architecture* family = find_architecture(arch);
  if (family == nullptr) return unsupported(fmt::format("the base's architecture '{}' is not supported", arch));
  TS_ASSIGN_OR_RETURN(const ModelConfig mc, read_model_config(base.metadata, arch));

  std::map<std::string, Pair> pairs;
  for (const TensorInfo& t : st.tensors) {
    TS_ASSIGN_OR_RETURN(const auto mapped_name, map_peft_name(t.name));
    Pair& p = pairs[mapped_name.first];
    const TensorInfo*& slot = mapped_name.second ? p.a : p.b;
    if (slot != nullptr) return invalid_argument(fmt::format("tensor '{}' appears twice", t.name));
    slot = &t;
  }
  if (pairs.empty()) return invalid_argument(fmt::format("{} holds no LoRA tensors", weights.string()));
  LoraAdapter out;
  out.format = LoraFormat::kPeft;
  out.alpha = static_cast<float>(cfg.alpha);
  for (const auto& [target, p] : pairs) {
    LoraMatrix m;
    std::vector<float> b;
    TS_RETURN_IF_ERROR(check_and_fill(base, target, p, m, b));
    const double r = static_cast<double>(m.rank);
    m.scale = static_cast<float>(cfg.rslora ? cfg.alpha / std::sqrt(r) : cfg.alpha / r);
    const bool q = target.ends_with(".attn_q.weight"), k = target.ends_with(".attn_k.weight");
    // GGUF converters permute q/k rows for normal-RoPE families only; NeoX families keep HF's.
    if ((q || k) && family->rope == RopeStyle::kNormal) {
      const int64_t heads = q ? mc.n_heads : mc.n_kv_heads;
      std::vector<float> permuted(b.size());
      const Status s = permute_rope_rows(std::as_bytes(std::span(b)),
                                         std::as_writable_bytes(std::span(permuted)), m.n_out,
                                         static_cast<size_t>(m.rank) * sizeof(float), heads);
      if (!s.is_ok()) return s.with_context(fmt::format("'{}'", target));
      b = std::move(permuted);
    }
    m.bt = transpose_b(b, m.n_out, m.rank);
    keep_file_dtype(p, m);
    out.matrices.push_back(std::move(m));
  }
  sort_by_base_order(base, out.matrices);
  return out;
}

Result<LoraAdapter> load_gguf_lora(const std::string& path, const ModelFile& base) {
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return mapped.status();
  TS_ASSIGN_OR_RETURN(const ModelFile g, read_gguf(*mapped));
  TS_ASSIGN_OR_RETURN(const std::string type, g.metadata.get_string_or("general.type", ""));
  if (type != "adapter") {
    return invalid_argument(fmt::format("{}: general.type is '{}', not 'adapter' (a model, not a LoRA?)", path, type));
  }
  TS_ASSIGN_OR_RETURN(const std::string atype, g.metadata.get_string_or("adapter.type", ""));
  if (atype != "lora") return unsupported(fmt::format("{}: adapter.type '{}' is not lora", path, atype));
  TS_ASSIGN_OR_RETURN(const std::string arch, g.metadata.get_string_or("general.architecture", ""));
  TS_ASSIGN_OR_RETURN(const std::string base_arch, base.metadata.get_string_or("general.architecture", ""));
  if (arch != base_arch) {
    return invalid_argument(fmt::format("{}: an adapter for '{}', the base model is '{}'", path, arch, base_arch));
  }
  TS_ASSIGN_OR_RETURN(const double alpha, g.metadata.get_float_or("adapter.lora.alpha", 0.0));
  if (!std::isfinite(alpha)) return corrupt_data(fmt::format("{}: adapter.lora.alpha is not finite", path));
  if (g.metadata.find("adapter.alora.invocation_tokens") != nullptr) {
    return unsupported(fmt::format("{}: activated LoRA (invocation tokens) is not supported", path));
  }
  std::map<std::string, Pair> pairs;
  for (const TensorInfo& t : g.tensors) {
    const bool a = t.name.ends_with(".lora_a"), b = t.name.ends_with(".lora_b");
    if (!a && !b) return invalid_argument(fmt::format("{}: tensor '{}' is not a lora_a/lora_b", path, t.name));
    const std::string target = t.name.substr(0, t.name.size() - 7);
    bool known = false;
    for (const auto& [hf, gguf] : hf_projections()) {
      known = known || (target.rfind("blk.", 0) == 0 && target.ends_with(fmt::format(".{}.weight", gguf)));
    }
    if (!known) {
      return invalid_argument(fmt::format("{}: target '{}' is not supported (attn_q/k/v/output and "
                                          "ffn_gate/up/down are)", path, target));
    }
    Pair& p = pairs[target];
    (a ? p.a : p.b) = &t;
  }
  if (pairs.empty()) return invalid_argument(fmt::format("{} holds no LoRA tensors", path));
  LoraAdapter out;
  out.format = LoraFormat::kGguf;
  out.alpha = static_cast<float>(alpha);
  for (const auto& [target, p] : pairs) {
    LoraMatrix m;
    std::vector<float> b;
    TS_RETURN_IF_ERROR(check_and_fill(base, target, p, m, b));
    m.scale = alpha == 0.0 ? 1.0f : static_cast<float>(alpha / static_cast<double>(m.rank));
    m.bt = transpose_b(b, m.n_out, m.rank);
    keep_file_dtype(p, m);
    out.matrices.push_back(std::move(m));
  }
  sort_by_base_order(base, out.matrices);
  return out;
}

}  // namespace

const LoraMatrix* LoraAdapter::find(std::string_view target) const {
  for (const auto& m : matrices) {
    if (m.target == target) return &m;
  }
  return nullptr;
}

int64_t LoraAdapter::max_rank() const {
  int64_t r = 0;
  for (const auto& m : matrices) r = std::max(r, m.rank);
  return r;
}

size_t LoraAdapter::bytes() const {
  size_t n = 0;
  for (const auto& m : matrices) n += m.bytes();
  return n;
}

size_t LoraMatrix::bytes() const {
  return (a.size() + bt.size()) * sizeof(float) + (a16.size() + bt16.size()) * sizeof(uint16_t);
}

namespace {
std::vector<float> widen(kernels::DType t, const std::vector<float>& f32, const std::vector<uint16_t>& h) {
  if (t == kernels::DType::kF32) return f32;
  std::vector<float> out(h.size());
  kernels::kernels_for(kernels::scalar_kernel_table(), t).to_float(h.data(), out.data(), static_cast<int64_t>(h.size()));
  return out;
}
}  // namespace

std::vector<float> LoraMatrix::a_f32() const { return widen(dtype, a, a16); }
std::vector<float> LoraMatrix::bt_f32() const { return widen(dtype, bt, bt16); }

Result<LoraAdapter> load_lora_adapter(const std::string& path, const ModelFile& base) {
  std::error_code ec;
  const fs::path p(path);
  Result<LoraAdapter> r = not_found(fmt::format("no LoRA adapter at {}", path));
  if (fs::is_directory(p, ec)) {
    if (!fs::exists(p / "adapter_model.safetensors", ec)) {
      r = fs::exists(p / "adapter_model.bin", ec)
              ? Result<LoraAdapter>(unsupported(fmt::format(
                    "{}: adapter_model.bin (pickle) is not read; save the adapter with "
                    "safe_serialization (adapter_model.safetensors)", path)))
              : Result<LoraAdapter>(not_found(fmt::format("{}: no adapter_model.safetensors", path)));
    } else {
      r = load_peft(p, p / "adapter_model.safetensors", base);
    }
  } else if (path.ends_with(".gguf")) {
    r = load_gguf_lora(path, base);
  } else if (path.ends_with(".safetensors")) {
    if (!fs::exists(p.parent_path() / "adapter_config.json", ec)) {
      r = not_found(fmt::format("{}: no adapter_config.json beside it", path));
    } else {
      r = load_peft(p.parent_path(), p, base);
    }
  } else if (fs::exists(p, ec)) {
    r = invalid_argument(fmt::format("{}: not a PEFT directory, .safetensors or .gguf LoRA", path));
  }
  if (!r.is_ok()) return r.status().with_context("loading LoRA adapter " + path);
  r->path = path;
  return r;
}

Result<MergeReport> merge_lora(const ModelFile& base, const LoraAdapter& adapter,
                               const std::string& out_path, float user_scale) {
  MergeReport report;
  GgufWriter w;
  for (const auto& [key, value] : base.metadata.entries()) w.metadata().set(key, value);
  ThreadPool pool(hardware_threads());
  for (const TensorInfo& t : base.tensors) {
    std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims));
    const LoraMatrix* m = adapter.find(t.name);
    if (m == nullptr) {
      TS_RETURN_IF_ERROR(w.add_tensor(t.name, t.dtype, shape, {t.data, t.n_bytes}));
      continue;
    }
    if (!kernels::dtype_info(t.dtype).supported) {
      return unsupported(fmt::format("tensor '{}' has type {}, which Tessera cannot read", t.name,
                                     kernels::dtype_name(t.dtype)));
    }
    const auto& k = kernels::kernels_for(kernels::scalar_kernel_table(), t.dtype);
    const size_t row_bytes = kernels::dtype_row_bytes(t.dtype, m->n_in);
    std::vector<std::byte> out(t.n_bytes);
    const float s = user_scale * m->scale;
    const std::vector<float> ma = m->a_f32(), mbt = m->bt_f32();
    pool.parallel_for(m->n_out, 16, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(m->n_in));
      for (int64_t r = r0; r < r1; ++r) {
        k.to_float(t.data + static_cast<size_t>(r) * row_bytes, row.data(), m->n_in);
        for (int64_t j = 0; j < m->rank; ++j) {
          const float c = s * mbt[static_cast<size_t>(j * m->n_out + r)];
          const float* a = ma.data() + j * m->n_in;
          for (int64_t i = 0; i < m->n_in; ++i) row[static_cast<size_t>(i)] += c * a[i];
        }
        k.from_float(row.data(), out.data() + static_cast<size_t>(r) * row_bytes, m->n_in);
      }
    });
    TS_RETURN_IF_ERROR(w.add_tensor(t.name, t.dtype, shape, out));
    ++report.n_merged;
    if (kernels::dtype_info(t.dtype).block_size > 1) ++report.n_requantized;
  }
  TS_RETURN_IF_ERROR(w.write(out_path));
  return report;
}

}  // namespace tessera::model
