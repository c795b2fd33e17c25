// Shared pieces of the memwall subcommands. The CLI talks to the library only through memwall.h.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memwall.h"

namespace cli {

// Thrown by a subcommand to exit with a message on stderr and a non-zero status.
struct Failure {
    std::string message;
    int exit_code = 1;
};

[[noreturn]] void fail(const std::string& message, int exit_code = 1);
// The exit status of a usage error: the command line itself is wrong (an unknown command or
// option, a missing or invalid value), as command-line tools use.
inline constexpr int kUsageError = 2;
[[noreturn]] inline void fail_usage(const std::string& message) {
    fail(message, kUsageError);
}
// Fails with the library's last error, prefixed by what was being done.
[[noreturn]] void fail_status(mw_status status, const std::string& doing);

struct ModelDeleter {
    void operator()(mw_model* m) const { mw_model_free(m); }
};
struct ContextDeleter {
    void operator()(mw_context* c) const { mw_context_free(c); }
};
struct SamplerDeleter {
    void operator()(mw_sampler* s) const { mw_sampler_free(s); }
};
struct DetokenizerDeleter {
    void operator()(mw_detokenizer* d) const { mw_detokenizer_free(d); }
};
using ModelPtr = std::unique_ptr<mw_model, ModelDeleter>;
using ContextPtr = std::unique_ptr<mw_context, ContextDeleter>;
using SamplerPtr = std::unique_ptr<mw_sampler, SamplerDeleter>;
using DetokenizerPtr = std::unique_ptr<mw_detokenizer, DetokenizerDeleter>;
struct PacerDeleter {
    void operator()(mw_pacer* p) const { mw_pacer_free(p); }
};
using PacerPtr = std::unique_ptr<mw_pacer, PacerDeleter>;

// Options every command that loads a model takes (-m, --mlock, --no-mmap, --no-repack).
struct ModelOptions {
    std::string path;
    bool mlock = false;
    bool no_mmap = false;
    bool no_repack = false;
    std::string mem_budget;     // --mem-budget SIZE (run, chat, serve, bench)
    bool ple_resident = false;  // --ple-resident (run, chat, serve, bench)
    int n_gpu_layers = 0;       // -ngl N
    int main_gpu = 0;           // -mg i
    bool gpu_required = false;
    bool gpu_allow_cpu_device = false;  // --gpu-allow-cpu-device
    bool verbose = false;               // set by the command's --verbose: the GPU placement in full
    void add_to(CLI::App& app, bool required = true);
    void add_budget_to(CLI::App& app);  // --mem-budget, --ple-resident
    void add_gpu_to(CLI::App& app);     // -ngl, -mg, --gpu-required (the commands that decode)
};

// Under --mem-budget: the expert cache's hits, misses and reads (per decoded token when
// n_tokens > 0) and the peak RSS against the budget, on stderr. Nothing without a budget.
void print_budget_report(const mw_expert_cache_stats& s, uint64_t n_tokens,
                         uint64_t peak_rss_bytes);
mw_expert_cache_stats expert_cache_stats(const mw_model* model);
// The counters of `later` minus those of `earlier` (the sizes as in `later`).
mw_expert_cache_stats expert_cache_delta(const mw_expert_cache_stats& later,
                                         const mw_expert_cache_stats& earlier);

// Under --mem-budget, for a dense model: the layer stream's slots, hits, reads (per decoded token
// when n_tokens > 0) and time waited, on stderr. Nothing without a stream.
void print_layer_stream_report(const mw_layer_stream_stats& s, uint64_t n_tokens);
mw_layer_stream_stats layer_stream_stats(const mw_model* model);
// Adds the counters of `later` minus those of `earlier` to `sum` (its sizes become `later`'s).
void add_layer_stream_use(mw_layer_stream_stats& sum, const mw_layer_stream_stats& later,
                          const mw_layer_stream_stats& earlier);

// Where the model's products run, for bench's rows: "CPU", or "Vulkan" with the layers offloaded
// ("Vulkan 99").
std::string backend_name(const mw_model* model, const ModelOptions& options);

// Loads the model (or fails with a clear message); prints the mlock warning if any.
ModelPtr load_model(const ModelOptions& options, bool vocab_only = false, bool quiet = false);
// A context longer than the model was trained on: a warning on stderr, as llama.cpp gives (its
// output may degrade past that). `per_sequence` is one sequence's (a server slot's) share.
void warn_context_beyond_training(int32_t n_ctx_train, uint32_t per_sequence, const char* command,
                                  uint32_t n_seq = 1);
// Creates a context or fails with the library's message.
ContextPtr create_context(mw_model* model, const mw_context_params& params);

// The prompt: -p TEXT or -f FILE (exactly one; -f - reads standard input).
struct PromptOptions {
    std::string text;
    std::string file;
    void add_to(CLI::App& app);
    std::string read() const;
};

// Sampling: --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n and, for the
// commands that sample locally, -s/--seed. `defaults` words the help for serve, whose values are
// the defaults of requests that do not set their own.
struct SamplingOptions {
    float temp = 0.8f;
    int top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float repeat_penalty = 1.0f;
    int repeat_last_n = 64;
    int64_t seed = -1;
    void add_to(CLI::App& app, bool with_seed, bool defaults = false);
    // The library's parameters; seed -1 becomes a random one.
    mw_sampler_params params() const;
};

// --cache-type-k / --cache-type-v (llama.cpp's -ctk / -ctv).
struct KvCacheOptions {
    std::string type_k = "f16", type_v = "f16";
    void add_to(CLI::App& app);
    // Sets the context's KV types, or fails naming the flag.
    void apply(mw_context_params& params) const;
};

// --chat-template (a built-in name or the text) and --chat-template-file.
struct ChatTemplateOptions {
    std::string text, file;
    std::string kwargs;         // --chat-template-kwargs: a JSON object's text
    int reasoning_budget = -1;  // --reasoning-budget: -1 unrestricted, 0 no thinking
    void add_to(CLI::App& app);
    // The template to use ("" = the model file's), or fails naming the file.
    std::string read() const;
    // The template variables of --chat-template-kwargs and --reasoning-budget 0 (which sets
    // enable_thinking false), as a JSON object's text; "" when none. Fails naming the flag.
    std::string variables() const;
};

// -t: a thread count, or "auto" (-1: measure a few counts on the model, keep the fastest); 0 or
// "" = the default. A count above this machine's hardware threads is capped with a warning.
int parse_threads(const std::string& text);
// The same cap for a count already parsed (options declared as int).
int cap_threads(int n);

// "512M", "1G", "4096": bytes (K, M, G, T binary); fails naming the flag otherwise.
uint64_t parse_bytes(const std::string& text, const char* flag);

// Help that shows -ctk/-ctv (llama.cpp's spellings, rewritten before parsing) as flags.
std::shared_ptr<CLI::Formatter> help_formatter();

// A KV cache type name (f32, f16, bf16, q8_0, q4_0) as used by llama.cpp's -ctk/-ctv.
mw_type parse_kv_type(const std::string& name, const char* flag);

// The conditions of a tok/s, as printed beside it ("pp512 d0 t2 kv f16 no sampler").
std::string speed_label(const mw_speed_conditions& conditions);

// --max-temp, --max-tps, --temp-zone: pacing, for run, chat and serve.
struct PacingOptions {
    double max_temp = 0;
    double max_tps = 0;
    std::string temp_zone;
    void add_to(CLI::App& app);
    bool enabled() const { return max_temp > 0 || max_tps > 0; }
};

// Paces a decode loop: after_token() once per decoded token; decisions are printed to stderr
// with verbose, warnings (no sensor, garbage in a sensor file) always. Does nothing when the
// options ask for no pacing.
class Pacing {
  public:
    Pacing(const PacingOptions& options, bool verbose);
    void after_token(mw_context* ctx);
    // The pacer's summary line on stderr (nothing when unpaced).
    void print_summary();
    bool enabled() const { return pacer_ != nullptr; }
    // For the library's own loops (mw_chat_params, mw_server_params); NULL when unpaced.
    mw_pacer* get() const { return pacer_.get(); }

