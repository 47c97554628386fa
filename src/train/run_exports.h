// What a pretraining run can also write so that another trainer (scripts/train-vs-torch.py with
// PyTorch) replays it bit for bit: the initial parameters and the data order. Thread-safety:
// pure functions over their arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tessera/base/status.h"
#include "tessera/train/llama_trainer.h"

namespace tessera::train {

// The initial parameters as safetensors, GGUF tensor names, shapes [rows, columns] (PyTorch's
// nn.Linear weight layout), F32. Errors: the writer's (kIoError).
Status write_init_safetensors(const std::string& path, const LlamaShape& shape,
                              std::span<const float> params);

// Every training window's tokens as a NumPy .npy array, int32 [steps, per_step, t + 1], in the
// order the steps drew them (`starts`: PretrainHooks::window_starts; np.load reads it).
// Errors: kIoError.
Status write_data_order_npy(const std::string& path, std::span<const int64_t> starts,
                            std::span<const int32_t> train_tokens, int64_t per_step, int64_t t);

}  // namespace tessera::train
