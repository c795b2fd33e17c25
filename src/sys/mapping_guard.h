// A model file mapped into memory and then truncated (or rewritten shorter) by another process
// makes every read of a page past its new end raise SIGBUS, which killed the process with no
// message (`run --no-repack`, whose weights are read from the mapping while it runs). A mapping
// registered here turns that into a clear error naming the file and the offset, then exits: the
// read cannot be resumed (the bytes are gone), and unwinding from a signal would leave the
// kernels' threads in an unknown state. A SIGBUS outside every registered mapping goes to the
// handler installed before (or the default one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mw {

// The exit status after such an error (that of the CLI's I/O errors).
inline constexpr int kMappingLostExitCode = 1;

// Registers [begin, begin + size) as the mapping of `path` (installs the handler on first use).
// At most 64 mappings at once; beyond that the mapping is simply not guarded.
void guard_mapping(const uint8_t* begin, size_t size, const std::string& path);
// Forgets the mapping that starts at `begin` (before it is unmapped).
void unguard_mapping(const uint8_t* begin);

}  // namespace mw
