// Shared by the C API files (api*.cpp): the thread-local message mw_last_error() returns, and the
// one place where library exceptions become status codes.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "base/error.h"
#include "memwall.h"

namespace mw {

// Sets the message mw_last_error() returns on this thread (defined in api.cpp).
void set_api_last_error(const std::string& message);

inline mw_status status_of(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::invalid_argument:
            return MW_ERR_INVALID_ARGUMENT;
        case ErrorKind::bad_file:
            return MW_ERR_BAD_FILE;
        case ErrorKind::io:
            return MW_ERR_IO;
        case ErrorKind::unsupported:
            return MW_ERR_UNSUPPORTED;
        case ErrorKind::out_of_memory:
            return MW_ERR_OUT_OF_MEMORY;
        case ErrorKind::context_full:
            return MW_ERR_CONTEXT_FULL;
    }
    return MW_ERR_INTERNAL;
}

// Runs f, turning any exception into a status and this thread's last error message: no exception
// crosses the C API.
template <typename F>
mw_status guarded(F&& f) {
    try {
        f();
        return MW_OK;
    } catch (const Error& e) {
        set_api_last_error(e.what());
        return status_of(e.kind());
    } catch (const std::bad_alloc&) {
        set_api_last_error("out of memory");
        return MW_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_api_last_error(std::string("internal error: ") + e.what());
        return MW_ERR_INTERNAL;
    } catch (...) {
        set_api_last_error("internal error: unknown exception");
        return MW_ERR_INTERNAL;
    }
}

}  // namespace mw
