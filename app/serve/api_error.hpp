// An error the API answers with: an HTTP status and OpenAI's error object
//     {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// (type invalid_request_error, authentication_error, not_found_error, rate_limit_error,
// server_error; param names the request field at fault, or is null).
#pragma once

#include <stdexcept>
#include <string>

namespace mnemo::serve {

struct ApiError : std::runtime_error {
    ApiError(int status, std::string type, std::string message, std::string param = {}, std::string code = {})
        : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)), code(std::move(code)) {}
    int status;
    std::string type;
    std::string param;  // empty: null
    std::string code;   // empty: null
};

// 400 invalid_request_error about `param`.
inline ApiError bad_request(std::string message, std::string param = {}, std::string code = {}) {
    return ApiError(400, "invalid_request_error", std::move(message), std::move(param), std::move(code));
}

// The error object's JSON text.
std::string error_json(const ApiError& e);

}  // namespace mnemo::serve
