#include "tessera/serve/openai_request.h"

#include "tessera/engine/gbnf_matcher.h"
#include "tessera/engine/json_matcher.h"
#include "tessera/engine/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tessera/serve/api_error.h"
#include "tessera/serve/openai_response.h"

namespace tessera::serve {
namespace openai_request_test {

TEST(CompletionRequest, DefaultsAreOpenAIs) {
  std::string param;
  auto r = parse_completion_request(R"({"model":"m","prompt":"hi"})", &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->params.model, "m");
  EXPECT_EQ(r->prompt_text, "hi");
  EXPECT_EQ(*r->params.max_tokens, 16);
  EXPECT_EQ(r->params.sampling.temperature, 1.0f);
  EXPECT_EQ(r->params.sampling.top_p, 1.0f);
  EXPECT_EQ(r->params.sampling.top_k, 0);
  EXPECT_EQ(r->params.sampling.min_p, 0.0f);
  EXPECT_EQ(r->params.n_logprobs, -1);
  EXPECT_FALSE(r->params.stream);
}

TEST(CompletionRequest, ReadsEveryField) {
  std::string param;
  auto r = parse_completion_request(
      R"({"prompt":[[1,2,3]],"max_tokens":7.0,"temperature":0,"top_p":0.5,"seed":-3,
          "stop":["a","","b"],"stream":true,"stream_options":{"include_usage":true},"logprobs":3,
          "n":1,"user":"x","frequency_penalty":null})",
      &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->prompt_is_tokens);
  EXPECT_EQ(r->prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(*r->params.max_tokens, 7);
  EXPECT_EQ(r->params.sampling.temperature, 0.0f);
  EXPECT_EQ(r->params.sampling.top_p, 0.5f);
  EXPECT_EQ(r->params.sampling.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(r->params.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r->params.stream && r->params.include_usage);
  EXPECT_EQ(r->params.n_logprobs, 3);
}

TEST(CompletionRequest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  for (const Case& c : {Case{R"({"prompt":"x","top_p":0})", "top_p"},
                        Case{R"({"prompt":"x","max_tokens":1.5})", "max_tokens"},
                        Case{R"({"prompt":"x","max_tokens":99999999999})", "max_tokens"},
                        Case{R"({"prompt":"x","logprobs":21})", "logprobs"},
                        Case{R"({"prompt":["a","b"]})", "prompt"},
                        Case{R"({"prompt":[]})", "prompt"},
                        Case{R"({"prompt":[-1]})", "prompt"},
                        Case{R"({"prompt":"x","echo":true})", "echo"},
                        Case{R"({"prompt":"x","stream_options":{"include_usage":1}})", "stream_options.include_usage"},
                        Case{R"({"prompt":"x","model":3})", "model"},
                        Case{R"({"prompt":"x","best_of":2})", "best_of"},
                        Case{R"({"prompt":"x","speculative":"maybe"})", "speculative"},
                        Case{R"({"prompt":"x","speculative":1})", "speculative"},
                        Case{R"({"prompt":"x","priority":1001})", "priority"},
                        Case{R"({"prompt":"x","priority":"high"})", "priority"}}) {
    std::string param;
    auto r = parse_completion_request(c.body, &param);
    ASSERT_FALSE(r.is_ok()) << c.body;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(param, c.param) << c.body << ": " << r.status().message();
  }
  for (const char* body : {"", "nul", "{\"a\":}", "\"str\"", "{\"prompt\":\"x\"} trailing"}) {
    std::string param = "stale";
    auto r = parse_completion_request(body, &param);
    EXPECT_FALSE(r.is_ok()) << body;
    EXPECT_EQ(param, "") << body;
  }
}

// vLLM's structured outputs: regex (a full match), choice, json; the older guided_* fields; one
// at a time, and not with response_format.
TEST(CompletionRequest, StructuredOutputsRegexChoiceJson) {
  std::string param;
  auto accepts = [](const std::shared_ptr<const engine::JsonSchema>& s, std::string_view text) {
    engine::JsonMatcher m(s);
    return m.feed(text) && m.complete();
  };
  auto r = parse_completion_request(R"({"prompt":"x","structured_outputs":{"regex":"[a-c]{2}-\\d+"}})", &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->params.json_schema);
  EXPECT_TRUE(accepts(r->params.json_schema, "ab-12"));
  EXPECT_FALSE(accepts(r->params.json_schema, "xab-12"));  // a full match, not a search
  EXPECT_FALSE(accepts(r->params.json_schema, "ab-"));
  r = parse_completion_request(R"({"prompt":"x","guided_choice":["yes","no","a.b*"]})", &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(accepts(r->params.json_schema, "no"));
  EXPECT_TRUE(accepts(r->params.json_schema, "a.b*"));  // literal, not a regex
  EXPECT_FALSE(accepts(r->params.json_schema, "axb"));
  EXPECT_FALSE(accepts(r->params.json_schema, "nope"));
  auto chat = parse_chat_request(
      R"({"messages":[{"role":"user","content":"hi"}],"structured_outputs":{"json":{"type":"integer","maximum":9}}})",
      &param);
  ASSERT_TRUE(chat.is_ok()) << chat.status().to_string();
  EXPECT_TRUE(accepts(chat->params.json_schema, "7"));
  EXPECT_FALSE(accepts(chat->params.json_schema, "10"));
  for (const char* bad : {
           R"({"prompt":"x","structured_outputs":{"regex":"a","choice":["a"]}})",
           R"({"prompt":"x","structured_outputs":{"lark":"start: x"}})",
           R"({"prompt":"x","guided_regex":"a","guided_choice":["a"]})",
           R"({"prompt":"x","guided_regex":"a","response_format":{"type":"json_object"}})",
           R"J({"prompt":"x","guided_regex":"(?=a)"})J", R"({"prompt":"x","guided_choice":[]})",
           R"({"prompt":"x","guided_choice":[1]})"}) {
    EXPECT_FALSE(parse_completion_request(bad, &param).is_ok()) << bad;
  }
}

// GBNF grammars: llama-server's `grammar` on both routes, vLLM's structured_outputs.grammar and
// guided_grammar (read as GBNF); one structured output at a time; the parser's message in the 400.
TEST(CompletionRequest, GrammarField) {
  std::string param;
  auto accepts = [](const std::shared_ptr<const engine::GbnfGrammar>& g, std::string_view text) {
    engine::GbnfMatcher m(g);
    return m.feed(text) && m.complete();
  };
  auto r = parse_completion_request(R"({"prompt":"x","grammar":"root ::= (\"yes\" | \"no\") [0-9]?"})", &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->params.grammar);
  EXPECT_FALSE(r->params.json_schema);
  EXPECT_TRUE(accepts(r->params.grammar, "yes7"));
  EXPECT_FALSE(accepts(r->params.grammar, "maybe"));
  auto chat = parse_chat_request(
      R"({"messages":[{"role":"user","content":"hi"}],"grammar":"root ::= [a-c]+"})", &param);
  ASSERT_TRUE(chat.is_ok()) << chat.status().to_string();
  EXPECT_TRUE(accepts(chat->params.grammar, "abc"));
  for (const char* body : {R"({"prompt":"x","structured_outputs":{"grammar":"root ::= \"a\""}})",
                           R"({"prompt":"x","guided_grammar":"root ::= \"a\""})"}) {
    r = parse_completion_request(body, &param);
    ASSERT_TRUE(r.is_ok()) << body << ": " << r.status().to_string();
    EXPECT_TRUE(accepts(r->params.grammar, "a")) << body;
  }
  r = parse_completion_request(R"({"prompt":"x","grammar":""})", &param);  // as llama-server: none
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE(r->params.grammar);
  struct Bad {
    const char* body;
    const char* param;
    const char* message;  // a part of it
  };
  for (const Bad& b : {
           Bad{R"({"prompt":"x","grammar":"root ::= value"})", "grammar", "rule 'value' is used but never defined"},
           Bad{R"({"prompt":"x","grammar":"root ::= root \"a\" | \"b\""})", "grammar", "left recursion"},
           Bad{R"({"prompt":"x","grammar":"root ::= \"\\q\""})", "grammar", "unknown escape"},
           Bad{R"({"prompt":"x","grammar":5})", "grammar", "a string (a GBNF grammar)"},
           Bad{R"({"prompt":"x","guided_grammar":"x ::= \"a\""})", "guided_grammar", "no 'root'"},
           Bad{R"({"prompt":"x","structured_outputs":{"grammar":"root ::= [b-a]"}})", "structured_outputs", "backwards"},
           Bad{R"({"prompt":"x","grammar":"root ::= \"a\"","response_format":{"type":"json_object"}})", "grammar",
               "give one of"},
           Bad{R"({"prompt":"x","grammar":"root ::= \"a\"","guided_regex":"a"})", "grammar", "give one of"},
           Bad{R"({"prompt":"x","grammar":"root ::= \"a\"","structured_outputs":{"grammar":"root ::= \"a\""}})",
               "grammar", "give one of"},
           Bad{R"({"messages":[{"role":"user","content":"hi"}],"grammar":"root ::= \"a\"",
               "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"})", "grammar",
               "forced tool call"},
       }) {
    const bool is_chat = std::string_view(b.body).find("messages") != std::string_view::npos;
    const Status st = is_chat ? parse_chat_request(b.body, &param).status()
                              : parse_completion_request(b.body, &param).status();
    ASSERT_FALSE(st.is_ok()) << b.body;
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << b.body;
    EXPECT_EQ(param, b.param) << b.body << ": " << st.message();
    EXPECT_NE(st.message().find(b.message), std::string::npos) << b.body << ": " << st.message();
  }
}

