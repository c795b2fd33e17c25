#include "support/gguf_edit.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "format/gguf.h"
#include "runtime/loaded_model.h"
#include "support/test_support.h"

namespace mw::test {

std::string edited_gguf_copy(const std::string& source, const std::string& name,
                             const std::function<void(gguf::GgufWriter&)>& edit,
                             const std::string& drop_tensor) {
    const std::vector<uint8_t> bytes = read_file(source);
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes, source);
    gguf::GgufWriter w(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key != "general.alignment") w.set_value(kv.key, kv.value);
    }
    for (const gguf::TensorInfo& t : f.tensors()) {
        if (t.name == drop_tensor) continue;
        w.add_tensor(t.name, GgmlType(t.type),
                     std::vector<uint64_t>(t.ne, t.ne + std::max(1u, t.n_dims)),
                     std::span<const uint8_t>(t.data, t.n_bytes));
    }
    edit(w);
    const std::string path = temp_dir() + "/" + name + ".gguf";
    w.write_file(path);  // while `bytes` still backs the copied tensors
    return path;
}

void expect_load_error(const std::string& path, const std::vector<std::string>& says) {
    try {
        LoadedModel::load(path, LoadOptions{});
        ADD_FAILURE() << path << " loaded";
    } catch (const Error& e) {
        for (const std::string& s : says) {
            EXPECT_NE(std::string(e.what()).find(s), std::string::npos)
                << "'" << s << "' not in: " << e.what();
        }
    }
}

}  // namespace mw::test
