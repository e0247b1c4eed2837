#include "eval/eval_items.hpp"

#include <algorithm>
#include <set>

#include "eval/eval_scoring.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/json.hpp"

namespace mnemo::cli {

namespace {

// Errors say where: "FILE: line N: ...".
class LineContext {
public:
    LineContext(const std::string& path, int64_t line) : prefix_(path + ": line " + std::to_string(line) + ": ") {}
    [[noreturn]] void fail(const std::string& what) const { throw Error(prefix_ + what); }

private:
    std::string prefix_;
};

const char* type_name(const json::Value& v) {
    switch (v.type()) {
        case json::Type::Null: return "null";
        case json::Type::Bool: return "a boolean";
        case json::Type::Number: return "a number";
        case json::Type::String: return "a string";
        case json::Type::Array: return "an array";
        case json::Type::Object: return "an object";
    }
    return "a value";
}

// The member `key` as a string; nullptr when absent. A present member of another type fails.
const std::string* string_field(const json::Value& obj, const char* key, const LineContext& at) {
    const json::Value* v = obj.find(key);
    if (v == nullptr) return nullptr;
    if (!v->is_string()) at.fail(std::string("field \"") + key + "\": expected a string, found " + type_name(*v));
    return &v->as_string();
}

void add_expected(EvalItem& item, const std::string& text, const std::string& field, const LineContext& at) {
    if (normalize_answer(text).empty())
        at.fail("field " + field + " is empty once normalized (whitespace and . ! ? only): it would match any output");
    item.expected.push_back(text);
}

EvalItem parse_item(const std::string& line_text, const LineContext& at) {
    json::Value v;
    try {
        v = json::parse(line_text, "item");
    } catch (const Error& e) {
        // The parser counts lines within this one line; keep only its column and what it expected.
        const std::string msg = e.what();
        const size_t column = msg.find("column ");
        at.fail("not valid JSON: " + (column == std::string::npos ? msg : msg.substr(column)));
    }
    if (!v.is_object()) at.fail(std::string("expected a JSON object, found ") + type_name(v));

    EvalItem item;
    const std::string* question = string_field(v, "question", at);
    const std::string* prompt = string_field(v, "prompt", at);
    if (question && prompt) at.fail("has both \"question\" and \"prompt\": an item is one or the other");
    if (!question && !prompt) at.fail("expected a \"question\" (with \"answer\") or a \"prompt\" (with \"completion\") field");
    item.is_question = question != nullptr;
    item.text = question ? *question : *prompt;
    if (item.text.empty()) at.fail(std::string("field \"") + (question ? "question" : "prompt") + "\" is empty");

    const char* primary = item.is_question ? "answer" : "completion";
    const char* wrong = item.is_question ? "completion" : "answer";
    if (v.find(wrong) != nullptr)
        at.fail(std::string("field \"") + wrong + "\" belongs with \"" + (item.is_question ? "prompt" : "question") +
                "\"; a \"" + (item.is_question ? "question" : "prompt") + "\" item expects \"" + primary + "\"");
    if (const std::string* expected = string_field(v, primary, at))
        add_expected(item, *expected, std::string("\"") + primary + "\"", at);
    if (const json::Value* answers = v.find("answers")) {
        if (!answers->is_array()) at.fail(std::string("field \"answers\": expected an array of strings, found ") + type_name(*answers));
        for (size_t i = 0; i < answers->as_array().size(); ++i) {
            const json::Value& a = answers->as_array()[i];
            const std::string field = "\"answers\"[" + std::to_string(i) + "]";
            if (!a.is_string()) at.fail("field " + field + ": expected a string, found " + type_name(a));
            add_expected(item, a.as_string(), field, at);
        }
    }
    if (item.expected.empty())
        at.fail(std::string("expected a \"") + primary + "\" field (or a non-empty \"answers\" list)");

    if (const json::Value* id = v.find("id")) {
        if (id->is_string()) item.id = id->as_string();
        else if (id->is_integer()) item.id = std::to_string(id->as_int());
        else at.fail(std::string("field \"id\": expected a string or an integer, found ") + type_name(*id));
        if (item.id.empty()) at.fail("field \"id\" is empty");
    }
    if (const json::Value* history = v.find("history")) {
        if (!item.is_question) at.fail("field \"history\" belongs with \"question\": a raw prompt holds its own context");
        if (!history->is_array()) at.fail(std::string("field \"history\": expected an array of {\"question\", \"answer\"}, found ") + type_name(*history));
        for (size_t i = 0; i < history->as_array().size(); ++i) {
            const json::Value& t = history->as_array()[i];
            const std::string field = "field \"history\"[" + std::to_string(i) + "]";
            if (!t.is_object()) at.fail(field + ": expected an object {\"question\", \"answer\"}, found " + type_name(t));
            const std::string* q = string_field(t, "question", at);
            const std::string* a = string_field(t, "answer", at);
            if (!q || q->empty() || !a || a->empty()) at.fail(field + ": expected a non-empty \"question\" and \"answer\"");
            item.history.push_back({*q, *a});
        }
    }
    const std::string* set = string_field(v, "set", at);
    item.set = set ? *set : "default";
    if (item.set.empty()) at.fail("field \"set\" is empty");
    return item;
}

}  // namespace

std::vector<EvalItem> read_eval_items(const std::string& path) {
    std::string text;
    try {
        text = read_file_capped(path, kMaxDocumentFileBytes, "questions file");
    } catch (const Error& e) {
        throw with_context("--questions", e);
    }
    std::vector<EvalItem> items;
    std::set<std::string> ids;
    int64_t n = 0;
    for (size_t pos = 0; pos < text.size();) {
        const size_t end = std::min(text.find('\n', pos), text.size());
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        ++n;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        const LineContext at(path, n);
        EvalItem item = parse_item(line, at);
        item.line = n;
        if (item.id.empty()) item.id = std::to_string(n);
        if (!ids.insert(item.id).second) at.fail("field \"id\": \"" + item.id + "\" is used by an earlier item");
        items.push_back(std::move(item));
    }
    if (items.empty()) throw Error(path + ": no items (expected one JSON object per line)");
    return items;
}

}  // namespace mnemo::cli
