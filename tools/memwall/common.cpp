#include "common.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

namespace cli {

void fail(const std::string& message, int exit_code) {
    throw Failure{message, exit_code};
}

void fail_status(mw_status, const std::string& doing) {
    const std::string why = mw_last_error();
    // The library's message may already start with what was being done ("quantize: ...").
    const bool has_prefix = !doing.empty() && why.rfind(doing + ":", 0) == 0;
    fail(doing.empty() || has_prefix ? why : doing + ": " + why);
}

void ModelOptions::add_to(CLI::App& app, bool required) {
    auto* opt = app.add_option("-m,--model", path, "Model file (GGUF)");
    if (required) opt->required();
    app.add_flag("--mlock", mlock, "Lock the model in RAM (reports plainly if the OS refuses)");
    app.add_flag("--no-mmap", no_mmap, "Read the model into memory instead of mapping it");
    app.add_flag("--no-repack", no_repack,
                 "Keep the weights in the file's layout (all pages stay shared, evictable page "
                 "cache) instead of rewriting them at load for the faster kernels");
}

void ModelOptions::add_gpu_to(CLI::App& app) {
    app.add_option("--n-gpu-layers", n_gpu_layers,
                   "Run the matrix products of the last N layers on the GPU through Vulkan "
                   "(more than the layer count, e.g. 99: the output layer too); what cannot go "
                   "there runs on the CPU, with a warning")
        ->default_val(0)
        ->check(CLI::NonNegativeNumber);
    app.add_option("--main-gpu", main_gpu, "The Vulkan device to use (memwall probe lists them)")
        ->default_val(0)
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--gpu-required", gpu_required,
                 "With -ngl: fail instead of falling back to the CPU for what cannot be offloaded");
    app.add_flag("--gpu-allow-cpu-device", gpu_allow_cpu_device,
                 "With -ngl: offload even to a Vulkan device that is a CPU (llvmpipe/lavapipe, "
                 "~1000x slower than the CPU path; refused with a warning otherwise; also "
                 "MEMWALL_GPU_ALLOW_CPU_DEVICE=1)");
}

void ModelOptions::add_budget_to(CLI::App& app) {
    app.add_option("--mem-budget", mem_budget,
                   "Memory the process may use, its RSS and the page cache of its model reads "
                   "(e.g. 512M, 2G, 1.5GiB): a MoE model keeps its dense part in memory and reads "
                   "experts from storage into a cache of what is left");
    app.add_flag("--ple-resident", ple_resident,
                 "Gemma 4 E2B/E4B: keep the per-layer embedding table in memory instead of on "
                 "storage (by default each token reads its row from the file; also "
                 "MEMWALL_PLE=resident)");
}

mw_expert_cache_stats expert_cache_stats(const mw_model* model) {
    mw_expert_cache_stats s{};
    if (mw_model_expert_cache_stats(model, &s) != MW_OK) s = {};
    return s;
}

mw_expert_cache_stats expert_cache_delta(const mw_expert_cache_stats& later,
                                         const mw_expert_cache_stats& earlier) {
    mw_expert_cache_stats d = later;
    d.acquires -= earlier.acquires;
    d.hits -= earlier.hits;
    d.prefetched -= earlier.prefetched;
    d.waited -= earlier.waited;
    d.misses -= earlier.misses;
    d.bytes_read -= earlier.bytes_read;
    d.predictable -= earlier.predictable;
    d.predicted -= earlier.predicted;
    return d;
}

