// A small, strict JSON reader (RFC 8259) for config.json, tokenizer.json, safetensors headers and
// network messages. Errors name the source (file name) and the byte offset / line:column, and
// lookups name the dotted path of the field and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include "mnemo/api.hpp"

namespace mnemo::json {

enum class Type { Null, Bool, Number, String, Array, Object };

class MNEMO_API Value {
public:
    Value() = default;  // null

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::Null; }
    bool is_bool() const { return type_ == Type::Bool; }
    bool is_number() const { return type_ == Type::Number; }
    bool is_string() const { return type_ == Type::String; }
    bool is_array() const { return type_ == Type::Array; }
    bool is_object() const { return type_ == Type::Object; }
    // True for numbers written without fraction/exponent that fit int64.
    bool is_integer() const { return type_ == Type::Number && is_int_; }

    // Typed accessors throw mnemo::Error("expected <type>, found <type>") on mismatch.
    bool as_bool() const;
    double as_double() const;
    int64_t as_int() const;  // also rejects non-integral numbers
    const std::string& as_string() const;
    const std::vector<Value>& as_array() const;
    // Object members in document order (duplicate keys are a parse error).
    const std::vector<std::pair<std::string, Value>>& as_object() const;

    // Object member or nullptr (also nullptr when this is not an object).
    const Value* find(std::string_view key) const;
    // Dotted path lookup ("rope_scaling.factor"; a decimal step indexes an array: "anchors.0");
    // nullptr when any step is missing.
    const Value* find_path(std::string_view dotted) const;

    size_t size() const;  // array/object element count, 0 otherwise

    static Value make_null() { return Value(); }
    static Value make_bool(bool b);
    static Value make_number(double d, bool is_int, int64_t i);
    static Value make_string(std::string s);
    static Value make_array(std::vector<Value> a);
    static Value make_int_array(const std::vector<int32_t>& a);  // token ids, layer lists
    static Value make_object(std::vector<std::pair<std::string, Value>> o);

    // Compact serialisation (for tests and for messages).
    std::string dump() const;

private:
    Type type_ = Type::Null;
    bool bool_ = false;
    bool is_int_ = false;
    double num_ = 0.0;
    int64_t int_ = 0;
    std::shared_ptr<const std::string> str_;
    std::shared_ptr<const std::vector<Value>> arr_;
    std::shared_ptr<const std::vector<std::pair<std::string, Value>>> obj_;
};

// Parse a whole document. `source` names it in errors ("config.json"). Limits: nesting depth 512;
// strings must be valid UTF-8; \u escapes with surrogate pairs decoded. Throws mnemo::Error
// "<source>: line L, column C: <what was expected>".
MNEMO_API Value parse(std::string_view text, std::string_view source);

// Read a file and parse it; errors name the file path.
MNEMO_API Value parse_file(const std::string& path);

// A string as a JSON string literal, quotes included (control characters escaped, UTF-8 kept;
// a byte that is not valid UTF-8 becomes \ufffd, so the literal is always valid JSON text).
MNEMO_API std::string quote(std::string_view s);

// Type name for messages: "null", "boolean", "number", "string", "array", "object".
MNEMO_API const char* type_name(Type t);

}  // namespace mnemo::json
