// The C API of speculative decoding (runtime/speculative.h).
#include <vector>

#include "api/api_error.h"
#include "api/api_model.h"
#include "api/api_params.h"
#include "api/api_speculative.h"
#include "base/error.h"
#include "memwall.h"
#include "runtime/mtp.h"

struct mw_speculator {
    std::unique_ptr<mw::Speculator> spec;
    std::vector<int32_t> out;
};

namespace mw {

Speculator* speculator_of(mw_speculator* s) {
    return s ? s->spec.get() : nullptr;
}

SpecParams spec_params_of(const mw_spec_params& p) {
    if (p.draft_max < 1) {
        fail(ErrorKind::invalid_argument,
             "speculative decoding: --draft-max {}: give 1 or more tokens to draft", p.draft_max);
    }
    if (p.draft_min < 0) {
        fail(ErrorKind::invalid_argument, "speculative decoding: --draft-min {}: below 0",
             p.draft_min);
    }
    SpecParams sp;
    sp.draft_max = uint32_t(p.draft_max);
    sp.draft_min = uint32_t(p.draft_min);
    return sp;
}

std::unique_ptr<Drafter> make_drafter(Context& t, Context* draft, const mw_spec_params& p,
                                      uint32_t seq, bool allow_oracle) {
    const int32_t n_vocab = int32_t(t.model().model.hp.n_vocab);
    switch (p.type) {
        case MW_SPEC_DRAFT:
            if (!draft) {
                fail(ErrorKind::invalid_argument,
                     "speculative decoding with a draft model: no draft context given");
            }
            if (!(p.draft_p_min >= 0.0f && p.draft_p_min <= 1.0f)) {
                fail(ErrorKind::invalid_argument, "--draft-p-min {}: expected 0..1", p.draft_p_min);
            }
            return make_model_drafter(*draft, p.draft_p_min, seq);
        case MW_SPEC_MTP:
            return make_batch_member_drafter(std::make_shared<MtpDrafter>(t, p.draft_p_min), seq);
        case MW_SPEC_NGRAM:
            if (p.ngram_size_n < 1 || p.ngram_size_m < 1) {
                fail(ErrorKind::invalid_argument,
                     "n-gram drafts: sizes n = {}, m = {}: both must be 1 or more", p.ngram_size_n,
                     p.ngram_size_m);
            }
            return make_ngram_drafter(uint32_t(p.ngram_size_n), uint32_t(p.ngram_size_m));
        case MW_SPEC_ORACLE:
            if (!allow_oracle) {
                fail(ErrorKind::invalid_argument,
                     "speculative decoding: the oracle is a measurement device for bench, not "
                     "for serving (it knows one text in advance)");
            }
            if (p.n_oracle_tokens < 0 || (p.n_oracle_tokens > 0 && !p.oracle_tokens)) {
                fail(ErrorKind::invalid_argument, "oracle drafts: no reference tokens");
            }
            return make_oracle_drafter(
                std::vector<int32_t>(p.oracle_tokens, p.oracle_tokens + p.n_oracle_tokens),
                p.oracle_p, p.seed, n_vocab);
        default:
            fail(ErrorKind::invalid_argument, "speculative decoding: unknown type {}", int(p.type));
    }
}

std::unique_ptr<Speculator> make_speculator(Context& t, Context* draft, const mw_spec_params& p) {
    const SpecParams sp = spec_params_of(p);
    if (p.type == MW_SPEC_DRAFT && draft) check_draft_pairs(t.model(), draft->model());
    return std::make_unique<Speculator>(t, 0, make_drafter(t, draft, p, 0, true), sp);
}

}  // namespace mw

extern "C" {

void mw_spec_params_init(mw_spec_params* out, size_t struct_size) {
    mw_spec_params p{};
    p.type = MW_SPEC_NGRAM;
    p.draft_max = 8;
    p.draft_min = 0;
    p.draft_p_min = 0.0f;
    p.ngram_size_n = 3;
    p.ngram_size_m = 16;
    p.oracle_p = 0.0f;
    p.oracle_tokens = nullptr;
    p.n_oracle_tokens = 0;
    p.seed = 0;
    mw::init_params(out, struct_size, p);
}

mw_status mw_speculator_create(mw_context* target, mw_context* draft, const mw_spec_params* params,
                               mw_speculator** out) {
    if (out) *out = nullptr;
    return mw::guarded([&] {
        mw::Context* t = mw::context_of(target);
        if (!t || !out) {
            mw::fail(mw::ErrorKind::invalid_argument, "mw_speculator_create: NULL argument");
        }
        mw_spec_params p;
        if (!mw::read_params(params, mw_spec_default_params(), &p, "mw_spec_params")) {
            mw::fail(mw::ErrorKind::invalid_argument, "{}", mw_last_error());
        }
        auto s = std::make_unique<mw_speculator>();
        s->spec = mw::make_speculator(*t, mw::context_of(draft), p);
        *out = s.release();
    });
}

void mw_speculator_free(mw_speculator* spec) {
    delete spec;
}

mw_status mw_speculator_step(mw_speculator* spec, mw_sampler* sampler, mw_token pending,
                             int32_t n_max, mw_token* out, int32_t* n_out) {
    using mw::ErrorKind;
    using mw::fail;
    if (n_out) *n_out = 0;
    return mw::guarded([&] {
        mw::Sampler* s = mw::sampler_of(sampler);
        if (!spec || !s || !out || !n_out) {
            fail(ErrorKind::invalid_argument, "mw_speculator_step: NULL argument");
        }
        if (n_max < 1) fail(ErrorKind::invalid_argument, "mw_speculator_step: n_max {}", n_max);
        spec->out.clear();
        spec->spec->step(pending, *s, uint32_t(n_max), spec->out);
        std::copy(spec->out.begin(), spec->out.end(), out);
        *n_out = int32_t(spec->out.size());
    });
}

mw_spec_stats mw_speculator_stats(const mw_speculator* spec) {
    mw_spec_stats r{};
    if (!spec) return r;
    const mw::SpecStats& s = spec->spec->stats();
    r.n_passes = s.passes;
    r.n_plain_steps = s.plain_steps;
    r.n_drafted = s.drafted;
    r.n_accepted = s.accepted;
    r.n_generated = s.generated;
    r.draft_ms = s.draft_ms;
    r.verify_ms = s.verify_ms;
    return r;
}

double mw_spec_expected_tokens(double p, int32_t k) {
    return k < 0 ? 1.0 : mw::expected_tokens_per_pass(p, uint32_t(k));
}

}  // extern "C"