void print_budget_report(const mw_expert_cache_stats& s, uint64_t n_tokens,
                         uint64_t peak_rss_bytes) {
    if (s.budget_bytes == 0) return;
    const double mib = 1 << 20;
    fmt::print(stderr,
               "memory budget {:.1f} MiB: peak RSS {:.1f} MiB ({:.1f} %), weights resident "
               "{:.1f} MiB\n",
               double(s.budget_bytes) / mib, double(peak_rss_bytes) / mib,
               100.0 * double(peak_rss_bytes) / double(s.budget_bytes),
               double(s.resident_bytes) / mib);
    if (s.n_slots == 0) return;
    const auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * double(a) / double(b) : 0.0; };
    fmt::print(stderr,
               "expert cache: {} of {} experts ({:.1f} MiB); {} used: {} hits ({:.1f} %), {} "
               "prefetched ({:.1f} %), {} waited for a prefetch, {} misses ({:.1f} %)\n",
               s.n_slots, s.experts_total, double(s.n_slots) * double(s.slot_bytes) / mib,
               s.acquires, s.hits, pct(s.hits, s.acquires), s.prefetched,
               pct(s.prefetched, s.acquires), s.waited, s.misses, pct(s.misses, s.acquires));
    fmt::print(stderr, "expert reads: {:.1f} MiB from storage{}{}{}\n", double(s.bytes_read) / mib,
               n_tokens ? fmt::format(", {:.2f} MiB per token",
                                      double(s.bytes_read) / mib / double(n_tokens))
                        : std::string(),
               s.direct_io ? " (O_DIRECT)" : " (pread + DONTNEED)",
               s.predictable ? fmt::format("; the next layer's router, applied one layer early, "
                                           "named {:.1f} % of the experts then used",
                                           pct(s.predicted, s.predictable))
                             : std::string());
}

mw_layer_stream_stats layer_stream_stats(const mw_model* model) {
    mw_layer_stream_stats s{};
    if (mw_model_layer_stream_stats(model, &s) != MW_OK) s = {};
    return s;
}

void add_layer_stream_use(mw_layer_stream_stats& sum, const mw_layer_stream_stats& later,
                          const mw_layer_stream_stats& earlier) {
    mw_layer_stream_stats d = later;
    d.acquires = sum.acquires + later.acquires - earlier.acquires;
    d.hits = sum.hits + later.hits - earlier.hits;
    d.prefetched = sum.prefetched + later.prefetched - earlier.prefetched;
    d.waited = sum.waited + later.waited - earlier.waited;
    d.misses = sum.misses + later.misses - earlier.misses;
    d.bytes_read = sum.bytes_read + later.bytes_read - earlier.bytes_read;
    d.wait_ms = sum.wait_ms + later.wait_ms - earlier.wait_ms;
    sum = d;
}

void print_layer_stream_report(const mw_layer_stream_stats& s, uint64_t n_tokens) {
    if (s.budget_bytes == 0 || s.n_slots == 0) return;
    const double mib = 1 << 20;
    fmt::print(stderr,
               "layer stream: {} of {} layers in memory at once ({:.1f} MiB), {} of them staying; "
               "{} used: {} hits, {} prefetched, {} waited for a prefetch, {} misses\n",
               s.n_slots, s.n_layer, double(s.n_slots) * double(s.slot_bytes) / mib, s.pinned,
               s.acquires, s.hits, s.prefetched, s.waited, s.misses);
    fmt::print(stderr, "layer reads: {:.1f} MiB from storage{}, waited {:.0f} ms{}{}\n",
               double(s.bytes_read) / mib,
               n_tokens ? fmt::format(", {:.2f} MiB per token",
                                      double(s.bytes_read) / mib / double(n_tokens))
                        : std::string(),
               s.wait_ms,
               n_tokens ? fmt::format(" ({:.1f} ms per token)", s.wait_ms / double(n_tokens))
                        : std::string(),
               s.direct_io ? " (O_DIRECT)" : " (pread + DONTNEED)");
}

std::string backend_name(const mw_model* model, const ModelOptions& options) {
    const char* report = mw_model_gpu_report(model);
    if (!report || std::string_view(report).rfind("gpu: none", 0) == 0) return "CPU";
    return fmt::format("Vulkan {}", options.n_gpu_layers);
}

ModelPtr load_model(const ModelOptions& options, bool vocab_only, bool quiet) {
    mw_model_params params = mw_model_default_params();
    if (!options.mem_budget.empty()) {
        params.mem_budget = parse_bytes(options.mem_budget, "--mem-budget");
    }
    params.use_mmap = !options.no_mmap;
    params.use_mlock = options.mlock;
    params.vocab_only = vocab_only;
    params.repack = !options.no_repack;
    params.n_gpu_layers = options.n_gpu_layers;
    params.main_gpu = options.main_gpu;
    params.gpu_required = options.gpu_required;
    params.gpu_allow_cpu_device = options.gpu_allow_cpu_device;
    params.ple_resident = options.ple_resident;
    mw_model* model = nullptr;
    const mw_status st = mw_model_load(options.path.c_str(), &params, &model);
    if (st != MW_OK) fail_status(st, "");
    if (const char* warning = mw_model_warning(model)) {
        fmt::print(stderr, "warning: {}\n", warning);
    }
    if (!quiet) fmt::print(stderr, "model: {}\n", mw_model_desc(model));
    if (const char* report = mw_model_gpu_report(model); report && options.verbose && !quiet) {
        fmt::print(stderr, "{}", report);
    }
    return ModelPtr(model);
}

