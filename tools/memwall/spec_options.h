// Speculative decoding's flags (llama.cpp's names) for run, chat and bench, and the speculator
// they make: the draft model and its context, or n-gram lookup.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common.h"

namespace cli {

struct SpeculatorDeleter {
    void operator()(mw_speculator* s) const { mw_speculator_free(s); }
};
using SpeculatorPtr = std::unique_ptr<mw_speculator, SpeculatorDeleter>;

struct SpecOptions {
    std::string draft_model;  // -md FILE
    std::string type;         // --spec-type: draft (with -md), ngram, mtp, none
    int draft_max = 8;
    int draft_min = 0;
    float p_min = 0.0f;
    int ngram_n = 3;
    int ngram_m = 16;
    void add_to(CLI::App& app);
    bool enabled() const { return type != "none" && (!type.empty() || !draft_model.empty()); }
    // The draft model the memory plan counts with the target ("" without one).
    std::string plan_draft() const {
        return enabled() && (type.empty() || type == "draft") ? draft_model : "";
    }
    // Whether the plan counts the file's own MTP head.
    bool plan_mtp() const { return enabled() && type == "mtp"; }
};

// The parameters the flags give, and the draft model loaded (for mw_chat_params).
struct SpecSetup {
    bool on = false;
    mw_spec_params params{};
    ModelPtr draft_model;
    std::string label;
};
SpecSetup prepare_speculation(const SpecOptions& options, const ModelOptions& target_options);
// Fails (usage) for bad draft lengths, and for --spec-type mtp on a file without MTP layers
// (reading only the target's header); prepare_speculation calls it, and run, chat and serve
// before the memory check.
void refuse_unsupported_spec(const SpecOptions& options, const ModelOptions& target_options);

// What a speculator needs alive: the draft model and its context (declared first: the
// speculator goes first).
struct Speculation {
    ModelPtr draft_model;
    ContextPtr draft_ctx;
    SpeculatorPtr spec;
    std::string label;  // "draft model FILE, up to 8 tokens", for the reports
    mw_speculator* get() const { return spec.get(); }
};

// Null (spec unset) when speculation is off; fails with a clear message for bad flags or a
// draft that cannot pair with the target. The draft's context takes the target's size, batch
// and threads.
Speculation start_speculation(const SpecOptions& options, const ModelOptions& target_options,
                              mw_context* target, const mw_context_params& params);

// "speculative: 40 passes, 230 drafted, 170 accepted (73.9 %), 5.25 tokens per pass, ..." on
// stderr.
void print_spec_report(const Speculation& s);
void print_spec_report(const mw_spec_stats& stats, const std::string& label);

// bench --draft-oracle P[,P...] [--draft-max K[,K...]]: the speed-up against acceptance
// (cmd_bench_spec.cpp).
struct SpecBench {
    ModelOptions model;
    int n_prompt = 32, n_gen = 128, threads = 0, reps = 3;
    std::string oracle;           // probabilities
    std::string spec_type;        // mtp or ngram: a real drafter instead of the oracle
    std::string draft_max = "4";  // draft lengths
    bool csv = false;
};
void run_spec_bench(const SpecBench& bench);

}  // namespace cli