TEST(CompletionRequest, LogitBias) {
  std::string param;
  auto r = parse_completion_request(R"({"prompt":"x","logit_bias":{"7":-100,"12":2.5,"0":100}})", &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  auto bias = r->params.sampling.logit_bias;
  std::sort(bias.begin(), bias.end());
  EXPECT_EQ(bias, (std::vector<std::pair<int32_t, float>>{{0, 100.0f}, {7, -100.0f}, {12, 2.5f}}));
  for (const char* body : {R"({"prompt":"x","logit_bias":{"7x":1}})", R"({"prompt":"x","logit_bias":{"-1":1}})",
                           R"({"prompt":"x","logit_bias":{"":1}})", R"({"prompt":"x","logit_bias":{"99999999999":1}})",
                           R"({"prompt":"x","logit_bias":{"1":-100.5}})", R"({"prompt":"x","logit_bias":{"1":null}})",
                           R"({"prompt":"x","logit_bias":[1]})"}) {
    auto bad = parse_completion_request(body, &param);
    EXPECT_FALSE(bad.is_ok()) << body;
    EXPECT_EQ(param, "logit_bias") << body;
  }
}

TEST(CompletionRequest, SpeculativeSwitchPerRequest) {
  std::string param;
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})", &param)->params.speculative,
            engine::SpecMode::kDefault);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","speculative":true})", &param)->params.speculative,
            engine::SpecMode::kOn);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","speculative":"off"})", &param)->params.speculative,
            engine::SpecMode::kOff);
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"speculative":"on"})", &param)
                ->params.speculative,
            engine::SpecMode::kOn);
}

