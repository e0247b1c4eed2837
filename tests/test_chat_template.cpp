// Chat templates: detection from tokenizer_config.json and rendering. The expected strings are
// what each family's official Jinja template (quoted in the configs below) produces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mnemo/error.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;

class ChatTemplateTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("mnemo_chat_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    void write_config(const std::string& json) {
        std::ofstream(dir_ / "tokenizer_config.json") << json;
    }
    mnemo::ChatTemplate detect(std::string* note) { return mnemo::detect_chat_template(dir_.string(), note); }
    fs::path dir_;
};

// What detection found: the family's format, the BOS text the template puts first and the
// strings that end an assistant turn.
void expect_detected(const mnemo::ChatTemplate& t, mnemo::ChatFormat format, const std::string& bos,
                     const std::vector<std::string>& stops) {
    EXPECT_EQ(t.format, format);
    EXPECT_EQ(t.bos_text, bos);
    EXPECT_EQ(t.stop_strings, stops);
}

const std::vector<mnemo::ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", " Hi there \n"}, {"assistant", "Hello!"}, {"user", "Why?"}};

TEST_F(ChatTemplateTest, Llama3) {
    write_config(R"({"bos_token":"<|begin_of_text|>","chat_template":"{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"})");
    std::string note = "stale";
    const auto t = detect(&note);
    expect_detected(t, mnemo::ChatFormat::Llama3, "<|begin_of_text|>", {"<|eot_id|>"});
    EXPECT_EQ(t.name, "llama3");
    EXPECT_EQ(note, "");
    EXPECT_EQ(t.render(kConversation, true),
              "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(t.render({{"user", "x"}}, false),
              "<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
}

TEST_F(ChatTemplateTest, ChatMLFromNamedTemplateList) {
    write_config(R"({"chat_template":[{"name":"tool_use","template":"ignored"},{"name":"default","template":"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"}]})");
    const auto t = detect(nullptr);
    expect_detected(t, mnemo::ChatFormat::ChatML, "", {"<|im_end|>"});
    EXPECT_EQ(t.render(kConversation, true),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi there \n<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n"
              "<|im_start|>assistant\n");
}

TEST_F(ChatTemplateTest, Olmo) {
    write_config(R"({"bos_token":"<|endoftext|>","eos_token":"<|endoftext|>","chat_template":"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}{{ '<|system|>\n' + message['content'] + '\n' }}{% elif message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '\n' }}{% elif message['role'] == 'assistant' %}{% if not loop.last %}{{ '<|assistant|>\n'  + message['content'] + eos_token + '\n' }}{% else %}{{ '<|assistant|>\n'  + message['content'] + eos_token }}{% endif %}{% endif %}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}{% endfor %}"})");
    const auto t = detect(nullptr);
    expect_detected(t, mnemo::ChatFormat::Olmo, "<|endoftext|>", {"<|endoftext|>"});
    EXPECT_EQ(t.render(kConversation, true),
              "<|system|>\nBe brief.\n<|user|>\n Hi there \n\n<|assistant|>\nHello!<|endoftext|>\n"
              "<|user|>\nWhy?\n<|assistant|>\n");
    EXPECT_EQ(t.render({{"user", "a"}, {"assistant", "b"}}, false),
              "<|user|>\na\n<|assistant|>\nb<|endoftext|>");
}

TEST_F(ChatTemplateTest, Llama2) {
    write_config(R"({"bos_token":{"content":"<s>"},"eos_token":{"content":"</s>"},"chat_template":"{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"})");
    const auto t = detect(nullptr);
    EXPECT_EQ(t.format, mnemo::ChatFormat::Llama2);
    EXPECT_EQ(t.bos_text, "<s>");
    // The first "<s>" is the tokenizer's BOS (bos_text), later turns carry it literally.
    EXPECT_EQ(t.render(kConversation, true),
              "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi there [/INST] Hello! </s>"
              "<s>[INST] Why? [/INST]");
    EXPECT_THROW(t.render({{"assistant", "x"}}, true), mnemo::Error);
}

TEST_F(ChatTemplateTest, UnknownTemplateFallsBackToRaw) {
    write_config(R"({"chat_template":"{% for m in messages %}<<{{ m.content }}>>{% endfor %}"})");
    std::string note;
    const auto t = detect(&note);
    EXPECT_EQ(t.format, mnemo::ChatFormat::Raw);
    EXPECT_NE(note.find("does not recognise"), std::string::npos);
    EXPECT_EQ(t.render({{"user", "Once upon"}}, true), "Once upon");
}

TEST_F(ChatTemplateTest, NoTemplateUsesPlainFormat) {
    std::string note;
    auto t = detect(&note);  // no tokenizer_config.json at all
    EXPECT_EQ(t.format, mnemo::ChatFormat::Plain);
    EXPECT_FALSE(note.empty());
    EXPECT_EQ(t.render({{"system", "S"}, {"user", "Hi"}}, true), "System: S\nUser: Hi\nAssistant:");
    write_config(R"({"bos_token":"<s>"})");
    t = detect(&note);
    EXPECT_EQ(t.format, mnemo::ChatFormat::Plain);
}

TEST_F(ChatTemplateTest, BadConfigIsAnError) {
    write_config(R"({"chat_template": 3})");
    EXPECT_THROW(detect(nullptr), mnemo::Error);
    write_config("{broken");
    EXPECT_THROW(detect(nullptr), mnemo::Error);
}

TEST(ChatTemplate, FixtureFolderIsLlama3) {
    std::string note;
    const auto t = mnemo::detect_chat_template(std::string(MNEMO_TEST_DATA) + "/tokenizers/llama3_bpe", &note);
    EXPECT_EQ(t.format, mnemo::ChatFormat::Llama3);
}

}  // namespace
