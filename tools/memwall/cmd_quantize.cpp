// memwall quantize: a model file to another type, with llama-quantize's arguments and per-tensor
// rules (Q4_K_M etc.); memwall imatrix: the activation statistics quantize --imatrix weighs the
// error with (llama-imatrix's file format).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common.h"

namespace cli {
namespace {

struct Display {
    bool terminal = false;
    bool verbose = false;  // every note and, off a terminal, a line per tensor
    int last_tenth = -1;   // off a terminal: the last tenth of the input reported
    // Fallback types by (wanted, used, row length): one summary line at the end.
    std::map<std::tuple<std::string, std::string>, std::vector<std::string>> fallbacks;
};

double mib(uint64_t bytes) {
    return double(bytes) / (1 << 20);
}

// A live bar on a terminal; off a terminal a plain line per tenth of the input (per tensor with
// --verbose). Fallback types are counted for one summary line (listed with --verbose); other
// notes go to stderr on their own line.
void on_progress(const mw_quantize_progress* p, void* user_data) {
    auto& d = *static_cast<Display*>(user_data);
    if (p->note) {
        if (p->wanted_type) {
            d.fallbacks[{p->wanted_type, p->to_type}].push_back(p->tensor_name);
            if (!d.verbose) return;
        }
        fmt::print(stderr, "{}note: {}\n", d.terminal ? "\r\033[K" : "", p->note);
        return;
    }
    const double rate = p->elapsed_s > 0 ? mib(p->bytes_done) / p->elapsed_s : 0.0;
    const std::string change = std::string(p->from_type) == p->to_type
                                   ? fmt::format("{} (kept)", p->to_type)
                                   : fmt::format("{} -> {}", p->from_type, p->to_type);
    if (d.terminal) {
        constexpr int kBar = 24;
        const int filled =
            p->bytes_total ? int(double(p->bytes_done) / double(p->bytes_total) * kBar) : kBar;
        fmt::print(stderr, "\r\033[K[{}{}] {}/{} {:.0f} MB/s  {} {}",
                   std::string(size_t(filled), '#'), std::string(size_t(kBar - filled), '.'),
                   p->tensor_index, p->n_tensors, rate, p->tensor_name, change);
        if (p->tensor_index == p->n_tensors) fmt::print(stderr, "\n");
    } else {
        const int tenth =
            p->bytes_total ? int(10.0 * double(p->bytes_done) / double(p->bytes_total)) : 10;
        if (!d.verbose && tenth == d.last_tenth && p->tensor_index != p->n_tensors) return;
        d.last_tenth = tenth;
        fmt::print(
            stderr, "[{}/{}] {:3d} %  {} {}  {:.0f} MB/s\n", p->tensor_index, p->n_tensors,
            p->bytes_total ? int(100.0 * double(p->bytes_done) / double(p->bytes_total)) : 100,
            p->tensor_name, change, rate);
    }
}

// "145 tensors fell back for their row length: 120 Q4_K -> Q5_0, 25 Q6_K -> Q8_0".
void print_fallbacks(const Display& d) {
    if (d.fallbacks.empty()) return;
    size_t total = 0;
    std::string kinds;
    for (const auto& [types, names] : d.fallbacks) {
        total += names.size();
        kinds += fmt::format("{}{} {} -> {}", kinds.empty() ? "" : ", ", names.size(),
                             std::get<0>(types), std::get<1>(types));
    }
    fmt::print(stderr,
               "{} tensor{} fell back to another type (rows not a multiple of the block size): "
               "{}{}\n",
               total, total == 1 ? "" : "s", kinds, d.verbose ? "" : " (--verbose lists them)");
}

void on_chunk(const mw_imatrix_progress* p, void* user_data) {
    const auto& d = *static_cast<const Display*>(user_data);
    const std::string line =
        fmt::format("[{}/{}] PPL {:.4f}  {:.1f} s", p->chunk, p->n_chunks, p->ppl, p->elapsed_s);
    if (d.terminal) {
        fmt::print(stderr, "\r\033[K{}", line);
        if (p->chunk == p->n_chunks) fmt::print(stderr, "\n");
    } else {
        fmt::print(stderr, "{}\n", line);
    }
}

}  // namespace

void add_quantize_command(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("quantize", "Quantize a model file (llama-quantize's types and rules)");
    struct Options {
        std::string in, out, type;
        std::string imatrix;
        bool pure = false;
        bool allow_requantize = false;
        std::vector<std::string> tensor_types;
        int threads = 0;
        bool thorough = false;
        bool verbose = false;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("input", opt->in, "The model to quantize (GGUF, F32/F16/BF16 for best results)")
        ->required();
    cmd->add_option("output", opt->out, "The GGUF file to write")->required();
    cmd->add_option("type", opt->type,
                    "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, "
                    "Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K")
        ->required();
    cmd->add_option(
        "--imatrix", opt->imatrix,
        "Importance matrix (from memwall imatrix or llama-imatrix): weigh each column's "
        "error by its activations");
    cmd->add_flag("--pure", opt->pure, "Every quantizable tensor gets the type's base type");
    cmd->add_flag("--allow-requantize", opt->allow_requantize,
                  "Accept input tensors that are already quantized");
    cmd->add_option("--tensor-type", opt->tensor_types,
                    "PATTERN=TYPE: tensors whose name matches the regex get TYPE (e.g. "
                    "attn_v=q8_0); repeatable, the last match wins");
    cmd->add_option("-t,--threads", opt->threads, "Threads (default: physical performance cores)");
    cmd->add_flag("--thorough", opt->thorough,
                  "Search the scales exactly: several times slower, 0.3 % to 1.5 % lower RMSE "
                  "(default: the fast search, no less accurate than llama-quantize)");
    cmd->add_flag("-v,--verbose", opt->verbose,
                  "List every note (each fallback type) and, when not on a terminal, every tensor");
    cmd->callback([opt] {
        std::vector<const char*> tensor_types;
        for (const std::string& s : opt->tensor_types) tensor_types.push_back(s.c_str());
        Display display;
        display.terminal = isatty(STDERR_FILENO) != 0;
        display.verbose = opt->verbose;
        mw_quantize_params params = mw_quantize_default_params();
        params.type = opt->type.c_str();
        params.imatrix_path = opt->imatrix.empty() ? nullptr : opt->imatrix.c_str();
        params.pure = opt->pure;
        params.allow_requantize = opt->allow_requantize;
        params.tensor_types = tensor_types.data();
        params.n_tensor_types = int32_t(tensor_types.size());
        params.n_threads = cap_threads(opt->threads);
        params.progress = on_progress;
        params.user_data = &display;
        params.thorough = opt->thorough;
        mw_quantize_result r;
        const mw_status st = mw_quantize(opt->in.c_str(), opt->out.c_str(), &params, &r);
        if (st != MW_OK) fail_status(st, "quantize");
        print_fallbacks(display);
        fmt::print("quantize: {} tensors, {} quantized{}{}, {:.2f} s ({:.0f} MB/s of input)\n",
                   r.n_tensors, r.n_quantized,
                   r.n_fallback ? fmt::format(", {} with a fallback type", r.n_fallback) : "",
                   r.n_with_imatrix ? fmt::format(", {} with the imatrix", r.n_with_imatrix) : "",
                   r.seconds, r.seconds > 0 ? mib(r.in_file_bytes) / r.seconds : 0.0);
        fmt::print(
            "size: {:.2f} MiB ({:.2f} bits per weight) -> {:.2f} MiB ({:.2f} bits per weight)\n",
            mib(r.in_file_bytes), r.in_bits_per_weight, mib(r.out_file_bytes),
            r.out_bits_per_weight);
        fmt::print("wrote {}\n", opt->out);
    });
}

void add_imatrix_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "imatrix", "Collect activation statistics over a text for quantize --imatrix");
    struct Options {
        ModelOptions model;
        std::string file, out = "imatrix.gguf";
        uint32_t n_ctx = 512;
        int32_t chunks = 0;
        int threads = 0;
        bool process_output = false;
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    cmd->add_option("-f,--file", opt->file, "The calibration text")->required();
    cmd->add_option("-o,--output", opt->out, "The imatrix file to write (GGUF)");
    cmd->add_option("-c,--ctx-size", opt->n_ctx, "Tokens per chunk");
    cmd->add_option("--chunks", opt->chunks, "At most this many chunks (0: all)");
    cmd->add_option("-t,--threads", opt->threads, "Threads (0: physical performance cores)");
    cmd->add_flag("--process-output", opt->process_output, "Also collect output.weight");
    cmd->callback([opt] {
        PromptOptions text_file;
        text_file.file = opt->file;
        const std::string text = text_file.read();
        Display display;
        display.terminal = isatty(STDERR_FILENO) != 0;
        mw_imatrix_params params = mw_imatrix_default_params();
        params.n_ctx = opt->n_ctx;
        params.n_chunks = opt->chunks;
        params.n_threads = cap_threads(opt->threads);
        params.process_output = opt->process_output;
        params.dataset = opt->file.c_str();
        params.progress = on_chunk;
        params.user_data = &display;
        const mw_status st = mw_imatrix(opt->model.path.c_str(), text.data(), text.size(),
                                        opt->out.c_str(), &params);
        if (st != MW_OK) fail_status(st, "imatrix");
        fmt::print("wrote {}\n", opt->out);
    });
}

}  // namespace cli