TEST(CompletionRequest, PriorityPerRequest) {
  std::string param;
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x"})", &param)->params.priority, 0);
  EXPECT_EQ(parse_completion_request(R"({"prompt":"x","priority":-7})", &param)->params.priority, -7);
  EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"priority":3})", &param)
                ->params.priority,
            3);
}

TEST(ChatRequest, MessagesAndLogprobs) {
  std::string param;
  auto r = parse_chat_request(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
                      {"role":"assistant","content":null}],
          "max_tokens":5,"max_completion_tokens":9,"logprobs":true,"top_logprobs":4})",
      &param);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].content, "ab");
  EXPECT_EQ(r->messages[1].content, "");
  EXPECT_EQ(*r->params.max_tokens, 9);
  EXPECT_EQ(r->params.n_logprobs, 4);
  EXPECT_FALSE(parse_chat_request(R"({"messages":[]})", &param).is_ok());
  EXPECT_EQ(param, "messages");
  EXPECT_FALSE(parse_chat_request(
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})", &param).is_ok());
  EXPECT_EQ(param, "messages[0].content[0].type");
  auto chat = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", &param);
  ASSERT_TRUE(chat.is_ok());
  EXPECT_EQ(chat->params.n_logprobs, 0);
}

TEST(Request, UnsupportedFieldsAreRefusedByName) {
  struct Case {
    bool chat;
    const char* body;
    const char* param;
  };
  for (const Case& c : {
           Case{false, R"({"prompt":"x","cache_prompt":false})", "cache_prompt"},
           Case{false, R"({"prompt":"x","messages":[]})", "messages"},  // the other route's field
           Case{false, R"({"prompt":"x","max_completion_tokens":3})", "max_completion_tokens"},
           Case{false, R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":{"anyOf":[]}}}})",
                "response_format"},
           Case{true, R"({"messages":[{"role":"user","content":"x"}],"prompt":"x"})", "prompt"},
           Case{true, R"({"messages":[{"role":"user","content":"x"}],"functions":[]})", "functions"},
           Case{true, R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})", "tools[0].function"},
           Case{true, R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"})", "tool_choice"},
           Case{true, R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})",
                "response_format"},
           Case{true, R"({"messages":[{"role":"user","content":"x"}],"response_format":"text"})",
                "response_format"},
       }) {
    std::string param;
    Status s = c.chat ? parse_chat_request(c.body, &param).status()
                      : parse_completion_request(c.body, &param).status();
    ASSERT_FALSE(s.is_ok()) << c.body;
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << c.body;
    EXPECT_EQ(param, c.param) << c.body << ": " << s.message();
    EXPECT_NE(s.message().find(c.param), std::string::npos) << s.message();
  }
  // Accepted: fields that cannot change the output, and the "nothing asked" forms of the
  // unimplemented ones.
  std::string param;
  EXPECT_TRUE(parse_completion_request(
                  R"({"prompt":"x","user":"u","response_format":{"type":"text"},"best_of":1})", &param)
                  .is_ok());
  // Structured output: json_object and a json_schema compile to the schema the engine enforces.
  auto jo = parse_completion_request(R"({"prompt":"x","response_format":{"type":"json_object"}})", &param);
  ASSERT_TRUE(jo.is_ok());
  ASSERT_NE(jo->params.json_schema, nullptr);
  auto js = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"response_format":
      {"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object",
       "properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}}})",
                               &param);
  ASSERT_TRUE(js.is_ok()) << js.status().to_string();
  ASSERT_NE(js->params.json_schema, nullptr);
  EXPECT_EQ(js->params.json_schema->node(js->params.json_schema->root()).properties.size(), 1u);
  EXPECT_TRUE(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"user":"u","tools":[],
                                    "tool_choice":"none","metadata":{"a":"b"},"parallel_tool_calls":true})",
                                 &param)
                  .is_ok())
      << param;
  // What the bench HTTP client sends (src/bench/http_backend.cpp).
  EXPECT_TRUE(parse_completion_request(
                  R"({"model":"m","prompt":"p","max_tokens":4,"temperature":0,"stream":true,
                      "stream_options":{"include_usage":true},"ignore_eos":true})", &param)
                  .is_ok());
  EXPECT_TRUE(parse_chat_request(
                  R"({"model":"m","messages":[{"role":"user","content":"p"}],"max_tokens":4,
                      "max_completion_tokens":4,"temperature":0,"stream":true,
                      "stream_options":{"include_usage":true},"ignore_eos":true})", &param)
                  .is_ok());
}

