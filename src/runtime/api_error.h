// Shared by the C API files: the thread-local message mw_last_error() returns.
#pragma once

#include <string>

namespace mw {

// Sets the message mw_last_error() returns on this thread (defined in api.cpp).
void set_api_last_error(const std::string& message);

}  // namespace mw
