// Strict RFC 8259 JSON reader and compact writer. The parser is a recursive descent over the
// input bytes; every error is reported as "<source>: line L, column C: expected ..." so that a
// broken config.json or safetensors header can be fixed without a hex editor.
#include "mnemo/io/json.hpp"
#include "mnemo/io/file_read.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <sstream>

#include "mnemo/error.hpp"
#include "tokenizer/unicode.hpp"

namespace mnemo::json {

// ---------------------------------------------------------------------------------------------
// Value

const char* type_name(Type t) {
    switch (t) {
        case Type::Null: return "null";
        case Type::Bool: return "boolean";
        case Type::Number: return "number";
        case Type::String: return "string";
        case Type::Array: return "array";
        case Type::Object: return "object";
    }
    return "unknown";
}

static Error type_mismatch(const char* expected, Type found) {
    return Error(std::string("expected ") + expected + ", found " + type_name(found));
}

bool Value::as_bool() const {
    if (type_ != Type::Bool) throw type_mismatch("boolean", type_);
    return bool_;
}

double Value::as_double() const {
    if (type_ != Type::Number) throw type_mismatch("number", type_);
    return num_;
}

int64_t Value::as_int() const {
    if (type_ != Type::Number) throw type_mismatch("integer", type_);
    if (!is_int_) throw Error("expected integer, found number " + dump());
    return int_;
}

const std::string& Value::as_string() const {
    if (type_ != Type::String) throw type_mismatch("string", type_);
    return *str_;
}

const std::vector<Value>& Value::as_array() const {
    if (type_ != Type::Array) throw type_mismatch("array", type_);
    return *arr_;
}

const std::vector<std::pair<std::string, Value>>& Value::as_object() const {
    if (type_ != Type::Object) throw type_mismatch("object", type_);
    return *obj_;
}

const Value* Value::find(std::string_view key) const {
    if (type_ != Type::Object) return nullptr;
    for (const auto& [k, v] : *obj_)
        if (k == key) return &v;
    return nullptr;
}

namespace {

// One step of a dotted path: an object member, or an array element when the step is a decimal
// index ("memory_anchors.1"), so plugins can read list-valued config fields element by element.
const Value* path_step(const Value* cur, std::string_view step) {
    if (!cur->is_array()) return cur->find(step);
    size_t i = 0;
    const char* end = step.data() + step.size();
    if (step.empty() || std::from_chars(step.data(), end, i).ptr != end) return nullptr;
    return i < cur->as_array().size() ? &cur->as_array()[i] : nullptr;
}

}  // namespace

const Value* Value::find_path(std::string_view dotted) const {
    const Value* cur = this;
    while (true) {
        const size_t dot = dotted.find('.');
        cur = path_step(cur, dotted.substr(0, dot));
        if (cur == nullptr || dot == std::string_view::npos) return cur;
        dotted.remove_prefix(dot + 1);
    }
}

size_t Value::size() const {
    if (type_ == Type::Array) return arr_->size();
    if (type_ == Type::Object) return obj_->size();
    return 0;
}

Value Value::make_bool(bool b) {
    Value v;
    v.type_ = Type::Bool;
    v.bool_ = b;
    return v;
}

Value Value::make_number(double d, bool is_int, int64_t i) {
    Value v;
    v.type_ = Type::Number;
    v.is_int_ = is_int;
    v.num_ = is_int ? static_cast<double>(i) : d;
    v.int_ = is_int ? i : 0;
    return v;
}

Value Value::make_string(std::string s) {
    Value v;
    v.type_ = Type::String;
    v.str_ = std::make_shared<const std::string>(std::move(s));
    return v;
}

Value Value::make_int_array(const std::vector<int32_t>& a) {
    std::vector<Value> items;
    items.reserve(a.size());
    for (int32_t x : a) items.push_back(make_number(x, true, x));
    return make_array(std::move(items));
}

Value Value::make_array(std::vector<Value> a) {
    Value v;
    v.type_ = Type::Array;
    v.arr_ = std::make_shared<const std::vector<Value>>(std::move(a));
    return v;
}

Value Value::make_object(std::vector<std::pair<std::string, Value>> o) {
    Value v;
    v.type_ = Type::Object;
    v.obj_ = std::make_shared<const std::vector<std::pair<std::string, Value>>>(std::move(o));
    return v;
}

static void dump_string(std::string_view s, std::string& out) {
    static const char hex[] = "0123456789abcdef";
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        const char ch = s[i];
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x80) {
            // JSON text is UTF-8 (RFC 8259 section 8.1) and our own parser refuses anything else:
            // a byte that is not part of valid UTF-8 (a model's partial token, a corrupt title)
            // is written as U+FFFD, so that every document written here can be read back.
            const unicode::Decoded d = unicode::decode_utf8(s, i);
            if (d.cp == unicode::kInvalid) {
                out += "\\ufffd";
            } else {
                out.append(s.substr(i, d.len));
                i += d.len - 1;
            }
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 0xf];
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

std::string quote(std::string_view s) {
    std::string out;
    dump_string(s, out);
    return out;
}

static void dump_number(double d, std::string& out) {
    // JSON cannot represent NaN or infinity; "null" is what browsers write for them too.
    if (!std::isfinite(d)) {
        out += "null";
        return;
    }
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d);  // shortest round-trip form
    std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
    out += text;
    // Keep a non-integer number a non-integer after a round trip ("1" would parse as integer).
    if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

static void dump_into(const Value& v, std::string& out) {
    switch (v.type()) {
        case Type::Null: out += "null"; break;
        case Type::Bool: out += v.as_bool() ? "true" : "false"; break;
        case Type::Number:
            if (v.is_integer()) out += std::to_string(v.as_int());
            else dump_number(v.as_double(), out);
            break;
        case Type::String: dump_string(v.as_string(), out); break;
        case Type::Array: {
            out += '[';
            bool first = true;
            for (const auto& e : v.as_array()) {
                if (!first) out += ',';
                first = false;
                dump_into(e, out);
            }
            out += ']';
            break;
        }
        case Type::Object: {
            out += '{';
            bool first = true;
            for (const auto& [k, e] : v.as_object()) {
                if (!first) out += ',';
                first = false;
                dump_string(k, out);
                out += ':';
                dump_into(e, out);
            }
            out += '}';
            break;
        }
    }
}

std::string Value::dump() const {
    std::string out;
    dump_into(*this, out);
    return out;
}

// ---------------------------------------------------------------------------------------------
// Parser

namespace {

constexpr int kMaxDepth = 512;

class Parser {
public:
    Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

