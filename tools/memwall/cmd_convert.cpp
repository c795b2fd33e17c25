// memwall convert: a Hugging Face model folder (or a llama2.c checkpoint) to GGUF, natively.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "common.h"

namespace cli {
namespace {

struct ConvertProgress {
    bool terminal = false;
    int32_t last_decile = -1;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// A live line on a terminal; otherwise a plain line every tenth of the tensors.
void on_tensor(int32_t done, int32_t total, const char* tensor, void* user_data) {
    auto& p = *static_cast<ConvertProgress*>(user_data);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start).count();
    if (p.terminal) {
        fmt::print(stderr, "\r\033[Kconvert: [{}/{}] {} ({:.1f} s)", done, total, tensor, s);
        if (done == total) fmt::print(stderr, "\n");
        return;
    }
    const int32_t decile = total > 0 ? done * 10 / total : 10;
    if (decile != p.last_decile) {
        p.last_decile = decile;
        fmt::print(stderr, "convert: {}/{} tensors written ({:.1f} s)\n", done, total, s);
    }
}

}  // namespace

void add_convert_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "convert", "Convert a Hugging Face model folder or a llama2.c checkpoint to GGUF");
    struct Options {
        std::string hf_dir;
        std::string llama2c;
        std::string tokenizer;
        std::string out;
        std::string outtype;
        std::string vocab_pre;
        std::string name;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("hf_dir", opt->hf_dir,
                    "Hugging Face model folder: config.json, model*.safetensors, tokenizer files");
    cmd->add_option("--llama2c", opt->llama2c, "A llama2.c checkpoint (.bin) instead of a folder");
    cmd->add_option("--tokenizer", opt->tokenizer, "The llama2.c tokenizer (tokenizer.bin)");
    cmd->add_option("-o,--output", opt->out, "Output GGUF file")->required();
    cmd->add_option("--outtype", opt->outtype,
                    "Type of the weight matrices: f32, f16, bf16, q8_0 (default: f16; f32 for "
                    "llama2.c)");
    cmd->add_option("--vocab-pre", opt->vocab_pre,
                    "tokenizer.ggml.pre to write when the BPE pre-tokenizer is not recognised");
    cmd->add_option("--name", opt->name, "general.name (default: from the model)");
    cmd->callback([opt] {
        const bool llama2c = !opt->llama2c.empty();
        if (llama2c == !opt->hf_dir.empty()) {
            fail_usage(
                "convert: give either a Hugging Face folder or --llama2c CHECKPOINT --tokenizer "
                "TOK");
        }
        if (llama2c && opt->tokenizer.empty())
            fail_usage("convert: --llama2c needs --tokenizer TOK.bin");
        if (!llama2c && !opt->tokenizer.empty()) {
            fail_usage(
                "convert: --tokenizer is for --llama2c; a folder's tokenizer files are found in "
                "it");
        }
        ConvertProgress progress;
        progress.terminal = isatty(STDERR_FILENO) != 0;
        mw_convert_params params = mw_convert_default_params();
        params.outtype = opt->outtype.empty() ? nullptr : opt->outtype.c_str();
        params.vocab_pre = opt->vocab_pre.empty() ? nullptr : opt->vocab_pre.c_str();
        params.name = opt->name.empty() ? nullptr : opt->name.c_str();
        params.progress = on_tensor;
        params.user_data = &progress;
        mw_convert_result result;
        const mw_status st =
            llama2c ? mw_convert_llama2c(opt->llama2c.c_str(), opt->tokenizer.c_str(),
                                         opt->out.c_str(), &params, &result)
                    : mw_convert_hf(opt->hf_dir.c_str(), opt->out.c_str(), &params, &result);
        if (st != MW_OK) fail_status(st, "convert");
        if (result.warnings[0] != '\0') fmt::print(stderr, "warning: {}", result.warnings);
        fmt::print(stderr,
                   "convert: wrote {}: {} model, {} tensors, {:.2f} M parameters, {} tokens, "
                   "{:.2f} MiB\n",
                   opt->out, result.arch, result.n_tensors, double(result.n_params) / 1e6,
                   result.n_vocab, double(result.file_bytes) / (1 << 20));
    });
}

}  // namespace cli
