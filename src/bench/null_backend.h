// NullBackend: a SystemUnderTest that does no work, to measure the harness's own overhead. In
// instant mode (no delays) issue() streams every token and completes inline; with a TTFT or ITL
// delay one timer thread plays the streams out in real time, so many streams can be in flight at
// once (e.g. 1,000 streams of 20 tokens 10 ms apart). Output length is the sample's
// max_output_tokens; token counts are exact.
// Thread-safety: issue() from the harness thread; callbacks from it (instant) or the timer thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "tessera/base/clock.h"
#include "tessera/bench/system_under_test.h"

namespace tessera::bench {

struct NullBackendOptions {
  double ttft_s = 0.0;           // delay from issue to the first chunk
  double itl_s = 0.0;            // delay between chunks
  int32_t tokens_per_chunk = 1;  // >= 1
};

// Parses the option part of "null:ttft_ms=20,itl_ms=5,chunk=1" (given without "null:").
Result<NullBackendOptions> parse_null_options(std::string_view text);

class NullBackend final : public SystemUnderTest {
 public:
  // `clock` (borrowed; null = real clock) times the delayed mode.
  explicit NullBackend(NullBackendOptions options, const Clock* clock = nullptr);
  ~NullBackend() override;  // joins the timer thread; queries still playing are dropped

  nlohmann::json describe() const override;
  void issue(const Query& query, QueryObserver* observer) override;

 private:
  struct Timer;
  NullBackendOptions options_;
  const Clock* clock_;
  std::unique_ptr<Timer> timer_;
};

}  // namespace tessera::bench