    Value parse_document() {
        // RFC 8259 section 8.1 lets parsers ignore a UTF-8 byte order mark; editors add them.
        if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
        skip_ws();
        Value v = parse_value(0);
        skip_ws();
        if (pos_ != text_.size()) fail("expected end of document, found " + describe_here());
        return v;
    }

private:
    std::string_view text_;
    std::string_view source_;
    size_t pos_ = 0;

    [[noreturn]] void fail_at(size_t at, const std::string& what) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at && i < text_.size(); ++i) {
            const auto c = static_cast<unsigned char>(text_[i]);
            if (c == '\n') {
                ++line;
                column = 1;
            } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
                ++column;
            }
        }
        std::ostringstream msg;
        msg << source_ << ": line " << line << ", column " << column << ": " << what;
        throw Error(msg.str());
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    // A short description of the byte at pos_ for "found ..." parts of messages.
    std::string describe_here() const {
        if (pos_ >= text_.size()) return "end of document";
        const auto c = static_cast<unsigned char>(text_[pos_]);
        if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
        char buf[16];
        std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
        return buf;
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    void skip_ws() {
        while (!at_end()) {
            const char c = text_[pos_];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            ++pos_;
        }
    }

    bool consume_literal(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    Value parse_value(int depth) {
        if (at_end()) fail("expected value, found end of document");
        switch (text_[pos_]) {
            case '{': return parse_object(depth + 1);
            case '[': return parse_array(depth + 1);
            case '"': return Value::make_string(parse_string());
            case 't':
                if (consume_literal("true")) return Value::make_bool(true);
                break;
            case 'f':
                if (consume_literal("false")) return Value::make_bool(false);
                break;
            case 'n':
                if (consume_literal("null")) return Value();
                break;
            default:
                if (text_[pos_] == '-' || (text_[pos_] >= '0' && text_[pos_] <= '9'))
                    return parse_number();
        }
        fail("expected value, found " + describe_here());
    }

    void check_depth(int depth) const {
        if (depth > kMaxDepth)
            fail("expected nesting depth at most " + std::to_string(kMaxDepth) +
                 ", found deeper arrays/objects");
    }

    Value parse_array(int depth) {
        check_depth(depth);
        ++pos_;  // '['
        std::vector<Value> items;
        skip_ws();
        if (peek() == ']') {
            ++pos_;
            return Value::make_array(std::move(items));
        }
        while (true) {
            skip_ws();
            if (peek() == ']') fail("expected value after ',', found ']' (trailing commas are not allowed)");
            items.push_back(parse_value(depth));
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == ']') {
                ++pos_;
                return Value::make_array(std::move(items));
            }
            fail("expected ',' or ']' in array, found " + describe_here());
        }
    }

    Value parse_object(int depth) {
        check_depth(depth);
        ++pos_;  // '{'
        std::vector<std::pair<std::string, Value>> members;
        std::vector<size_t> key_offsets;  // for pointing at a duplicate key
        skip_ws();
        if (peek() == '}') {
            ++pos_;
            return Value::make_object(std::move(members));
        }
        while (true) {
            skip_ws();
            if (peek() == '}') fail("expected member name after ',', found '}' (trailing commas are not allowed)");
            if (peek() != '"') fail("expected '\"' to start a member name, found " + describe_here());
            key_offsets.push_back(pos_);
            std::string key = parse_string();
            skip_ws();
            if (peek() != ':') fail("expected ':' after member name, found " + describe_here());
            ++pos_;
            skip_ws();
            Value v = parse_value(depth);
            members.emplace_back(std::move(key), std::move(v));
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == '}') {
                ++pos_;
                break;
            }
            fail("expected ',' or '}' in object, found " + describe_here());
        }
        reject_duplicate_keys(members, key_offsets);
        return Value::make_object(std::move(members));
    }

