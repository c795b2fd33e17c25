// Every memwall command that opens a model, on a corrupted copy of a tiny valid model, one
// corruption per field: the command must fail (exit status 1), say on stderr which field has
// which value, and neither crash, hang, nor trip a sanitizer (the asan preset builds the CLI with
// ASan and UBSan). Adding a command is one line in kCommands; adding a corruption, one entry in
// corrupted_files().
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "support/tiny_model.h"

namespace mw {
namespace {

// What part of a file a command reads, and so which corruptions it must notice.
enum Reads : unsigned {
    header = 1,  // GGUF header: metadata and tensor infos
    data = 2,    // the tensor data section is there and the weights can be read in place
    vocab = 4,   // tokenizer.ggml.*
    model = 8,   // hyper-parameters and tensor shapes
};

struct Command {
    const char* name;
    const char* args;  // {model} and {out} are replaced
    unsigned reads;
};

// `plan` reads the header alone (a partial download is enough) and plans models it cannot bind
// from their metadata; `tokenize` loads the vocabulary only.
const Command kCommands[] = {
    {"run", "run -m {model} -p 'hi ab' -n 2 -c 16 -t 1 --temp 0", header | data | vocab | model},
    {"tokenize", "tokenize -m {model} -p 'hi ab'", header | data | vocab},
    {"logits", "logits -m {model} -p 'hi ab' -o {out} -t 1", header | data | vocab | model},
    {"plan", "plan -m {model} --device phone-12g", header},  // a profile: nothing measured
    {"bench", "bench -m {model} -p 4 -n 2 -r 1 -t 1 --no-bandwidth", header | data | vocab | model},
    {"perplexity", "perplexity -m {model} -f {text} -c 8 -b 8 -t 1", header | data | vocab | model},
    // quantize copies the metadata it does not interpret (vocabulary, hyper-parameters) as it is,
    // and reads the weights without the binder's alignment rule.
    {"quantize", "quantize {model} {out}.gguf Q8_0", header | data},
    // verify checks everything the loader does, and says which check failed.
    {"verify", "verify {model}", header | data | vocab | model},
};

// The command line of `cmd` on the model at `path`, writing into `dir`.
std::string command_line(const Command& cmd, const std::string& path, const std::string& dir) {
    std::string line = cmd.args;
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"{model}", path},
                                     {"{out}", dir + "/out"},
                                     {"{text}", dir + "/text.txt"}}) {
        for (size_t at = line.find(key); at != std::string::npos; at = line.find(key, at)) {
            line.replace(at, key.size(), value);
            at += value.size();
        }
    }
    return line;
}

// perplexity's text: enough tokens for two chunks of 8.
void write_text(const std::string& dir) {
    std::ofstream(dir + "/text.txt") << "hi ab hi ab ab hi hi ab ab ab hi hi ab hi ab ab hi ab hi "
                                        "ab hi ab ab hi hi ab ab ab hi hi ab hi ab ab hi ab\n";
}

struct Corrupted {
    std::string name;
    std::vector<uint8_t> bytes;
    Reads layer;                       // who must notice
    std::vector<std::string> message;  // what stderr must say (field and value)
};

std::vector<uint8_t> valid_model() {
    return test::tiny_model_bytes({});
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
    std::memcpy(b.data() + at, &v, 4);
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
    std::memcpy(b.data() + at, &v, 8);
}

// The position just after the first occurrence of the length-prefixed string `s`.
size_t after_string(const std::vector<uint8_t>& b, const std::string& s) {
    std::vector<uint8_t> needle(8);
    const uint64_t n = s.size();
    std::memcpy(needle.data(), &n, 8);
    needle.insert(needle.end(), s.begin(), s.end());
    const auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
    EXPECT_NE(it, b.end()) << s;
    return size_t(it - b.begin()) + needle.size();
}

// A valid model with one thing changed by the writer.
std::vector<uint8_t> written(const std::function<void(gguf::GgufWriter&)>& change,
                             const test::TinyModel& spec = {}) {
    gguf::GgufWriter w = test::tiny_model_writer(spec);
    change(w);
    return w.to_bytes();
}

// A valid F16 model with general.alignment = 1 whose data section starts at an address no
// weight may be read from (not a multiple of 4).
std::vector<uint8_t> misaligned_model() {
    std::vector<uint8_t> bytes;
    for (size_t pad = 0; pad < 8; ++pad) {
        bytes = written([&](auto& w) { w.set_string("x.pad", std::string(pad, 'p')); },
                        {.type = GgmlType::F16, .alignment = 1});
        if (gguf::GgufFile::parse(bytes, "x").data_offset() % 4 != 0) break;
    }
    return bytes;
}

// A valid model with bytes changed at a position found in it.
std::vector<uint8_t> patched(const std::function<void(std::vector<uint8_t>&)>& change) {
    std::vector<uint8_t> b = valid_model();
    change(b);
    return b;
}

