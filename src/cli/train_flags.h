// The flags `tessera train` and `tessera bench train` share: the model's shape (--dim, --layers,
// --heads, --kv-heads, --ffn, --ctx) and the batch (--batch, --accum), bound to PretrainOptions
// with their defaults shown. Thread-safety: registration on the main thread.
#pragma once

#include <CLI/CLI.hpp>

#include "tessera/train/pretrain.h"

namespace tessera::cli {

void add_shape_and_batch_options(CLI::App* cmd, train::PretrainOptions& o);

}  // namespace tessera::cli
