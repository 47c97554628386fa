// Speculative verification: given the target model's logits for a sequence's pending token and
// its n draft tokens (n + 1 rows: row i predicts the token after the context plus drafts[0, i)),
// decides how many drafts to accept and which token follows them. Lossless:
//  - greedy: a draft is accepted while it equals the target's own choice (argmax after
//    penalties), so the output is token for token what decoding without speculation gives;
//  - sampling: draft d_i drawn from q is accepted with probability min(1, p(d_i) / q(d_i)); on
//    rejection the token is drawn from the residual max(0, p - q), renormalized; when all are
//    accepted a bonus token is drawn from p of the last row (Leviathan et al. 2023; Chen et al.
//    2023). p and q are the Sampler's processed distributions (penalties, top-k, temperature,
//    top-p, min-p), so the output distribution is exactly the target's sampling distribution.
// A draft with no q distribution (n-gram lookup) is a point mass: q(d) = 1.
// Thread-safety: pure functions over the caller's sampler and buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tessera/engine/sampler.h"

namespace tessera::engine {

struct VerifyResult {
  int32_t n_accepted = 0;  // drafts accepted, a prefix of them
  int32_t next = 0;        // the token after them: the target's correction or bonus token
};

// How the residual is drawn after a rejection. kBrokenDrawFromP exists only so that the
// statistical test can show it detects a wrong implementation; the engine never uses it.
enum class ResidualRule { kResidual, kBrokenDrawFromP };

// `history` is the sequence's tokens (context) followed by the drafts; row(i) returns the logits
// after history[0, context + i), which verify modifies in place (penalties). `q` holds a
// distribution per draft or is empty (point masses).
VerifyResult verify_drafts(Sampler& sampler, std::span<const int32_t> history,
                           std::span<const int32_t> drafts, std::span<const TokenDist> q,
                           const std::function<std::span<float>(int32_t)>& row,
                           ResidualRule rule = ResidualRule::kResidual);

}  // namespace tessera::engine
