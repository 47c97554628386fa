// `tessera info`: describe a model file without running it, or (--devices) the devices here.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "tessera/device/device_info.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/hf_checkpoint.h"
#include "tessera/model/model_config.h"

namespace tessera::cli {
namespace {

struct InfoArgs {
  std::string path;
  bool json = false;
  bool tensors = false;
  bool metadata = false;
  bool devices = false;
};

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1ull << 30); }

// `info --devices`: the CPU (its kernel table) and every OpenCL device, or one line saying why
// there is none. Not an error: a machine without OpenCL still runs everything on the CPU.
int run_devices(const InfoArgs& a) {
  const auto devices = device::list_devices();
  const char* isa = kernels::kernel_table().isa;
  if (a.json) {
    nlohmann::json j;
    j["cpu"] = {{"kernels", isa}};
    j["opencl"] = nlohmann::json::array();
    if (!devices.is_ok()) j["opencl_error"] = devices.status().message();
    for (const auto& d : devices.is_ok() ? *devices : std::vector<device::DeviceInfo>{}) {
      j["opencl"].push_back({{"index", d.index},
                             {"name", d.name},
                             {"vendor", d.vendor},
                             {"platform", d.platform},
                             {"type", device::device_type_name(d.type)},
                             {"driver_version", d.driver_version},
                             {"opencl_version", d.opencl_version},
                             {"global_mem_bytes", d.global_mem_bytes},
                             {"max_alloc_bytes", d.max_alloc_bytes},
                             {"local_mem_bytes", d.local_mem_bytes},
                             {"compute_units", d.compute_units},
                             {"max_clock_mhz", d.max_clock_mhz},
                             {"max_work_group_size", d.max_work_group_size}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("cpu        kernels: %s\n", isa);
  if (!devices.is_ok()) {
    std::printf("opencl     none: %s\n", devices.status().message().c_str());
    return 0;
  }
  for (const auto& d : *devices) {
    std::printf("opencl:%-3d %s (%s, %s)\n", d.index, d.name.c_str(), device::device_type_name(d.type),
                d.platform.c_str());
    std::printf("           memory %.2f GiB (largest buffer %.2f GiB), %u compute units, %u MHz\n",
                gib(d.global_mem_bytes), gib(d.max_alloc_bytes), d.compute_units, d.max_clock_mhz);
    std::printf("           driver %s, %s\n", d.driver_version.c_str(), d.opencl_version.c_str());
  }
  return 0;
}

std::string format_name(model::FileFormat f, uint32_t version) {
  switch (f) {
    case model::FileFormat::kGguf: return fmt::format("GGUF v{}", version);
    case model::FileFormat::kLlama2c: return "llama2.c checkpoint";
    case model::FileFormat::kSafetensors: return "safetensors";
    case model::FileFormat::kHfCheckpoint: return "Hugging Face checkpoint";
  }
  return "unknown";
}

using TypeTotals = std::map<std::string, std::pair<int, uint64_t>>;  // dtype -> (count, bytes)

void print_info(const InfoArgs& a, const model::ModelFile& f, const nlohmann::json& j,
                const std::string& arch, bool known_arch, const Result<model::ModelConfig>& config,
                const TypeTotals& by_type) {
  std::printf("file:          %s (%s)\n", a.path.c_str(), j["format"].get<std::string>().c_str());
  std::printf("architecture:  %s%s\n", arch.c_str(), known_arch ? "" : " (not supported)");
  if (config.is_ok()) {
    const auto& c = *config;
    std::printf("hparams:       vocab %lld, dim %lld, layers %lld, heads %lld, kv heads %lld, "
                "head dim %lld, ffn %lld, context %lld, rope base %g, rms eps %g\n",
                (long long)c.n_vocab, (long long)c.dim, (long long)c.n_layers, (long long)c.n_heads,
                (long long)c.n_kv_heads, (long long)c.head_dim, (long long)c.ffn_dim,
                (long long)c.context_length, c.rope.freq_base, c.rms_eps);
  } else {
    std::printf("hparams:       unreadable: %s\n", config.status().message().c_str());
  }
  std::printf("parameters:    %.2f M\n", static_cast<double>(f.n_parameters()) / 1e6);
  std::printf("tensor bytes:  %.2f MiB in %zu tensors\n",
              static_cast<double>(f.tensor_bytes()) / (1 << 20), f.tensors.size());
  for (const auto& [name, e] : by_type) {
    std::printf("  %-6s %5d tensors, %10.2f MiB\n", name.c_str(), e.first,
                static_cast<double>(e.second) / (1 << 20));
  }
  if (a.metadata) {
    std::printf("metadata (%zu keys):\n", f.metadata.size());
    for (const auto& [k, v] : f.metadata.entries()) {
      std::printf("  %s = %s\n", k.c_str(), v.to_display_string().c_str());
    }
  }
  if (a.tensors) {
    std::printf("tensors:\n");
    for (const auto& t : f.tensors) {
      std::printf("  %-32s %-6s %s\n", t.name.c_str(), std::string(kernels::dtype_name(t.dtype)).c_str(),
                  t.shape_string().c_str());
    }
  }
}

int run_info(const InfoArgs& a) {
  auto file = model::open_model_path(a.path);
  if (!file.is_ok()) return fail(file.status());
  const model::ModelFile& f = *file;
  auto arch = f.metadata.get_string_or("general.architecture", "");
  if (!arch.is_ok()) return fail(arch.status());
  TypeTotals by_type;
  for (const auto& t : f.tensors) {
    auto& e = by_type[std::string(kernels::dtype_name(t.dtype))];
    ++e.first;
    e.second += t.n_bytes;
  }
  auto config = model::read_model_config(f.metadata, *arch);
  const bool known_arch = model::find_architecture(*arch) != nullptr;

  nlohmann::json j;
  j["path"] = a.path;
  j["format"] = format_name(f.format, f.gguf_version);
  j["architecture"] = *arch;
  j["architecture_supported"] = known_arch;
  j["parameters"] = f.n_parameters();
  j["tensor_bytes"] = f.tensor_bytes();
  j["n_tensors"] = f.tensors.size();
  for (const auto& [name, e] : by_type) j["tensor_types"][name] = {{"count", e.first}, {"bytes", e.second}};
  if (config.is_ok()) {
    const auto& c = *config;
    j["hparams"] = {{"n_vocab", c.n_vocab},       {"dim", c.dim},
                    {"n_layers", c.n_layers},     {"n_heads", c.n_heads},
                    {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim},
                    {"ffn_dim", c.ffn_dim},       {"context_length", c.context_length},
                    {"rms_eps", c.rms_eps},       {"rope_freq_base", c.rope.freq_base}};
  } else {
    j["hparams_error"] = config.status().message();
  }
  if (a.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  print_info(a, f, j, *arch, known_arch, config, by_type);
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Describe a model file (GGUF, llama2.c) or Hugging Face checkpoint directory, or "
              "(--devices) the devices on this machine");
  cmd->add_option("path", a->path, "Model file");
  cmd->add_flag("--devices", a->devices,
                "List the devices instead: the CPU and every OpenCL device (name, memory, compute "
                "units, driver), or one line saying why there is none");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_flag("--tensors", a->tensors, "List every tensor");
  cmd->add_flag("--metadata", a->metadata, "List every metadata key");
  cmd->callback([&run, a] {
    run = [a] {
      if (a->devices) return run_devices(*a);
      if (a->path.empty()) return fail("info: a model path, or --devices");
      return run_info(*a);
    };
  });
}

}  // namespace tessera::cli
