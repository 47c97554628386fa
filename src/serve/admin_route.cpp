#include "tessera/serve/admin_route.h"

#include <nlohmann/json.hpp>

#include "tessera/serve/api_error.h"
#include "tessera/serve/json_util.h"

namespace tessera::serve {

namespace {

nlohmann::json admin_json(const ModelEntry& e) {
  nlohmann::json j = {{"id", e.name}, {"state", e.state ? e.state() : std::string("ready")}};
  if (!e.base.empty()) j["parent"] = e.base;  // a LoRA adapter: the model it runs on
  if (e.error) {
    if (std::string why = e.error(); !why.empty()) j["error"] = std::move(why);
  }
  return j;
}

}  // namespace

void handle_admin_list_models(const RouteContext& ctx, HttpRequest&&,
                              std::shared_ptr<ResponseWriter> writer) {
  nlohmann::json data = nlohmann::json::array();
  for (const auto& e : ctx.models->list()) data.push_back(admin_json(e));
  writer->respond(HttpResponse{200, "application/json", {},
                               dump_json({{"object", "list"}, {"data", std::move(data)}})});
}

void handle_admin_model_action(const RouteContext& ctx, HttpRequest&& request,
                               std::shared_ptr<ResponseWriter> writer) {
  const std::string rest = request.path.substr(std::string_view("/admin/models/").size());
  const size_t slash = rest.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) {
    writer->respond(api_error_response(api_error_from_status(
        invalid_argument("expected POST /admin/models/{name}/{suspend|resume|load|evict}"))));
    return;
  }
  const std::string name = rest.substr(0, slash);
  const std::string action = rest.substr(slash + 1);
  auto entry = ctx.models->find(name);
  if (!entry.is_ok()) {
    ApiError e = api_error_from_status(entry.status(), "model");
    e.code = "model_not_found";
    writer->respond(api_error_response(e));
    return;
  }
  if (!entry->admin) {
    writer->respond(api_error_response(api_error_from_status(
        invalid_argument("model " + name + " has no lifecycle to control (not fleet-managed)"))));
    return;
  }
  if (Status s = entry->admin(action); !s.is_ok()) {
    writer->respond(api_error_response(api_error_from_status(s)));
    return;
  }
  writer->respond(HttpResponse{200, "application/json", {}, dump_json(admin_json(*entry))});
}

}  // namespace tessera::serve