void warn_context_beyond_training(int32_t n_ctx_train, uint32_t per_sequence, const char* command,
                                  uint32_t n_seq) {
    if (n_ctx_train <= 0 || per_sequence <= uint32_t(n_ctx_train)) return;
    fmt::print(stderr,
               "warning: {}: a context of {} tokens{} is more than the {} the model was trained "
               "on; its output may degrade past {} tokens\n",
               command, per_sequence, n_seq > 1 ? " per slot" : "", n_ctx_train, n_ctx_train);
}

ContextPtr create_context(mw_model* model, const mw_context_params& params) {
    mw_context* ctx = nullptr;
    const mw_status st = mw_context_create(model, &params, &ctx);
    if (st != MW_OK) fail_status(st, "cannot create the context");
    return ContextPtr(ctx);
}

void PromptOptions::add_to(CLI::App& app) {
    auto* p = app.add_option("-p,--prompt", text, "Prompt text");
    auto* f = app.add_option("-f,--file", file, "Read the prompt from a file (- : standard input)");
    p->excludes(f);
}

std::string PromptOptions::read() const {
    if (file.empty()) return text;
    // An empty prompt would generate from the start token alone: refused, as -p "" is.
    if (file == "-") {
        std::stringstream ss;
        ss << std::cin.rdbuf();
        if (std::cin.bad()) fail("-f -: cannot read standard input");
        if (ss.str().empty())
            fail("-f -: standard input is empty: pipe a prompt into it, or give -p TEXT");
        return ss.str();
    }
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec))
        fail(fmt::format("-f {}: is a folder, not a prompt file", file));
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(fmt::format("{}: cannot read the prompt file", file));
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) fail(fmt::format("-f {}: cannot read the prompt file", file));
    if (ss.str().empty()) fail(fmt::format("-f {}: the prompt file is empty", file));
    return ss.str();
}

int cap_threads(int n) {
    const int hardware = int(std::thread::hardware_concurrency());
    if (hardware > 0 && n > hardware) {
        fmt::print(stderr, "warning: -t {}: this machine has {} hardware threads; using {}\n", n,
                   hardware, hardware);
        return hardware;
    }
    return n;
}

int parse_threads(const std::string& text) {
    if (text.empty()) return 0;
    if (text == "auto") return -1;
    try {
        size_t used = 0;
        const int n = std::stoi(text, &used);
        if (used == text.size() && n >= 0 && n <= 1024) return cap_threads(n);
    } catch (const std::exception&) {
    }
    fail_usage(fmt::format("-t {}: expected a thread count (0: the default) or \"auto\"", text));
}

uint64_t parse_bytes(const std::string& text, const char* flag) {
    size_t used = 0;
    double value = -1;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
    }
    std::string unit = text.substr(std::min(used, text.size()));
    if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
    if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
    const std::string units = "KMGT";
    const size_t power = unit.empty() ? 0 : units.find(char(std::toupper((unsigned char)unit[0])));
    if (!(value > 0) || unit.size() > 1 || power == std::string::npos) {
        fail_usage(fmt::format("{} {}: expected a size such as 512M or 1G", flag, text));
    }
    return uint64_t(value * double(uint64_t(1) << (10 * (unit.empty() ? 0 : power + 1))));
}

namespace {

// CLI11 cannot declare multi-letter single-dash flags; main() rewrites -ctk/-ctv before parsing,
// and the help shows them under those names.
class Formatter final : public CLI::Formatter {
  public:
    std::string make_option_name(const CLI::Option* opt, bool positional) const override {
        std::string name = CLI::Formatter::make_option_name(opt, positional);
        if (opt->check_lname("cache-type-k")) return "-ctk," + name;
        if (opt->check_lname("cache-type-v")) return "-ctv," + name;
        if (opt->check_lname("n-gpu-layers")) return "-ngl," + name;
        if (opt->check_lname("main-gpu")) return "-mg," + name;
        return name;
    }
    // A repeatable option's empty list is no default worth showing ("TEXT=[] ...").
    std::string make_option_opts(const CLI::Option* opt) const override {
        std::string opts = CLI::Formatter::make_option_opts(opt);
        if (const size_t at = opts.find("=[]"); at != std::string::npos) opts.erase(at, 3);
        return opts;
    }
};

}  // namespace