  private:
    PacerPtr pacer_;
    bool verbose_;
};

// Writes the SVG chart of a JSON document (mw_chart_svg) to path, or fails naming the file.
void write_chart(const std::string& document_json, const std::string& path);

std::vector<mw_token> tokenize(const mw_model* model, const std::string& text, bool add_special,
                               bool parse_special);
std::string token_piece(const mw_model* model, mw_token token, bool special);

// Registration of each subcommand (one file each).
void add_run_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_quantize_command(CLI::App& app);  // and imatrix (cmd_quantize.cpp)
void add_imatrix_command(CLI::App& app);
void add_pull_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_plot_command(CLI::App& app);  // cmd_plot.cpp

// bench --duration: the sustained bench (cmd_bench_sustained.cpp). Its options are registered on
// bench's subcommand; run_sustained_bench() runs when --duration is given.
struct SustainedOptions {
    std::string duration;
    std::string interval = "5s";
    std::string plot;
    PacingOptions pacing;
    void add_to(CLI::App& bench);
    bool requested() const { return !duration.empty(); }
};
struct SustainedBench {
    ModelOptions model;
    int n_prompt = 0, n_gen = 0, n_depth = 0;
    int threads = 0;
    uint32_t n_batch = 0;
    mw_type type_k = MW_TYPE_F16, type_v = MW_TYPE_F16;
    bool csv = false, json = false;
};
void run_sustained_bench(const SustainedBench& bench, const SustainedOptions& options);
// bench's pseudo-random prompt ids (the ones bench/llamacpp-bench.mjs uses), cmd_bench.cpp.
std::vector<mw_token> bench_prompt_ids(int n, int32_t n_vocab);
void add_serve_command(CLI::App& app);  // cmd_serve.cpp
void add_chat_command(CLI::App& app);   // cmd_chat.cpp
void add_template_command(CLI::App& app);

// `memwall` without arguments: probe this machine, then plan the catalogue for it, offering each
// model in the best quality that decodes at `min_tps` or more (cmd_main.cpp).
inline constexpr double kDefaultMinTps = 10;
int run_main_job(double min_tps = kDefaultMinTps);
// `memwall -m FILE [run options]`: prints the file's plan for this machine and returns the
// arguments of the `run` that follows (cmd_main.cpp).
std::vector<std::string> plan_then_run_args(const std::vector<std::string>& args);

// Refuse or fit (cmd_plan.cpp): plans the model file against the memory available now, before
// anything is allocated. Fails with the numbers and the nearest configurations that fit unless
// `force` (then warns); warns when the fit is tight. Returns the plan.
// draft_path: a draft model for speculative decoding (up to draft_max tokens a pass), counted
// with the target.
// With speculating: the draft model's (draft_path) or, without one, the target's own share of
// speculation (a saved recurrent state and draft_max logits rows per sequence) count too; mtp:
// the file's own MTP head drafts (its memory counted in the target's).
mw_fit check_fit_or_fail(const std::string& path, const mw_context_params& params, bool force,
                         bool speculating = false, const std::string& draft_path = "",
                         int draft_max = 8, bool mtp = false);
// The memory of a run as the allocator and the OS report it, beside the plan's prediction.
void print_memory_report(const mw_perf& perf, const mw_fit& plan);

}  // namespace cli
