#include "tessera/serve/adapters_route.h"

#include <nlohmann/json.hpp>

#include "tessera/serve/adapter_registry.h"
#include "tessera/serve/api_error.h"
#include "tessera/serve/confined_path.h"
#include "tessera/serve/json_util.h"

namespace tessera::serve {
namespace {

nlohmann::json adapter_json(const AdapterInfo& a) {
  return {{"id", a.name},         {"object", "adapter"}, {"model", a.model},
          {"path", a.path},       {"format", a.format},  {"rank", a.rank},
          {"alpha", a.alpha},     {"matrices", a.matrices}, {"bytes", a.bytes},
          {"created", a.created}};
}

// The registry, or answers 404 / 403 and returns null.
std::shared_ptr<AdapterRegistry> registry(const RouteContext& ctx, ResponseWriter& writer,
                                          bool changes) {
  std::shared_ptr<AdapterRegistry> r = ctx.adapters ? ctx.adapters() : nullptr;
  if (r == nullptr) {
    ApiError e = api_error_from_status(not_found("this server does not serve LoRA adapters "
                                                 "(tessera serve --model M --lora NAME=PATH)"));
    e.code = "unknown_route";
    writer.respond(api_error_response(e));
    return nullptr;
  }
  if (changes && (!r->runtime_loading() || r->lora_dir().empty())) {
    ApiError e = api_error_from_status(Status(
        ErrorCode::kPermissionDenied,
        "loading and unloading adapters at runtime is off; start the server with --lora-dir DIR "
        "(adapters load only from DIR)"));
    writer.respond(api_error_response(e));
    return nullptr;
  }
  return r;
}

}  // namespace

void handle_list_adapters(const RouteContext& ctx, HttpRequest&&,
                          std::shared_ptr<ResponseWriter> writer) {
  auto r = registry(ctx, *writer, false);
  if (r == nullptr) return;
  nlohmann::json data = nlohmann::json::array();
  for (const auto& a : r->list()) data.push_back(adapter_json(a));
  writer->respond(HttpResponse{200, "application/json", {},
                               dump_json({{"object", "list"}, {"data", std::move(data)}})});
}

void handle_load_adapter(const RouteContext& ctx, HttpRequest&& request,
                         std::shared_ptr<ResponseWriter> writer) {
  auto r = registry(ctx, *writer, true);
  if (r == nullptr) return;
  const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    writer->respond(api_error_response(invalid_request("the body must be a JSON object")));
    return;
  }
  for (const char* field : {"name", "path"}) {
    const auto it = body.find(field);
    if (it == body.end() || !it->is_string()) {
      writer->respond(api_error_response(
          invalid_request(std::string("'") + field + "' (a string) is required", field)));
      return;
    }
  }
  // Only inside the operator's directory; what is outside, existing or not, answers as a name
  // that is not there. The files are opened without blocking (a FIFO fails at once), checked
  // as regular files before reading, and read with bounds (model/lora_adapter.h).
  auto path = resolve_inside(r->lora_dir(), body["path"].get<std::string>(),
                             {"adapter_config.json", "adapter_model.safetensors"});
  if (!path.is_ok()) {
    ApiError e = api_error_from_status(path.status(), "path");
    if (path.status().code() == ErrorCode::kNotFound) e.code = "adapter_not_found";
    writer->respond(api_error_response(e));
    return;
  }
  auto info = r->load(body["name"].get<std::string>(), *path);
  if (!info.is_ok()) {
    writer->respond(api_error_response(api_error_from_status(info.status())));
    return;
  }
  writer->respond(HttpResponse{200, "application/json", {}, dump_json(adapter_json(*info))});
}

void handle_unload_adapter(const RouteContext& ctx, HttpRequest&& request,
                           std::shared_ptr<ResponseWriter> writer) {
  auto r = registry(ctx, *writer, true);
  if (r == nullptr) return;
  const std::string name = request.path.substr(std::string_view("/v1/adapters/").size());
  if (Status s = r->unload(name); !s.is_ok()) {
    ApiError e = api_error_from_status(s);
    if (s.code() == ErrorCode::kUnavailable) e.retry_after_s = 1;
    writer->respond(api_error_response(e));
    return;
  }
  writer->respond(HttpResponse{200, "application/json", {},
                               dump_json({{"id", name}, {"object", "adapter"}, {"deleted", true}})});
}

}  // namespace tessera::serve