TEST(JsonDepth, CountsNestingOutsideStrings) {
  EXPECT_EQ(json_nesting_depth(R"({"a":[1,{"b":"[[[["}]})", 100), 3);
  EXPECT_GT(json_nesting_depth(std::string(100000, '['), 64), 64);
}

TEST(ApiError, StatusMapping) {
  EXPECT_EQ(api_error_from_status(invalid_argument("x")).http_status, 400);
  EXPECT_EQ(api_error_from_status(not_found("x")).http_status, 404);
  auto e = api_error_from_status(resource_exhausted("x"));
  EXPECT_EQ(e.http_status, 429);
  EXPECT_EQ(e.retry_after_s, 1);
  EXPECT_EQ(api_error_from_status(Status(ErrorCode::kUnavailable, "x")).http_status, 503);
  EXPECT_EQ(api_error_from_status(internal_error("x")).http_status, 500);
  EXPECT_EQ(api_error_json(invalid_request("bad", "temperature")),
            R"({"error":{"code":null,"message":"bad","param":"temperature","type":"invalid_request_error"}})");
}

TEST(Response, InvalidUtf8InPiecesDoesNotThrow) {
  ResponseIdentity id{ApiKind::kChat, "chatcmpl-1", 1, "m"};
  std::vector<TokenLogprobEntry> lp = {{"\xE2\x96", -1.0f, {{"\xFF", -2.0f}}}};
  std::string s = format_chunk(id, 0, "\xC3", false, "", &lp, 0, false);
  EXPECT_NE(s.find("\xEF\xBF\xBD"), std::string::npos) << s;
  EXPECT_NE(s.find("\"bytes\":[226,150]"), std::string::npos) << s;
}

}  // namespace openai_request_test
}  // namespace tessera::serve

namespace tessera::serve {
namespace openai_request_test {

TEST(Request, ToolsAndToolChoice) {
  std::string param;
  auto r = parse_chat_request(R"({"messages":[{"role":"user","content":"x"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"ok"}],
      "tools":[{"type":"function","function":{"name":"f","description":"d",
        "parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}}},
               {"type":"function","function":{"name":"g-2"}}]})", &param);
  ASSERT_TRUE(r.is_ok()) << param << ": " << r.status().message();
  EXPECT_EQ(r->tools.choice, ToolChoice::kAuto);  // the default with tools
  ASSERT_EQ(r->tools.functions.size(), 2u);
  EXPECT_EQ(r->tools.functions[1].name, "g-2");
  EXPECT_TRUE(r->tools.functions[1].parameters.empty());
  // Key order as sent (a template's tojson shows it).
  EXPECT_EQ(r->tools.functions[0].parameters.dump(),
            R"({"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}})");
  EXPECT_EQ(r->tools.tools[0]["function"].begin().key(), "name");
  EXPECT_EQ(r->params.json_schema, nullptr);  // auto: free text, parsed afterwards
  ASSERT_TRUE(r->messages[1].tool_calls.is_array());
  EXPECT_EQ(r->messages[1].tool_calls[0]["function"]["name"], "f");
  EXPECT_EQ(r->messages[1].tool_calls[0].begin().key(), "id");
  EXPECT_EQ(r->messages[2].tool_call_id, "c1");

  // A forced call is constrained: its schema is set.
  auto forced = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f"}}],
      "tool_choice":{"type":"function","function":{"name":"f"}}})", &param);
  ASSERT_TRUE(forced.is_ok()) << forced.status().message();
  EXPECT_EQ(forced->tools.choice, ToolChoice::kFunction);
  EXPECT_NE(forced->params.json_schema, nullptr);
  auto required = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"})", &param);
  ASSERT_TRUE(required.is_ok());
  EXPECT_NE(required->params.json_schema, nullptr);
  // "none" renders no tools and parses nothing.
  auto none = parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"})", &param);
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->tools.active());

  struct Case {
    const char* body;
    const char* param;
  };
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  for (const Case& c : {
           Case{R"("tools":{})", "tools"},
           Case{R"("tools":[{"type":"retrieval"}])", "tools[0].type"},
           Case{R"("tools":[{"type":"function","function":{"name":"a b"}}])", "tools[0].function.name"},
           Case{R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])",
                "tools[1].function.name"},
           Case{R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])",
                "tools[0].function.parameters"},
           Case{R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"sometimes")", "tool_choice"},
           Case{R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}})",
                "tool_choice"},
           Case{R"("tool_choice":"required")", "tool_choice"},
           Case{R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","not":{}}}}}}],"tool_choice":"required")",
                "tools"},
           Case{R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","response_format":{"type":"json_object"})",
                "response_format"},
       }) {
    const std::string body = "{" + user + "," + c.body + "}";
    auto s = parse_chat_request(body, &param);
    ASSERT_FALSE(s.is_ok()) << body;
    EXPECT_EQ(param, c.param) << body << ": " << s.status().message();
  }
  // tool_calls belong to assistant turns and must be function calls.
  for (const char* m : {R"({"role":"user","content":"x","tool_calls":[]})",
                        R"({"role":"assistant","tool_calls":[{"type":"function"}]})",
                        R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":3}}]})"}) {
    const std::string body = std::string(R"({"messages":[)") + m + "]}";
    EXPECT_FALSE(parse_chat_request(body, &param).is_ok()) << body;
    EXPECT_TRUE(param.starts_with("messages[0].tool_calls")) << body << " -> " << param;
  }
}

}  // namespace openai_request_test
}  // namespace tessera::serve
