// report.html of `tessera bench train`: one self-contained page with the run's summary (speed,
// MFU, time to target), the loss curves (training loss per step, validation loss per evaluation,
// the target as a line) drawn with the bench reports' Chart.js frame (html_text.h), and the
// MLPerf log. Without Chart.js the page keeps its tables and says why there is no chart.
// Thread-safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::bench {

// `summary`: the bench train summary JSON (its "steps" array holds {step, loss, val_loss?,
// seconds}); `mllog`: the run's ":::MLLOG" lines; `chart_js`: the Chart.js UMD source or "".
std::string render_train_report_html(const nlohmann::json& summary,
                                     const std::vector<std::string>& mllog,
                                     const std::string& chart_js);

}  // namespace tessera::bench
