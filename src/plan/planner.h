// The memory planner: what running a model will need (weights, KV cache, compute buffers,
// overhead) and how fast it will decode, for any model (a GGUF file, only its header read; a
// config.json; the catalogue), any quantization and any device; and the refuse-or-fit check
// `memwall run` makes before it allocates.
//
// The figures are the runtime's own: KvCache::bytes_needed and ForwardScratch::planned_bytes on a
// model bound from the header, so a plan and a run cannot disagree about what is allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "model/model.h"
#include "plan/budget_plan.h"
#include "plan/devices.h"
#include "plan/quant_mix.h"

namespace mw {

// One model in one quantization, as far as memory and speed are concerned.
struct ModelFacts {
    std::string name;
    std::string arch;
    std::string quant;  // "Q4_K_M", or the file's type mix when it has no known file type
    HParams hp;
    uint64_t n_params = 0;
    uint64_t weights_bytes = 0;         // tensor data, exact per tensor
    uint64_t header_bytes = 0;          // metadata and tensor infos (estimated without a vocab)
    uint64_t file_bytes = 0;            // header + the data section, alignment padding included
    uint64_t decoded_vector_bytes = 0;  // 1-D tensors the model keeps decoded as floats
    uint64_t n_merges = 0;              // BPE merges of the vocabulary
    uint64_t bytes_per_token = 0;       // weight bytes read per decoded token (MoE: used experts)
    uint64_t flops_per_token = 0;       // matrix FLOPs per prompt token
    bool runnable = false;              // memwall can run it: architecture and tensor types
    std::string note;                   // why not, when it cannot
    Model model;  // bound from the header (or, when it cannot run, an approximation with the
                  // same buffer shapes) for ForwardScratch::planned_bytes
};

// `file` needs only its header (parsed with header_only); tensor data is never read.
ModelFacts model_facts(const gguf::GgufFile& file, const std::string& quant_label);

// The runtime settings that change memory, resolved as the runtime resolves them.
struct RunSettings {
    uint32_t n_ctx = 0;  // 0: min(training context, 4096)
    uint32_t n_batch = 512;
    int n_threads = 0;  // 0: default_thread_count()
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    uint32_t n_seq = 1;  // sequences in the context (server slots): they share n_ctx positions
    // Gemma 4's per-layer embedding table kept in memory (--ple-resident) instead of on storage.
    bool ple_resident = false;
    // Speculative decoding: each sequence keeps one saved recurrent state (Context::seq_mark).
    bool speculative = false;
    // Speculation without a draft model (n-gram lookup): the target marks like `speculative` and
    // keeps a row of logits for each of up to draft_max drafted tokens, in every sequence.
    bool self_drafting = false;
    // A draft model in the same process (-md): its weights, and a context of its own with the
    // target's resolved n_ctx, batch, threads, KV type and sequences (one per server slot).
    std::shared_ptr<const ModelFacts> draft;
    std::string draft_name;  // its file, for the messages
    // With a draft: tokens drafted per pass at most; a verification pass keeps a row of logits
    // for each of them, in every sequence.
    uint32_t draft_max = 8;
    // --spec-type mtp: the file's own MTP head drafts up to draft_max tokens a pass: its KV cache
    // (one attention layer), its scratch and the target's hidden states count too.
    bool mtp = false;
    // A second model in the process (the draft): the process's own bytes are the first one's.
    bool shares_process = false;
};

struct MemoryPlan {
    uint32_t n_ctx = 0;
    uint64_t weights_bytes = 0;  // all of it becomes resident as decoding reads every weight
    uint64_t kv_bytes = 0;       // the KV cache at full context (attention layers only)
    // Recurrent layers (qwen35's DeltaNet): each sequence's state, constant in the context, and
    // its checkpoints (RecurrentState::kDefaultCheckpoints per sequence).
    uint64_t state_bytes = 0;
    uint64_t compute_bytes = 0;   // forward scratch + one row of logits
    uint64_t overhead_bytes = 0;  // process, file header, vocabulary, decoded norms, threads
    // RunSettings::draft: the draft model's own plan (its total is in this one's).
    std::shared_ptr<const MemoryPlan> draft;
    uint64_t own_bytes() const {
        return weights_bytes + kv_bytes + state_bytes + compute_bytes + overhead_bytes;
    }
    uint64_t total_bytes() const { return own_bytes() + (draft ? draft->total_bytes() : 0); }
};
// The process's own bytes (code, libraries, allocator) in a plan's overhead: counted once for
// a target and its draft model.
constexpr uint64_t kPlanProcessBytes = (uint64_t(21) << 19);  // 10.5 MiB
MemoryPlan plan_memory(const ModelFacts& facts, const RunSettings& run);
// Reads the draft model's header (a path or a URL) into run.draft.
void set_draft_model(RunSettings& run, const std::string& draft_path);

enum class Fit { yes, tight, no };
const char* fit_name(Fit fit);  // "yes", "tight", "no"
// yes: at most 90 % of the usable memory; tight: at most all of it.
Fit judge_fit(uint64_t total_bytes, uint64_t usable_bytes);

struct SpeedEstimate {
    uint64_t decode_bytes_per_token = 0;       // weights read per token, empty cache
    double decode_tok_s_ceiling = 0;           // bandwidth / bytes per token
    double decode_tok_s_expected = 0;          // x the device's decode efficiency
    double decode_tok_s_ceiling_full_ctx = 0;  // also reading the whole KV cache
    double prefill_tok_s_expected = 0;         // a prompt of min(ctx, 512) tokens
};
SpeedEstimate estimate_speed(const ModelFacts& facts, const MemoryPlan& memory,
                             const DeviceProfile& device);

// ---- Plans over models x devices x quantizations --------------------------------------------

struct ModelSource {
    enum class Kind { file, url, hf_config, catalogue };
    Kind kind;
    std::string value;  // path, URL (http, https, hf://), or catalogue name
};

// A model planned from a server: its header read with range requests, nothing else.
struct RemoteSource {
    std::string url;           // fetched (an hf:// name mapped to its resolve URL)
    std::string resolved_url;  // after redirects
    uint64_t file_bytes = 0;   // the whole file, as the server says
    uint64_t bytes_read = 0;   // to read the header, in all requests
    int requests = 0;
    std::string etag;
    std::string sha256;  // from the server's ETag or X-Linked-Etag, when it is one
};

struct PlanRequest {
    std::vector<ModelSource> models;     // empty: the seeds' models
    std::vector<DeviceProfile> devices;  // empty: the seeds' phones
    std::vector<QuantRecipe> quants;     // empty: default_plan_quants()
    RunSettings run{.n_ctx = 4096};
    bool best_only = false;  // rows: only each model's recommendation per device
    // Recommend the best quality that decodes at least this fast (tok/s expected), else the
    // fastest that fits; 0: the best quality that fits, however slow.
    double min_tps = 0;
    // Rows under memory budgets (plan/budget_plan.h), per model and device, in the model's own
    // (file) or Q4_K_M quantization: fractions of the file, and sizes in bytes.
    std::vector<double> budget_fractions;
    std::vector<uint64_t> mem_budgets;
};

const std::vector<QuantRecipe>& default_plan_quants();

struct PlanRow {
    std::string model;
    std::string device;
    std::string quant;
    bool file_type = false;  // the GGUF file's own quantization
    std::string kv_type;
    MemoryPlan memory;
    uint64_t ram_bytes = 0;
    uint64_t os_reserve_bytes = 0;
    uint64_t usable_bytes = 0;
    Fit fit = Fit::no;
    SpeedEstimate speed;
    bool runnable = false;
    std::string note;
};

struct Recommendation {
    std::string model;
    std::string device;
    bool found = false;
    PlanRow row;         // the recommended configuration (when found)
    std::string advice;  // one sentence: what and why, or what is missing
    // When it does not fit in RAM (or streaming is faster than what fits): how it runs with
    // --mem-budget at the device's own free memory, experts or layers read from storage.
    std::optional<StreamPlan> streamed;
};

struct PlannedModel {
    std::string name;
    std::string source;                  // "gguf", "url", "hf_config", "catalogue"
    std::string origin;                  // path, URL or catalogue id
    std::optional<RemoteSource> remote;  // for a URL
    ModelFacts facts;                    // of its own type (file) or of Q4_K_M
    uint64_t kv_bytes_per_token = 0;     // at the requested KV type
};

struct PlanResult {
    RunSettings run;
    double min_tps = 0;  // as asked
    std::vector<PlannedModel> models;
    std::vector<DeviceProfile> devices;
    std::vector<PlanRow> rows;
    std::vector<Recommendation> recommendations;
    std::vector<BudgetRow> budget_rows;
};

PlanResult make_plan(const PlanRequest& request);

// ---- Refuse or fit ------------------------------------------------------------------------

struct FitCheck {
    Fit fit = Fit::no;
    MemoryPlan memory;
    uint64_t available_bytes = 0;
    std::string
        message;  // the numbers, and when it does not fit the nearest configurations that do
};
// Plans the file (header only; a path or a URL) with these settings against the memory
// available now. When it does not fit, the message ends by pointing at --force.
FitCheck check_fit(const std::string& path, const RunSettings& run);
// With a draft model (speculative decoding, -md) drafting up to draft_max tokens a pass: its
// weights and context (RunSettings::draft) count too, and the message names both files and sizes.
// An empty draft_path: speculation without a draft model (RunSettings::self_drafting).
FitCheck check_fit(const std::string& path, const std::string& draft_path, uint32_t draft_max,
                   RunSettings run);
// The same for a parsed header (named by header.name()), without the --force line.
FitCheck check_fit(const gguf::GgufFile& header, const RunSettings& run);

// "f16", "q8_0": the KV cache type names the CLI uses.
std::optional<GgmlType> kv_type_from_name(const std::string& name);
std::string kv_type_name(GgmlType type);

}  // namespace mw
