#include "tessera/serve/model_backend.h"

namespace tessera::serve {

std::shared_ptr<const engine::TokenVocabulary> ModelBackend::token_vocabulary() const {
  std::lock_guard<std::mutex> lock(vocab_mu_);
  if (!vocab_) vocab_ = engine::make_token_vocabulary(tokenizer());
  return vocab_;
}

}  // namespace tessera::serve