std::vector<Corrupted> corrupted_files() {
    const std::string q = "blk.0.attn_q.weight";
    const uint32_t n_tokens = test::tiny_vocab_size(test::TinyVocab::spm);
    std::vector<Corrupted> c;
    // ---- GGUF header ----
    c.push_back({"magic",
                 patched([](auto& b) { put_u32(b, 0, 0x12345678); }),
                 header,
                 {"header.magic", "0x12345678"}});
    c.push_back(
        {"version", patched([](auto& b) { put_u32(b, 4, 4); }), header, {"header.version = 4"}});
    c.push_back({"tensor_count",
                 patched([](auto& b) { put_u64(b, 8, 1ull << 40); }),
                 header,
                 {"header.tensor_count = 1099511627776"}});
    c.push_back({"kv_count",
                 patched([](auto& b) { put_u64(b, 16, ~0ull); }),
                 header,
                 {"header.metadata_kv_count = 18446744073709551615"}});
    c.push_back({"key_length",
                 patched([](auto& b) { put_u64(b, 24, 1ull << 33); }),
                 header,
                 {"metadata[0].key has length 8589934592"}});
    c.push_back({"value_type",
                 patched([](auto& b) { put_u32(b, after_string(b, "llama.block_count"), 13); }),
                 header,
                 {"\"llama.block_count\" has unknown value type 13"}});
    c.push_back({"array_length",
                 patched([](auto& b) {
                     put_u64(b, after_string(b, "tokenizer.ggml.tokens") + 8, 1ull << 50);
                 }),
                 header,
                 {"\"tokenizer.ggml.tokens\" claims 1125899906842624"}});
    c.push_back({"string_length",
                 patched([](auto& b) {
                     put_u64(b, after_string(b, "general.architecture") + 4, 1ull << 45);
                 }),
                 header,
                 {"\"general.architecture\" has length 35184372088832"}});
    c.push_back({"n_dims",
                 patched([&](auto& b) { put_u32(b, after_string(b, q), 5); }),
                 header,
                 {"tensor \"" + q + "\" has n_dims = 5"}});
    c.push_back({"dimension",
                 patched([&](auto& b) { put_u64(b, after_string(b, q) + 4 + 8, 0); }),
                 header,
                 {"tensor \"" + q + "\" has ne[1] = 0"}});
    c.push_back({"dimension_overflow",
                 patched([&](auto& b) { put_u64(b, after_string(b, q) + 4 + 8, 1ull << 62); }),
                 header,
                 {"tensor \"" + q + "\" has ne[1] = 4611686018427387904"}});
    c.push_back({"tensor_type",
                 patched([&](auto& b) { put_u32(b, after_string(b, q) + 4 + 16, 4); }),
                 header,
                 {"tensor \"" + q + "\" has unknown type id 4"}});
    c.push_back({"offset",
                 patched([&](auto& b) { put_u64(b, after_string(b, q) + 4 + 16 + 4, 33); }),
                 header,
                 {"tensor \"" + q + "\" has offset 33"}});
    c.push_back({"offset_beyond_file",
                 patched([&](auto& b) { put_u64(b, after_string(b, q) + 4 + 16 + 4, 1ull << 40); }),
                 Reads(data),
                 {"tensor \"" + q + "\" data", "lies outside the file"}});
    c.push_back({"alignment",
                 written([](auto& w) { w.set_u32("general.alignment", 48); }),
                 header,
                 {"general.alignment = 48", "not a power of two"}});
    c.push_back({"truncated",
                 patched([](auto& b) { b.erase(b.end() - 100, b.end()); }),
                 Reads(data),
                 {"lies outside the file"}});
    c.push_back({"misaligned_weights",
                 misaligned_model(),
                 Reads(model),
                 {"is not aligned to 4 bytes", "general.alignment = 1"}});
    // ---- vocabulary ----
    c.push_back({"tokenizer_model",
                 written([](auto& w) { w.set_string("tokenizer.ggml.model", "nonsense"); }),
                 Reads(vocab),
                 {"tokenizer.ggml.model", "\"nonsense\""}});
    c.push_back({"tokens_empty",
                 written([](auto& w) { w.set_array_strings("tokenizer.ggml.tokens", {}); }),
                 Reads(vocab),
                 {"tokenizer.ggml.tokens\" is empty"}});
    c.push_back({"scores_count",
                 written([](auto& w) {
                     w.set_array_f32("tokenizer.ggml.scores", std::vector<float>{0, 0, 0});
                 }),
                 Reads(vocab),
                 {"tokenizer.ggml.scores\" has 3 entries for " + std::to_string(n_tokens)}});
    c.push_back({"token_type_float",
                 written([&](auto& w) {
                     w.set_array_f32("tokenizer.ggml.token_type", std::vector<float>(n_tokens, 1));
                 }),
                 Reads(vocab),
                 {"tokenizer.ggml.token_type\" [0]", "not an integer"}});
    c.push_back({"bos_id",
                 written([](auto& w) { w.set_u32("tokenizer.ggml.bos_token_id", 999); }),
                 Reads(vocab),
                 {"tokenizer.ggml.bos_token_id\" = 999 is not a token id"}});
    // ---- hyper-parameters and shapes ----
    c.push_back({"head_count_zero",
                 written([](auto& w) { w.set_u32("llama.attention.head_count", 0); }),
                 Reads(model),
                 {"attention.head_count = 0 is out of range"}});
    c.push_back({"head_count_kv",
                 written([](auto& w) { w.set_u32("llama.attention.head_count_kv", 3); }),
                 Reads(model),
                 {"attention.head_count_kv = 3 is out of range"}});
    c.push_back({"block_count_huge",
                 written([](auto& w) { w.set_u32("llama.block_count", 4000000); }),
                 Reads(model),
                 {"block_count = 4000000"}});
    c.push_back({"block_count_4096",
                 written([](auto& w) { w.set_u32("llama.block_count", 4096); }),
                 Reads(model),
                 {"block_count = 4096 needs at least 36864 tensors"}});
    c.push_back({"embedding_length",
                 written([](auto& w) { w.set_u32("llama.embedding_length", 24); }),
                 Reads(model),
                 {"token_embd.weight has shape [16, 16], expected [24, 16]"}});
    c.push_back({"context_length_zero",
                 written([](auto& w) { w.set_u32("llama.context_length", 0); }),
                 Reads(model),
                 {"context_length = 0 is out of range"}});
    c.push_back({"rope_dimension_odd",
                 written([](auto& w) { w.set_u32("llama.rope.dimension_count", 3); }),
                 Reads(model),
                 {"rope.dimension_count = 3"}});
    c.push_back({"norm_eps_negative",
                 written([](auto& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", -1); }),
                 Reads(model),
                 {"layer_norm_rms_epsilon = -1"}});
    c.push_back({"expert_used_count",
                 written([](auto& w) { w.set_u32("qwen3moe.expert_used_count", 9); },
                         {.arch = "qwen3moe", .n_expert = 4}),
                 Reads(model),
                 {"expert_used_count = 9 is out of range [1, 4]"}});
    c.push_back({"architecture",
                 written([](auto& w) { w.set_string("general.architecture", "gpt-j"); }),
                 Reads(model),
                 {"general.architecture = \"gpt-j\" is not supported"}});
    c.push_back({"vocab_vs_embedding",
                 written([&](auto& w) {
                     std::vector<std::string> tokens;
                     for (uint32_t i = 0; i + 1 < n_tokens; ++i)
                         tokens.push_back(fmt::format("t{}", i));
                     w.set_array_strings("tokenizer.ggml.tokens", tokens);
                     w.remove("tokenizer.ggml.scores");
                     w.remove("tokenizer.ggml.token_type");
                 }),
                 Reads(model),
                 {"token_embd.weight has shape [16, 16], expected [16, " +
                  std::to_string(n_tokens - 1) + "]"}});
    return c;
}

TEST(CliCorrupt, ValidModelRunsWithEveryCommand) {
    // The corruptions below are one change away from this file: it must work everywhere.
    const std::string dir = test::temp_dir();
    const std::string path = dir + "/valid.gguf";
    const std::vector<uint8_t> bytes = valid_model();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    write_text(dir);
    for (const Command& cmd : kCommands) {
        const std::string line = command_line(cmd, path, dir);
        const test::CommandResult r =
            test::run_command("timeout 60 " + test::cli_path() + " " + line);
        EXPECT_EQ(r.exit_code, 0) << cmd.name << ": " << r.err;
    }
}

TEST(CliCorrupt, EveryCommandRejectsEveryCorruptedField) {
    const std::string dir = test::temp_dir();
    write_text(dir);
    for (const Corrupted& file : corrupted_files()) {
        const std::string path = dir + "/" + file.name + ".gguf";
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(file.bytes.data()),
                   std::streamsize(file.bytes.size()));
        for (const Command& cmd : kCommands) {
            SCOPED_TRACE(std::string(cmd.name) + " on " + file.name);
            const std::string line = command_line(cmd, path, dir);
            const test::CommandResult r =
                test::run_command("timeout 60 " + test::cli_path() + " " + line);
            // No crash, hang or sanitizer report, whether or not the command must notice.
            EXPECT_NE(r.exit_code, 124) << "timed out";
            EXPECT_LT(r.exit_code, 2) << r.err;
            for (const char* report :
                 {"Sanitizer", "runtime error:", "internal error", "out of memory"}) {
                EXPECT_EQ(r.err.find(report), std::string::npos) << r.err;
            }
            if (!(cmd.reads & file.layer)) continue;
            EXPECT_EQ(r.exit_code, 1) << "accepted: " << r.out << r.err;
            EXPECT_NE(r.err.find(path), std::string::npos) << "the file is not named: " << r.err;
            for (const std::string& part : file.message) {
                EXPECT_NE(r.err.find(part), std::string::npos)
                    << "stderr lacks \"" << part << "\": " << r.err;
            }
        }
    }
}

}  // namespace
}  // namespace mw
