// Errors carry their context up to the user: every layer that catches one may prepend what it was
// doing ("loading model 'x': model.safetensors: tensor 'w': ..."), so the final message reads as a
// path from the user's request down to the cause.
#pragma once

#include <stdexcept>
#include <string>
#include "mnemo/api.hpp"

namespace mnemo {

class MNEMO_API Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Prefix context to an error message: throw with_context("reading config.json", e)
inline Error with_context(const std::string& context, const std::exception& e) {
    return Error(context + ": " + e.what());
}

}  // namespace mnemo
