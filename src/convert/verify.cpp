#include <cstdio>

#include "base/error.h"
#include "convert/convert.h"
#include "format/gguf.h"
#include "model/model.h"
#include "sys/mapped_file.h"
#include "vocab/vocab.h"

namespace mw::convert {

void verify_written_model(const std::string& path) {
    try {
        const MappedFile file = MappedFile::open(path);
        const gguf::GgufFile gguf = gguf::GgufFile::parse(file.bytes(), path);
        const Model model = Model::bind(gguf);
        const Vocab vocab = Vocab::from_gguf(gguf);
        if (vocab.n_tokens() != int32_t(model.hp.n_vocab)) {
            fail(ErrorKind::bad_file,
                 "{}: the vocabulary has {} tokens but token_embd.weight has {} rows", path,
                 vocab.n_tokens(), model.hp.n_vocab);
        }
    } catch (const Error& e) {
        // A file memwall cannot load is not left behind for someone to try.
        std::remove(path.c_str());
        throw Error(e.kind(), fmt::format("the converted file does not load, so it was removed: {}",
                                          e.what()));
    }
}

}  // namespace mw::convert
