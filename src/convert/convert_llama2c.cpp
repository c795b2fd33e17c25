// llama2.c checkpoint + tokenizer.bin -> GGUF, with the tensor names, order and bytes of
// llama.cpp's convert-llama2c-to-ggml (F32 tensors stay byte-identical).
//
// Checkpoint (llama2.c's legacy export, all little-endian): seven int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size means the classifier
// is stored separately), then float32 arrays: token embedding [vocab][dim], attention norms
// [layer][dim], wq [layer][dim][dim], wk and wv [layer][kv_dim][dim], wo [layer][dim][dim], FFN
// norms [layer][dim], w1 [layer][hidden][dim], w2 [layer][dim][hidden], w3 [layer][hidden][dim],
// the final norm [dim], the RoPE tables freq_cis_real and freq_cis_imag [seq_len][head_size / 2]
// (unused: GGUF readers compute RoPE), and the classifier [vocab][dim] when not shared. llama2.c
// applies RoPE to adjacent pairs, as GGUF does, so Q and K need no reordering.
#include <cctype>
#include <cstring>

#include "base/error.h"
#include "convert/convert.h"
#include "convert/hf_vocab.h"
#include "format/gguf_writer.h"
#include "sys/mapped_file.h"

namespace mw::convert {
namespace {

constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": llama2.c's newer export formats

struct Llama2cHeader {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

Llama2cHeader read_header(std::span<const uint8_t> bytes, const std::string& path) {
    if (bytes.size() < 28) {
        fail(ErrorKind::bad_file, "{}: {} bytes, too short for a llama2.c header (28 bytes)", path,
             bytes.size());
    }
    uint32_t magic;
    std::memcpy(&magic, bytes.data(), 4);
    if (magic == kVersionedMagic) {
        int32_t version;
        std::memcpy(&version, bytes.data() + 4, 4);
        fail(ErrorKind::unsupported,
             "{}: a llama2.c version-{} export (magic \"ak42\"); memwall converts the legacy "
             "version-0 format (export.py --version 0)",
             path, version);
    }
    Llama2cHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    const std::pair<const char*, int32_t> fields[] = {
        {"dim", h.dim},         {"hidden_dim", h.hidden_dim}, {"n_layers", h.n_layers},
        {"n_heads", h.n_heads}, {"n_kv_heads", h.n_kv_heads}, {"seq_len", h.seq_len}};
    const int32_t limits[] = {1 << 17, 1 << 20, 4096, 4096, 4096, 1 << 24};
    for (size_t i = 0; i < 6; ++i) {
        if (fields[i].second < 1 || fields[i].second > limits[i]) {
            fail(ErrorKind::bad_file, "{}: header field {} = {} is out of range [1, {}]", path,
                 fields[i].first, fields[i].second, limits[i]);
        }
    }
    if (h.vocab_size == 0 || h.vocab_size < -(1 << 24) || h.vocab_size > (1 << 24)) {
        fail(ErrorKind::bad_file, "{}: header field vocab_size = {} is out of range", path,
             h.vocab_size);
    }
    if (h.n_kv_heads > h.n_heads || h.n_heads % h.n_kv_heads != 0) {
        fail(ErrorKind::bad_file, "{}: n_kv_heads = {} does not divide n_heads = {}", path,
             h.n_kv_heads, h.n_heads);
    }
    if (h.dim % h.n_heads != 0 || (h.dim / h.n_heads) % 2 != 0) {
        fail(ErrorKind::bad_file, "{}: dim = {} is not n_heads = {} times an even head size", path,
             h.dim, h.n_heads);
    }
    return h;
}

// The tokenizer.bin pieces: llama2.c writes " " where SentencePiece has "▁", and BOS/EOS as
// "\n<s>\n" / "\n</s>\n".
GgufVocab read_tokenizer(std::span<const uint8_t> bytes, const std::string& path,
                         uint32_t n_vocab) {
    size_t pos = 0;
    auto take = [&](size_t n, const char* what, uint32_t id) {
        if (n > bytes.size() - pos) {
            fail(ErrorKind::bad_file,
                 "{}: truncated at token {} of {}: its {} needs {} bytes at "
                 "offset {}, {} are left",
                 path, id, n_vocab, what, n, pos, bytes.size() - pos);
        }
        const uint8_t* p = bytes.data() + pos;
        pos += n;
        return p;
    };
    GgufVocab v;
    v.model = "llama";
    v.pre = "default";
    int32_t max_token_length;
    std::memcpy(&max_token_length, take(4, "max_token_length", 0), 4);
    if (max_token_length < 1) {
        fail(ErrorKind::bad_file, "{}: max_token_length = {} must be positive", path,
             max_token_length);
    }
    for (uint32_t id = 0; id < n_vocab; ++id) {
        float score;
        int32_t length;
        std::memcpy(&score, take(4, "score", id), 4);
        std::memcpy(&length, take(4, "length", id), 4);
        if (length < 0 || score != score) {
            fail(ErrorKind::bad_file, "{}: token {} has {} = {}", path, id,
                 length < 0 ? "length" : "score", length < 0 ? double(length) : double(score));
        }
        std::string text(reinterpret_cast<const char*>(take(size_t(length), "text", id)),
                         size_t(length));
        if (text == "\n<s>\n" || text == "\n</s>\n") text = text.substr(1, text.size() - 2);
        std::string piece;
        for (const char ch : text)
            piece += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
        int32_t type = token_normal;
        if (piece == "<unk>") {
            type = token_unknown;
            v.set_special_id("unknown", id);
        } else if (piece == "<s>" || piece == "</s>") {
            type = token_control;
            v.set_special_id(piece == "<s>" ? "bos" : "eos", id);
        } else if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>' &&
                   std::isxdigit(static_cast<unsigned char>(piece[3])) &&
                   std::isxdigit(static_cast<unsigned char>(piece[4]))) {
            type = token_byte;
        }
        v.tokens.push_back(std::move(piece));
        v.scores.push_back(score);
        v.types.push_back(type);
    }
    if (pos != bytes.size()) {
        fail(ErrorKind::bad_file,
             "{}: {} bytes follow the {} tokens the checkpoint's vocab_size "
             "asks for (is it the tokenizer of another model?)",
             path, bytes.size() - pos, n_vocab);
    }
    return v;
}

}  // namespace

ConvertResult convert_llama2c(const std::string& checkpoint, const std::string& tokenizer,
                              const std::string& out_path, const ConvertOptions& options) {
    const MappedFile ck = MappedFile::open(checkpoint);
    const std::span<const uint8_t> bytes = ck.bytes();
    const Llama2cHeader h = read_header(bytes, checkpoint);
    const bool shared_classifier = h.vocab_size > 0;
    const uint64_t V = uint64_t(shared_classifier ? h.vocab_size : -int64_t(h.vocab_size));
    const uint64_t D = uint64_t(h.dim), F = uint64_t(h.hidden_dim), L = uint64_t(h.n_layers);
    const uint64_t head = D / uint64_t(h.n_heads), KV = head * uint64_t(h.n_kv_heads);

    // Sections in file order: {element count, GGUF use}.
    uint64_t offset = 28;
    auto section = [&](uint64_t n) {
        const uint64_t at = offset;
        offset += n * 4;
        return at;
    };
    const uint64_t emb = section(V * D), att_norm = section(L * D), wq = section(L * D * D),
                   wk = section(L * KV * D), wv = section(L * KV * D), wo = section(L * D * D),
                   ffn_norm = section(L * D), w1 = section(L * F * D), w2 = section(L * D * F),
                   w3 = section(L * F * D), final_norm = section(D);
    section(uint64_t(h.seq_len) * head);  // freq_cis_real and freq_cis_imag, [seq_len][head/2] each
    const uint64_t wcls = shared_classifier ? emb : section(V * D);
    if (offset != bytes.size()) {
        fail(ErrorKind::bad_file,
             "{}: {} bytes, but a llama2.c checkpoint with dim {}, hidden_dim {}, {} layers, {} "
             "heads ({} KV), vocab {} ({} classifier) and seq_len {} has {}",
             checkpoint, bytes.size(), D, F, L, h.n_heads, h.n_kv_heads, V,
             shared_classifier ? "shared" : "separate", h.seq_len, offset);
    }

    const MappedFile tok = MappedFile::open(tokenizer, {.use_mmap = false});
    GgufVocab vocab = read_tokenizer(tok.bytes(), tokenizer, uint32_t(V));
    validate_vocab(vocab, tokenizer);

    const OutType out = options.out_type.value_or(OutType::f32);
    gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", options.name.empty() ? "llama" : options.name);
    w.set_u32("llama.context_length", uint32_t(h.seq_len));
    w.set_u32("llama.embedding_length", uint32_t(D));
    w.set_u32("llama.feed_forward_length", uint32_t(F));
    w.set_u32("llama.attention.head_count", uint32_t(h.n_heads));
    w.set_u32("llama.attention.head_count_kv", uint32_t(h.n_kv_heads));
    w.set_u32("llama.block_count", uint32_t(L));
    w.set_u32("llama.rope.dimension_count", uint32_t(head));
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("general.file_type", file_type_of(out));
    write_vocab(w, vocab);

    ConvertResult result;
    result.arch = "llama";
    result.n_vocab = uint32_t(V);
    std::vector<OutputTensor> tensors;
    auto add = [&](const std::string& name, uint64_t at, std::vector<uint64_t> shape) {
        SourceTensor src;
        src.name = name;
        src.file = checkpoint;
        src.data = bytes.data() + at;
        src.dtype = SourceDtype::F32;
        src.shape = shape;
        OutputTensor t;
        t.name = name;
        t.ne.assign(shape.rbegin(), shape.rend());
        t.type = choose_type(out, name, shape.size(), t.ne[0]);
        t.parts.push_back(std::move(src));
        tensors.push_back(std::move(t));
    };
    add("token_embd.weight", emb, {V, D});
    add("output_norm.weight", final_norm, {D});
    add("output.weight", wcls, {V, D});
    for (uint64_t l = 0; l < L; ++l) {
        const std::string p = fmt::format("blk.{}.", l);
        add(p + "attn_q.weight", wq + l * D * D * 4, {D, D});
        add(p + "attn_k.weight", wk + l * KV * D * 4, {KV, D});
        add(p + "attn_v.weight", wv + l * KV * D * 4, {KV, D});
        add(p + "attn_output.weight", wo + l * D * D * 4, {D, D});
        add(p + "attn_norm.weight", att_norm + l * D * 4, {D});
        add(p + "ffn_gate.weight", w1 + l * F * D * 4, {F, D});
        add(p + "ffn_down.weight", w2 + l * D * F * 4, {D, F});
        add(p + "ffn_up.weight", w3 + l * F * D * 4, {F, D});
        add(p + "ffn_norm.weight", ffn_norm + l * D * 4, {D});
    }
    for (const OutputTensor& t : tensors) {
        add_output_tensor(w, t);
        result.n_params += t.n_elements();
    }
    result.n_tensors = tensors.size();
    result.file_bytes = w.total_bytes();
    w.write_file(out_path, [&](size_t done, size_t total) {
        if (options.on_tensor) options.on_tensor(done, total, tensors[done - 1].name);
    });
    verify_written_model(out_path);
    return result;
}

}  // namespace mw::convert
