#include "tessera/serve/models_route.h"

#include <nlohmann/json.hpp>

#include "tessera/serve/api_error.h"
#include "tessera/serve/json_util.h"

namespace tessera::serve {

namespace {

nlohmann::json model_json(const ModelEntry& e) {
  nlohmann::json j = {
      {"id", e.name},
      {"object", "model"},
      {"created", e.created},
      {"owned_by", e.owned_by},
      {"root", e.base.empty() ? e.name : e.base},
  };
  // vLLM's fields: clients such as `vllm bench serve` read the root and the context length.
  // A fleet model whose file has not opened does not know its context yet: the field is null.
  if (e.backend && e.backend->ready().is_ok()) {
    j["max_model_len"] = e.backend->context_length();
  } else {
    j["max_model_len"] = nullptr;
  }
  if (e.state) j["state"] = e.state();
  if (!e.base.empty()) j["parent"] = e.base;  // a LoRA adapter: the model it runs on
  if (e.error) {
    if (std::string why = e.error(); !why.empty()) j["error"] = std::move(why);
  }
  return j;
}

}  // namespace

void handle_list_models(const RouteContext& ctx, HttpRequest&&,
                        std::shared_ptr<ResponseWriter> writer) {
  nlohmann::json data = nlohmann::json::array();
  for (const auto& e : ctx.models->list()) data.push_back(model_json(e));
  writer->respond(HttpResponse{200, "application/json", {},
                               dump_json({{"object", "list"}, {"data", std::move(data)}})});
}

void handle_get_model(const RouteContext& ctx, HttpRequest&& request,
                      std::shared_ptr<ResponseWriter> writer) {
  const std::string name = request.path.substr(std::string_view("/v1/models/").size());
  auto entry = name.empty() ? Result<ModelEntry>(not_found("no model named in the path"))
                            : ctx.models->find(name);
  if (!entry.is_ok()) {
    ApiError e = api_error_from_status(entry.status(), "model");
    e.code = "model_not_found";
    writer->respond(api_error_response(e));
    return;
  }
  writer->respond(HttpResponse{200, "application/json", {}, dump_json(model_json(*entry))});
}

}  // namespace tessera::serve