std::shared_ptr<CLI::Formatter> help_formatter() {
    return std::make_shared<Formatter>();
}

mw_type parse_kv_type(const std::string& name, const char* flag) {
    if (name == "f32") return MW_TYPE_F32;
    if (name == "f16") return MW_TYPE_F16;
    if (name == "bf16") return MW_TYPE_BF16;
    if (name == "q8_0") return MW_TYPE_Q8_0;
    if (name == "q4_0") return MW_TYPE_Q4_0;
    fail_usage(
        fmt::format("{} {}: unknown KV cache type (f32, f16, bf16, q8_0, q4_0)", flag, name));
}

std::string speed_label(const mw_speed_conditions& conditions) {
    char buf[256];
    const int32_t n = mw_speed_label(&conditions, buf, sizeof buf);
    return n < int32_t(sizeof buf) ? std::string(buf) : std::string(buf, sizeof buf - 1);
}

void SamplingOptions::add_to(CLI::App& app, bool with_seed, bool defaults) {
    const std::string d = defaults ? "Default " : "";
    app.add_option("--temp", temp, d + "temperature (0: greedy)")->capture_default_str();
    app.add_option("--top-k", top_k, d + "top-k (0: off)")->capture_default_str();
    app.add_option("--top-p", top_p, d + "top-p (1: off)")->capture_default_str();
    app.add_option("--min-p", min_p, d + "min-p (0: off)")->capture_default_str();
    app.add_option("--repeat-penalty", repeat_penalty, d + "repetition penalty (1: off)")
        ->capture_default_str();
    app.add_option("--repeat-last-n", repeat_last_n, "Tokens the penalties look back")
        ->capture_default_str();
    if (with_seed) {
        app.add_option("-s,--seed", seed,
                       "Random seed (-1: random; printed so a run can be repeated)")
            ->capture_default_str();
    }
}

mw_sampler_params SamplingOptions::params() const {
    mw_sampler_params p = mw_sampler_default_params();
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.repeat_penalty = repeat_penalty;
    p.repeat_last_n = repeat_last_n;
    p.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
    return p;
}

void KvCacheOptions::add_to(CLI::App& app) {
    app.add_option("--cache-type-k", type_k, "KV cache key type (-ctk): f16, f32, bf16, q8_0, q4_0")
        ->capture_default_str();
    app.add_option("--cache-type-v", type_v, "KV cache value type (-ctv)")->capture_default_str();
}

void KvCacheOptions::apply(mw_context_params& params) const {
    params.type_k = parse_kv_type(type_k, "-ctk");
    params.type_v = parse_kv_type(type_v, "-ctv");
}

void ChatTemplateOptions::add_to(CLI::App& app) {
    app.add_option("--chat-template", text,
                   "Chat template: a built-in name or the template text (default: the file's)");
    app.add_option("--chat-template-file", file, "Read the chat template from a file");
    app.add_option("--chat-template-kwargs", kwargs,
                   "More chat template variables, a JSON object, e.g. '{\"enable_thinking\": "
                   "false}'");
    app.add_option("--reasoning-budget", reasoning_budget,
                   "-1: the model thinks as it likes; 0: no thinking (sets enable_thinking false "
                   "for Qwen3.5, SmolLM3, Gemma 4 templates)")
        ->capture_default_str();
}

std::string ChatTemplateOptions::variables() const {
    nlohmann::json v = nlohmann::json::object();
    if (!kwargs.empty()) {
        v = nlohmann::json::parse(kwargs, nullptr, false);
        if (!v.is_object()) {
            fail_usage(
                fmt::format("--chat-template-kwargs {}: expected a JSON object, e.g. "
                            "'{{\"enable_thinking\": false}}'",
                            kwargs.substr(0, 80)));
        }
    }
    if (reasoning_budget != -1 && reasoning_budget != 0) {
        fail_usage(
            fmt::format("--reasoning-budget {}: only -1 (unrestricted) and 0 (no "
                        "thinking) are supported, as in llama.cpp",
                        reasoning_budget));
    }
    if (reasoning_budget == 0 && !v.contains("enable_thinking")) v["enable_thinking"] = false;
    return v.empty() ? std::string() : v.dump();
}

