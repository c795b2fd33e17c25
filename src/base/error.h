// Errors inside the library are exceptions of one type carrying a complete, user-facing message
// (file, field, value). They never cross the C API: runtime/api.cpp turns them into status codes.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace mw {

enum class ErrorKind {
    invalid_argument,  // the caller asked for something impossible (bad flag value, prompt too
                       // long)
    bad_file,          // a model or data file is malformed
    io,                // the OS refused (open, read, mmap)
    unsupported,       // well-formed but not something memwall runs (architecture, tensor type)
    out_of_memory,     // an allocation or a memory plan failed
    context_full,      // the KV cache has no room for the tokens
};

class Error : public std::runtime_error {
  public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

  private:
    ErrorKind kind_;
};

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
    throw Error(kind, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace mw
