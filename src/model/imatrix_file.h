// Importance matrix files: activation statistics (activation_stats.h) saved for
// `tessera quantize --imatrix`, in llama.cpp's formats so files cross over both ways:
//   GGUF (llama-imatrix's default): general.type = "imatrix", imatrix.datasets (string array),
//     imatrix.chunk_count and imatrix.chunk_size (u32); per matrix two f32 tensors,
//     `<name>.in_sum2` [n_cols, 1] (sum over tokens of x_j^2) and `<name>.counts` [1, 1] (tokens).
//   legacy .dat (read only): int32 entry count; per entry int32 name length, name, int32 ncall,
//     int32 n_values, n_values f32 (mean square x ncall); then optionally int32 chunk count,
//     int32 dataset name length and the name. An entry reads as sum_sq = value, count = ncall.
// Everything is validated on read (sizes against the bytes present, shapes, pairs of tensors,
// finite non-negative sums, positive counts); mixture-of-experts entries (several counts per
// tensor) are refused by name. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "tessera/base/status.h"
#include "tessera/model/activation_stats.h"

namespace tessera::model {

// Writes `stats` as a GGUF imatrix to `path` (via a temporary file renamed into place).
// Errors: kInvalidArgument for a tensor without columns or with a negative count; kIoError.
Status write_imatrix(const ActivationStats& stats, const std::string& path);

// Reads a GGUF or legacy imatrix file (told apart by the GGUF magic).
// Errors: kNotFound / kIoError for an unreadable file; kCorruptData naming what is malformed;
// kUnsupported for mixture-of-experts entries.
Result<ActivationStats> read_imatrix(const std::string& path);

// The same over bytes in memory (tests, fuzzing).
Result<ActivationStats> parse_imatrix(std::span<const std::byte> bytes);

}  // namespace tessera::model
