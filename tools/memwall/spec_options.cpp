#include "spec_options.h"

#include <fmt/format.h>

#include <map>
#include <string>

namespace cli {

void SpecOptions::add_to(CLI::App& app) {
    app.add_option("--model-draft,--spec-draft-model", draft_model,
                   "Draft model for speculative decoding (-md; the target's vocabulary)");
    app.add_option("--spec-type", type,
                   "Speculative decoding: draft (a draft model, -md), ngram (n-gram lookup in "
                   "the prompt and the text so far), mtp (the model's own MTP head: Qwen3.5 "
                   "files with nextn layers), none (default: draft with -md, else none)")
        // llama.cpp v0.5.0 names them draft-simple, ngram-simple and draft-mtp: the same runs.
        ->transform(CLI::CheckedTransformer(
            std::map<std::string, std::string>{{"draft", "draft"},
                                               {"draft-simple", "draft"},
                                               {"ngram", "ngram"},
                                               {"ngram-simple", "ngram-simple"},
                                               {"mtp", "mtp"},
                                               {"draft-mtp", "mtp"},
                                               {"none", "none"}}));
    app.add_option("--draft-max,--spec-draft-n-max", draft_max,
                   "Tokens drafted per verification pass at most")
        ->capture_default_str();
    app.add_option("--draft-min,--spec-draft-n-min", draft_min,
                   "Fewer tokens drafted: decode without them")
        ->capture_default_str();
    app.add_option("--draft-p-min,--spec-draft-p-min", p_min,
                   "Draft model: stop drafting when its top token's probability is below this")
        ->capture_default_str();
    app.add_option("--spec-ngram-size-n,--spec-ngram-simple-size-n", ngram_n,
                   "N-gram drafts: tokens matched at the end of the text")
        ->capture_default_str();
    app.add_option("--spec-ngram-size-m,--spec-ngram-simple-size-m", ngram_m,
                   "N-gram drafts: tokens proposed after a match at most")
        ->capture_default_str();
}

void refuse_unsupported_spec(const SpecOptions& o, const ModelOptions& target_options) {
    if (!o.enabled()) return;
    if (o.draft_max < 1) {
        fail_usage(fmt::format(
            "--draft-max {}: give 1 or more tokens to draft (or --spec-type none)", o.draft_max));
    }
    if (o.draft_min < 0 || o.draft_min > o.draft_max) {
        fail_usage(
            fmt::format("--draft-min {}: expected 0..--draft-max ({})", o.draft_min, o.draft_max));
    }
    if (o.type != "mtp") return;
    if (!o.draft_model.empty()) fail_usage("-md is for --spec-type draft, not mtp");
    // The head is the target's own: a file without one is refused before the memory check.
    const ModelPtr header = load_model(target_options, true, true);
    char arch[64] = "", n[32] = "";
    if (mw_model_meta(header.get(), "general.architecture", arch, sizeof arch) <= 0 ||
        mw_model_meta(header.get(), fmt::format("{}.nextn_predict_layers", arch).c_str(), n,
                      sizeof n) <= 0 ||
        std::string(n) == "0") {
        fail_usage(fmt::format(
            "--spec-type mtp: {} has no MTP layers ({}.nextn_predict_layers is absent or 0): MTP "
            "drafting needs a Qwen3.5 file converted with its nextn layers; use -md DRAFT.gguf "
            "or --spec-type ngram",
            target_options.path, arch[0] ? arch : "<arch>"));
    }
}

SpecSetup prepare_speculation(const SpecOptions& o, const ModelOptions& target_options) {
    SpecSetup s;
    if (!o.enabled()) return s;
    refuse_unsupported_spec(o, target_options);
    s.on = true;
    mw_spec_params& p = s.params;
    p = mw_spec_default_params();
    p.draft_max = o.draft_max;
    p.draft_min = o.draft_min;
    p.draft_p_min = o.p_min;
    p.ngram_size_n = o.ngram_n;
    p.ngram_size_m = o.ngram_m;
    const bool draft = o.type == "draft" || (o.type.empty() && !o.draft_model.empty());
    if (draft) {
        if (o.draft_model.empty()) fail_usage("--spec-type draft needs a draft model: -md FILE");
        p.type = MW_SPEC_DRAFT;
        ModelOptions d;
        d.path = o.draft_model;
        d.mlock = target_options.mlock;
        d.no_mmap = target_options.no_mmap;
        d.no_repack = target_options.no_repack;
        s.draft_model = load_model(d, false, true);
        s.label = fmt::format("draft model {} ({}), up to {} tokens", o.draft_model,
                              mw_model_desc(s.draft_model.get()), o.draft_max);
    } else if (o.type == "mtp") {
        p.type = MW_SPEC_MTP;
        if (!(o.p_min >= 0.0f && o.p_min <= 1.0f)) {
            fail_usage(fmt::format("--draft-p-min {}: expected 0..1", o.p_min));
        }
        s.label = fmt::format("MTP head of {}, up to {} tokens", target_options.path, o.draft_max);
    } else {
        if (!o.draft_model.empty()) {
            fail_usage(fmt::format("-md is for --spec-type draft, not {}", o.type));
        }
        p.type = MW_SPEC_NGRAM;
        s.label = fmt::format("n-gram lookup (n = {}, m = {}), up to {} tokens", o.ngram_n,
                              o.ngram_m, o.draft_max);
    }
    return s;
}

Speculation start_speculation(const SpecOptions& o, const ModelOptions& target_options,
                              mw_context* target, const mw_context_params& params) {
    Speculation s;
    SpecSetup setup = prepare_speculation(o, target_options);
    if (!setup.on) return s;
    s.draft_model = std::move(setup.draft_model);
    s.label = setup.label;
    if (s.draft_model) {
        mw_context_params dp = params;
        dp.n_ctx = mw_context_n_ctx(target);
        dp.n_seq_max = 1;
        s.draft_ctx = create_context(s.draft_model.get(), dp);
    }
    mw_speculator* spec = nullptr;
    if (mw_status st = mw_speculator_create(target, s.draft_ctx.get(), &setup.params, &spec);
        st != MW_OK) {
        fail_status(st, "speculative decoding");
    }
    s.spec.reset(spec);
    return s;
}

void print_spec_report(const Speculation& s) {
    if (s.get()) print_spec_report(mw_speculator_stats(s.get()), s.label);
}

void print_spec_report(const mw_spec_stats& st, const std::string& label) {
    const int64_t steps = st.n_passes + st.n_plain_steps;
    fmt::print(stderr,
               "speculative: {}; {} verification passes + {} plain steps, {} drafted, {} "
               "accepted ({:.1f} %), {:.2f} tokens per step; drafting {:.1f} ms, verifying "
               "{:.1f} ms\n",
               label, st.n_passes, st.n_plain_steps, st.n_drafted, st.n_accepted,
               st.n_drafted ? 100.0 * double(st.n_accepted) / double(st.n_drafted) : 0.0,
               steps ? double(st.n_generated) / double(steps) : 0.0, st.draft_ms, st.verify_ms);
}

}  // namespace cli
