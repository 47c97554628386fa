// The chat route's renderer for a served model: its chat template (or --chat-template's
// override) resolved once, rendered per request with the model's BOS/EOS text and the wall-clock
// date, within the render limits; or, when the model has no usable template, a renderer that
// says why (the chat route answers 500; completions keep working). For a fleet model whose file
// has not opened yet, the renderer resolves the template once it has.
// Thread-safety: the renderers are called from many work-pool threads at once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/serve/model_backend.h"
#include "tessera/serve/model_chat_template.h"

namespace tessera::serve {

// A line for the operator (the server's stdout), without the newline. May be empty.
using OperatorLine = std::function<void(const std::string& line)>;

// --chat-template NAME|FILE: a built-in name, else a .jinja file, read and parsed here so a bad
// file stops the server at start instead of failing every chat request. Empty: no override.
// Errors: kInvalidArgument (neither a name nor a readable file), the template's parse error.
Result<ChatTemplateOverride> chat_template_override(const std::string& spec);

// The renderer for a model with `metadata` and `tokenizer`; announces the template's origin
// ("tessera serve: chat template: ...") on `announce`.
ChatRenderer make_chat_renderer(const model::Metadata& metadata,
                                std::shared_ptr<const model::Tokenizer> tokenizer,
                                const ChatTemplateOverride& override_spec,
                                const ChatRenderLimits& limits, const OperatorLine& announce);

// The renderer of fleet model `name`: now when its file is open, else on the first request after
// it opens (requests before get the open error; kUnavailable once the fleet is gone).
ChatRenderer fleet_chat_renderer(const std::shared_ptr<fleet::FleetManager>& fleet,
                                 const std::string& name, const ChatTemplateOverride& override_spec,
                                 const ChatRenderLimits& limits, const OperatorLine& announce);

}  // namespace tessera::serve
