// Parsing the OpenAI requests: what each field becomes, and the 400 that names a bad field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>

#include "serve/api_keys.hpp"
#include "serve/api_request.hpp"
#include "serve/api_response.hpp"

namespace mnemo::serve {
namespace {

ApiError error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ApiError& e) {
        return e;
    }
    ADD_FAILURE() << "no ApiError was thrown";
    return ApiError(0, "", "");
}

const RequestLimits kLimits;

TEST(ServeRequest, ChatFieldsAndDefaults) {
    const ChatRequest r = parse_chat_request(
        R"({"model":"x","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]}],
            "temperature":0.5,"top_p":0.9,"top_k":5,"min_p":0.1,"max_tokens":7,"stop":["\n","END"],"seed":42,
            "logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},"unknown_field":{"a":1}})",
        kLimits);
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "Hi there");
    EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.9f);
    EXPECT_EQ(r.gen.sampling.top_k, 5);
    EXPECT_FLOAT_EQ(r.gen.sampling.min_p, 0.1f);
    EXPECT_EQ(r.gen.max_tokens.value_or(-1), 7);
    EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"\n", "END"}));
    EXPECT_TRUE(r.gen.seeded);
    EXPECT_EQ(r.gen.sampling.seed, 42u);
    EXPECT_EQ(r.gen.top_logprobs, 3);
    EXPECT_TRUE(r.gen.stream);
    EXPECT_TRUE(r.gen.include_usage);

    const ChatRequest d = parse_chat_request(R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":null})", kLimits);
    EXPECT_FLOAT_EQ(d.gen.sampling.temperature, 1.0f);  // OpenAI's defaults
    EXPECT_FLOAT_EQ(d.gen.sampling.top_p, 1.0f);
    EXPECT_EQ(d.gen.sampling.top_k, 0);
    EXPECT_FLOAT_EQ(d.gen.sampling.min_p, 0.0f);
    EXPECT_FALSE(d.gen.max_tokens.has_value());
    EXPECT_FALSE(d.gen.seeded);
    EXPECT_EQ(d.gen.top_logprobs, -1);
    EXPECT_FALSE(d.gen.stream);
    EXPECT_EQ(parse_chat_request(R"({"messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":3})", kLimits)
                  .gen.max_tokens.value_or(-1),
              3);
}

TEST(ServeRequest, BadFieldsAreNamed) {
    struct Case {
        const char* body;
        const char* param;
    };
    const Case cases[] = {
        {R"({"messages":"hi"})", "messages"},
        {R"({"messages":[]})", "messages"},
        {R"({})", "messages"},
        {R"({"messages":[{"role":"tool","content":"x"}]})", "messages.0.role"},
        {R"({"messages":[{"role":"user"}]})", "messages.0.content"},
        {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})", "messages.0.content.0.type"},
        {R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})", "temperature"},
        {R"({"messages":[{"role":"user","content":"x"}],"temperature":3})", "temperature"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})", "max_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1.5})", "max_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"n":2})", "n"},
        {R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})", "stop.0"},
        {R"({"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]})", "stop"},
        {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", "top_logprobs"},
        {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", "top_logprobs"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})", "stream_options"},
        {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})", "tools"},
        {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})", "response_format"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", "stream"},
    };
    for (const Case& c : cases) {
        const ApiError e = error_of([&] { parse_chat_request(c.body, kLimits); });
        EXPECT_EQ(e.status, 400) << c.body;
        EXPECT_EQ(e.type, "invalid_request_error") << c.body;
        EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << "the message names the field: " << e.what();
    }
}

TEST(ServeRequest, BodyThatIsNotAJsonObject) {
    for (const char* body : {"", "{", "[1,2]", "{\"messages\":[}", "\xff\xfe", "{\"a\":1}garbage"}) {
        const ApiError e = error_of([&] { parse_chat_request(body, kLimits); });
        EXPECT_EQ(e.status, 400) << body;
    }
    EXPECT_NE(std::string(error_of([] { parse_chat_request("{\"messages\": [,]}", kLimits); }).what()).find("line 1, column"),
              std::string::npos);
}