    // Sorting indices keeps this O(n log n) for huge objects such as a tokenizer vocabulary.
    void reject_duplicate_keys(const std::vector<std::pair<std::string, Value>>& members,
                               const std::vector<size_t>& offsets) const {
        if (members.size() < 2) return;
        std::vector<size_t> order(members.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return members[a].first < members[b].first; });
        size_t worst = members.size();  // report the first duplicate in document order
        for (size_t i = 1; i < order.size(); ++i)
            if (members[order[i]].first == members[order[i - 1]].first) worst = std::min(worst, order[i]);
        if (worst != members.size())
            fail_at(offsets[worst], "expected unique member names, found duplicate key \"" +
                                        members[worst].first + "\"");
    }

    unsigned parse_hex4() {
        if (text_.size() - pos_ < 4) fail("expected 4 hex digits after \\u, found end of document");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = text_[pos_];
            unsigned d;
            if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
            else fail("expected 4 hex digits after \\u, found " + describe_here());
            v = v * 16 + d;
            ++pos_;
        }
        return v;
    }

    uint32_t parse_unicode_escape() {
        const size_t start = pos_ - 2;  // at the backslash
        uint32_t cp = parse_hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            fail_at(start, "expected a high surrogate before low surrogate \\u" + hex_text(cp));
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u")
                fail_at(start, "expected a low surrogate \\uDC00-\\uDFFF after high surrogate \\u" +
                                   hex_text(cp));
            pos_ += 2;
            const uint32_t low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF)
                fail_at(pos_ - 6, "expected a low surrogate \\uDC00-\\uDFFF after high surrogate \\u" +
                                      hex_text(cp) + ", found \\u" + hex_text(low));
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        return cp;
    }

    static std::string hex_text(uint32_t v) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "%04X", v);
        return buf;
    }

    // Validates one UTF-8 sequence starting at pos_ (a byte >= 0x80) and copies it to out.
    void copy_utf8_sequence(std::string& out) {
        const auto b0 = static_cast<unsigned char>(text_[pos_]);
        size_t len;
        uint32_t min_cp, cp;
        if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; cp = b0 & 0x1F; min_cp = 0x80; }
        else if (b0 >= 0xE0 && b0 <= 0xEF) { len = 3; cp = b0 & 0x0F; min_cp = 0x800; }
        else if (b0 >= 0xF0 && b0 <= 0xF4) { len = 4; cp = b0 & 0x07; min_cp = 0x10000; }
        else fail("expected valid UTF-8 in string, found " + describe_here());
        if (text_.size() - pos_ < len) fail("expected valid UTF-8 in string, found a truncated sequence");
        for (size_t i = 1; i < len; ++i) {
            const auto b = static_cast<unsigned char>(text_[pos_ + i]);
            if ((b & 0xC0) != 0x80) fail("expected valid UTF-8 in string, found a truncated sequence");
            cp = (cp << 6) | (b & 0x3F);
        }
        if (cp < min_cp) fail("expected valid UTF-8 in string, found an overlong encoding");
        if (cp > 0x10FFFF) fail("expected valid UTF-8 in string, found a code point above U+10FFFF");
        if (cp >= 0xD800 && cp <= 0xDFFF) fail("expected valid UTF-8 in string, found an encoded surrogate");
        out.append(text_.data() + pos_, len);
        pos_ += len;
    }

    std::string parse_string() {
        const size_t open = pos_;
        ++pos_;  // opening quote
        std::string out;
        while (true) {
            if (at_end()) fail_at(open, "expected closing '\"' of string, found end of document");
            const auto c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail("expected escaped control character in string, found " + describe_here());
            if (c >= 0x80) {
                copy_utf8_sequence(out);
                continue;
            }
            if (c != '\\') {
                out += static_cast<char>(c);
                ++pos_;
                continue;
            }
            ++pos_;
            if (at_end()) fail("expected escape character after '\\', found end of document");
            const char e = text_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': unicode::append_utf8(out, parse_unicode_escape()); break;
                default:
                    --pos_;
                    fail("expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u after '\\', found " +
                         describe_here());
            }
        }
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    Value parse_number() {
        const size_t start = pos_;
        if (peek() == '-') ++pos_;
        if (!is_digit(peek())) fail("expected digit in number, found " + describe_here());
        if (peek() == '0') {
            ++pos_;
            if (is_digit(peek())) fail_at(start, "expected a number without leading zeros");
        } else {
            while (is_digit(peek())) ++pos_;
        }
        bool integral = true;
        if (peek() == '.') {
            integral = false;
            ++pos_;
            if (!is_digit(peek())) fail("expected digit after decimal point, found " + describe_here());
            while (is_digit(peek())) ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!is_digit(peek())) fail("expected digit in exponent, found " + describe_here());
            while (is_digit(peek())) ++pos_;
        }
        const char* first = text_.data() + start;
        const char* last = text_.data() + pos_;
        if (integral) {
            int64_t i = 0;
            const auto r = std::from_chars(first, last, i);
            if (r.ec == std::errc() && r.ptr == last) return Value::make_number(0.0, true, i);
            // Too large for int64: kept as a (rounded) double, as JavaScript would.
        }
        double d = 0.0;
        const auto r = std::from_chars(first, last, d);
        if (r.ec == std::errc::result_out_of_range) {
            if (magnitude_is_huge(std::string_view(first, static_cast<size_t>(last - first))))
                fail_at(start, "expected a number within the range of a double, found " +
                                   std::string(first, std::min<size_t>(static_cast<size_t>(last - first), 40)));
            d = (*first == '-') ? -0.0 : 0.0;  // underflow: the nearest double is zero
        } else if (r.ec != std::errc() || r.ptr != last) {
            fail_at(start, "expected a number");
        }
        return Value::make_number(d, false, 0);
    }

    // Decides whether an out-of-range literal overflowed (true) or underflowed (false) from its
    // decimal exponent: digits before the point plus the written exponent.
    static bool magnitude_is_huge(std::string_view s) {
        size_t i = 0;
        if (i < s.size() && s[i] == '-') ++i;
        int64_t magnitude = 0;  // position of the first significant digit relative to the point
        bool seen_significant = false;
        for (; i < s.size() && is_digit(s[i]); ++i) {
            if (s[i] != '0') seen_significant = true;
            if (seen_significant) ++magnitude;
        }
        if (i < s.size() && s[i] == '.') {
            for (++i; i < s.size() && is_digit(s[i]); ++i) {
                if (seen_significant) continue;
                if (s[i] != '0') seen_significant = true;
                else --magnitude;
            }
        }
        int64_t exp = 0;
        if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
            ++i;
            bool neg = false;
            if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
            for (; i < s.size() && is_digit(s[i]); ++i)
                exp = std::min<int64_t>(exp * 10 + (s[i] - '0'), int64_t{1} << 40);  // saturate
            if (neg) exp = -exp;
        }
        return magnitude + exp > 0;
    }
};

}  // namespace

Value parse(std::string_view text, std::string_view source) {
    return Parser(text, source).parse_document();
}

Value parse_file(const std::string& path) {
    return parse(read_file_capped(path, kMaxTokenizerFileBytes, "JSON file"), path);
}

}  // namespace mnemo::json
