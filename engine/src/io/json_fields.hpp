// Reading checked fields of a JSON object (manifests): each error names `where` and the field and
// says what was expected. Internal to libmnemo.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"

namespace mnemo::json_fields {

inline const json::Value& member(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value* v = obj.find(key);
    if (!v) throw Error(where + ": field '" + key + "' is missing");
    return *v;
}
inline int64_t int_member(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value& v = member(obj, key, where);
    if (!v.is_integer()) throw Error(where + ": field '" + key + "' must be an integer");
    return v.as_int();
}
inline std::string string_member(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value& v = member(obj, key, where);
    if (!v.is_string()) throw Error(where + ": field '" + key + "' must be a string");
    return v.as_string();
}
inline std::vector<int32_t> int_list(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value& v = member(obj, key, where);
    if (!v.is_array()) throw Error(where + ": field '" + key + "' must be an array of integers");
    std::vector<int32_t> out;
    for (const json::Value& x : v.as_array()) {
        if (!x.is_integer()) throw Error(where + ": field '" + key + "' must be an array of integers");
        out.push_back(static_cast<int32_t>(x.as_int()));
    }
    return out;
}

}  // namespace mnemo::json_fields