TEST(ServeRequest, CompletionsAndEmbeddings) {
    const CompletionRequest c = parse_completion_request(R"({"prompt":["Once upon"],"logprobs":2,"echo":true})", kLimits);
    EXPECT_EQ(c.prompt, "Once upon");
    EXPECT_EQ(c.gen.top_logprobs, 2);
    EXPECT_TRUE(c.echo);
    EXPECT_EQ(error_of([] { parse_completion_request(R"({"prompt":["a","b"]})", kLimits); }).param, "prompt");
    EXPECT_EQ(error_of([] { parse_completion_request(R"({"prompt":[1,2,3]})", kLimits); }).param, "prompt");
    EXPECT_EQ(error_of([] { parse_completion_request(R"({"prompt":"a","logprobs":6})", kLimits); }).param, "logprobs");

    const EmbeddingRequest e = parse_embedding_request(R"({"input":["a","b"],"encoding_format":"base64"})", kLimits);
    EXPECT_EQ(e.inputs.size(), 2u);
    EXPECT_TRUE(e.base64);
    EXPECT_EQ(error_of([] { parse_embedding_request(R"({"input":[]})", kLimits); }).param, "input");
    EXPECT_EQ(error_of([] { parse_embedding_request(R"({"input":[[1,2]]})", kLimits); }).param, "input.0");
    EXPECT_EQ(error_of([] { parse_embedding_request(R"({"input":"a","encoding_format":"int8"})", kLimits); }).param,
              "encoding_format");
}

TEST(ServeResponse, ErrorObjectAndEvents) {
    EXPECT_EQ(error_json(bad_request("bad", "x")),
              R"({"error":{"message":"bad","type":"invalid_request_error","param":"x","code":null}})");
    EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
    // base64 embeddings: little-endian float32, as the official clients decode them.
    const std::string j = embeddings_json("m", {{1.0f}}, 1, true);
    EXPECT_NE(j.find("\"embedding\":\"AACAPw==\""), std::string::npos) << j;
}

}  // namespace
}  // namespace mnemo::serve

namespace mnemo::serve {
namespace {

std::string error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

// The key file: what a bad line is told, and --new-api-key's atomic rewrite.
TEST(ServeApiKeys, FileLinesAndNewKeys) {
    const NewApiKey k = new_api_key("alice");
    EXPECT_EQ(k.key.rfind("mnemo_", 0), 0u);
    const ApiKeys keys = ApiKeys::parse("# comment\n\n" + k.line, "keys");
    EXPECT_EQ(keys.size(), 1u);
    EXPECT_EQ(keys.find(k.key), "alice");
    EXPECT_EQ(keys.find(k.key + "x"), "");
    EXPECT_TRUE(keys.has_name("alice"));
    EXPECT_NE(error_text([] { ApiKeys::parse("alice sha256:12\n", "keys"); }).find("keys, line 1: hash"), std::string::npos);
    EXPECT_NE(error_text([&] { ApiKeys::parse(k.line + k.line, "keys"); }).find("line 2: name 'alice' is used twice"),
              std::string::npos);
    EXPECT_NE(error_text([] { ApiKeys::parse("a b c\n", "keys"); }).find("expected 'NAME sha256:HEX', got 3 fields"),
              std::string::npos);
    EXPECT_NE(error_text([] { ApiKeys::parse("# only a comment\n", "keys"); }).find("holds no key"), std::string::npos);
    EXPECT_NE(error_text([] { new_api_key("bad name"); }).find("is not 1-64"), std::string::npos);

    const std::string path = (std::filesystem::temp_directory_path() / ("mnemo-keys-" + std::to_string(::getpid()))).string();
    std::filesystem::remove(path);
    append_api_key(path, k, "alice");
    EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    const NewApiKey bob = new_api_key("bob");
    append_api_key(path, bob, "bob");
    const ApiKeys loaded = ApiKeys::load(path);
    EXPECT_EQ(loaded.size(), 2u);
    EXPECT_EQ(loaded.find(bob.key), "bob");
    EXPECT_NE(error_text([&] { append_api_key(path, new_api_key("alice"), "alice"); }).find("already has a key named 'alice'"),
              std::string::npos);
    EXPECT_EQ(ApiKeys::load(path).size(), 2u);  // the refused key left the file as it was
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace mnemo::serve