std::string ChatTemplateOptions::read() const {
    if (file.empty()) return text;
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(fmt::format("--chat-template-file {}: cannot read it", file));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void PacingOptions::add_to(CLI::App& app) {
    app.add_option("--max-temp", max_temp,
                   "Pace to keep the hottest thermal zone at or below this temperature (°C): "
                   "fewer threads, then idle gaps between tokens; recovers when cool");
    app.add_option("--max-tps", max_tps,
                   "Generate at most this many tokens per second, evenly spaced");
    app.add_option("--temp-zone", temp_zone,
                   "--max-temp reads only thermal zones whose type contains this text "
                   "(default: all)");
}

Pacing::Pacing(const PacingOptions& options, bool verbose) : verbose_(verbose) {
    if (!(options.max_temp >= 0))
        fail_usage(fmt::format("--max-temp {}: expected degrees above 0", options.max_temp));
    if (!(options.max_tps >= 0))
        fail_usage(
            fmt::format("--max-tps {}: expected tokens per second above 0", options.max_tps));
    if (!options.enabled()) return;
    mw_pacer_params p = mw_pacer_default_params();
    p.max_temp_c = options.max_temp;
    p.max_tps = options.max_tps;
    p.temp_zone = options.temp_zone.c_str();
    mw_pacer* pacer = nullptr;
    if (mw_status st = mw_pacer_create(&p, &pacer); st != MW_OK) fail_status(st, "pacing");
    pacer_.reset(pacer);
    if (const char* w = mw_pacer_warning(pacer)) fmt::print(stderr, "warning: {}\n", w);
}

void Pacing::after_token(mw_context* ctx) {
    if (!pacer_) return;
    mw_pace pace;
    if (mw_status st = mw_pacer_pace(pacer_.get(), ctx, &pace); st != MW_OK) {
        fail_status(st, "pacing");
    }
    if (verbose_ && pace.changed) fmt::print(stderr, "pacing: {}\n", pace.message);
    std::stringstream warnings(mw_pacer_take_warnings(pacer_.get()));
    for (std::string line; std::getline(warnings, line);) {
        fmt::print(stderr, "warning: {}\n", line);
    }
}

void Pacing::print_summary() {
    if (pacer_) fmt::print(stderr, "pacing:  {}\n", mw_pacer_summary(pacer_.get()));
}

void write_chart(const std::string& document_json, const std::string& path) {
    char* svg = mw_chart_svg(document_json.c_str());
    if (!svg) fail(fmt::format("{}: {}", path, mw_last_error()));
    const std::string text = svg;
    mw_free_string(svg);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) fail(fmt::format("{}: cannot write the chart", path));
}

std::vector<mw_token> tokenize(const mw_model* model, const std::string& text, bool add_special,
                               bool parse_special) {
    if (text.size() > size_t(INT32_MAX)) fail("the text is larger than 2 GiB");
    std::vector<mw_token> tokens(text.size() + 8);
    int32_t n = mw_tokenize(model, text.data(), int32_t(text.size()), tokens.data(),
                            int32_t(tokens.size()), add_special, parse_special);
    if (n == INT32_MIN) fail(fmt::format("tokenize: {}", mw_last_error()));
    if (n < 0) {
        tokens.resize(size_t(-n));
        n = mw_tokenize(model, text.data(), int32_t(text.size()), tokens.data(),
                        int32_t(tokens.size()), add_special, parse_special);
        if (n < 0) fail(fmt::format("tokenize: {}", mw_last_error()));
    }
    tokens.resize(size_t(n));
    return tokens;
}

std::string token_piece(const mw_model* model, mw_token token, bool special) {
    std::string piece(64, '\0');
    int32_t n = mw_token_to_piece(model, token, piece.data(), int32_t(piece.size()), special);
    if (n < 0) {
        piece.resize(size_t(-n));
        n = mw_token_to_piece(model, token, piece.data(), int32_t(piece.size()), special);
    }
    piece.resize(size_t(std::max(n, 0)));
    return piece;
}

}  // namespace cli
