#include "tessera/bench/spec_counters.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <chrono>

#include "tessera/bench/http_backend.h"

namespace tessera::bench {

namespace {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// The value at the end of a sample line, or nullopt.
std::optional<double> sample_value(std::string_view line) {
  const size_t sp = line.find_last_of(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const std::string v(line.substr(sp + 1));
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used != v.size()) return std::nullopt;
    return d;
  } catch (...) {
    return std::nullopt;
  }
}
}  // namespace

std::optional<SpecCounters> parse_spec_counters(std::string_view text) {
  SpecCounters c;
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    double* into = nullptr;
    for (const auto& [name, field] : {std::pair{std::string_view("tessera_spec_draft_tokens_total"), &c.draft_tokens},
                                      std::pair{std::string_view("tessera_spec_accepted_tokens_total"), &c.accepted_tokens}}) {
      if (line.starts_with(name) && line.size() > name.size() &&
          (line[name.size()] == '{' || line[name.size()] == ' ')) {
        into = field;
      }
    }
    if (into == nullptr) continue;
    if (const std::optional<double> v = sample_value(line)) {
      *into += *v;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return c;
}

std::optional<SpecCounters> scrape_spec_counters(const std::string& url, double timeout_s) {
  const Result<ParsedUrl> u = parse_http_url(url);
  if (!u.is_ok()) return std::nullopt;
  try {
    net::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    stream.connect(resolver.resolve(u->host, u->port));
    http::request<http::empty_body> req{http::verb::get, "/metrics", 11};
    req.set(http::field::host, u->host);
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(stream, buf, res);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    if (res.result() != http::status::ok) return std::nullopt;
    return parse_spec_counters(res.body());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace tessera::bench
