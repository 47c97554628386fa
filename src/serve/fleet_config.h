// Fleet config file (`tessera serve --config FILE`): the models one endpoint serves, each with
// its own settings, as JSON:
//
//   {"models": [
//     {"name": "smol", "path": "smol.gguf", "ctx_size": 2048, "parallel": 4,
//      "priority": 2.0, "ttft_slo_ms": 500, "tpot_slo_ms": 200, "kv_blocks": 0, "pinned": false,
//      "idle_policy": "adaptive", "keep_alive_s": 60, "device": "opencl:0"},
//     {"path": "stories260K.bin", "tokenizer": "stories260K-tok512.bin",
//      "adapters": [{"name": "sql", "path": "sql-lora/", "keep_alive_s": 30}]}
//   ]}
//
// Only "path" is required ("tokenizer" too for a llama2.c checkpoint); "name" defaults to the
// file name without extension, relative paths (model and tokenizer) are taken from the config file's directory, and every other key defaults to the server's
// flags (`defaults`; "device": `default_device`, -1 the CPU). "priority" is the model's weight
// in the shared device's fair share. "device" is "cpu", "opencl" or "opencl:N".
// Unknown keys are errors (a typo must not silently fall back to a default).
// "adapters" lists LoRA adapters of that model (PEFT directory or GGUF LoRA; "name" and "path"
// required, optional "pinned", "idle_policy", "keep_alive_s"): each becomes a fleet entry named
// "<model>:<name>" with FleetModelSpec::parent set, the model's engine settings and, unless it
// has its own, the model's idle policy; it follows its model in the returned list.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/fleet/fleet_manager.h"

namespace tessera::serve {

// Errors: kNotFound (no file), kInvalidArgument naming the model entry and key at fault.
Result<std::vector<fleet::FleetModelSpec>> parse_fleet_config(const std::string& text,
                                                              const std::string& base_dir,
                                                              const engine::EngineOptions& defaults,
                                                              const fleet::IdlePolicySettings& idle,
                                                              int default_device = -1);
Result<std::vector<fleet::FleetModelSpec>> read_fleet_config(const std::string& path,
                                                             const engine::EngineOptions& defaults,
                                                             const fleet::IdlePolicySettings& idle,
                                                             int default_device = -1);

// `tessera serve --lora` with a fleet: each "BASE:NAME=PATH" (or "NAME=PATH" when `specs` hold
// exactly one base model) appends an adapter spec named "BASE:NAME" (see "adapters" above; the
// base's engine settings and idle policy). Errors: kInvalidArgument naming the value at fault
// (no '=', an unknown or ambiguous base, a bad name, a name already in the fleet).
Status add_lora_flags(const std::vector<std::string>& loras,
                      std::vector<fleet::FleetModelSpec>* specs);

// `--models DIR`: every *.gguf in `dir` (sorted), named by its file stem, with `defaults`, on
// `device`. Errors: kInvalidArgument when the directory cannot be read or holds no GGUF file.
Result<std::vector<fleet::FleetModelSpec>> fleet_specs_from_dir(const std::string& dir,
                                                                const engine::EngineOptions& defaults,
                                                                int device = -1);

}  // namespace tessera::serve
